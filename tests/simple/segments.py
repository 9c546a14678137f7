"""Corrupting a mini-broker's segment file on disk, for the tests that check a reader's CRCs
(the broker serves segment bytes as they are, as Kafka does)."""

from pathlib import Path


def segment(mini, topic: str) -> Path:
    """The first segment file of ``topic``'s partition 0 on the mini-broker target ``mini``."""
    files = sorted((mini.broker.log_dir / f"{topic}-0").glob("*.log"))
    assert files and files[0].name == "0" * 20 + ".log"
    return files[0]


def flip(path: Path, position: int) -> None:
    """Flip bits of the byte at ``position`` of the file ``path``."""
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0x5A]))
