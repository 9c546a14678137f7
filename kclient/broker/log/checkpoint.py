"""Kafka's offset checkpoint files in a log directory (``OffsetCheckpointFile``).

``recovery-point-offset-checkpoint`` says, per partition, up to which offset the log is known to
be on disk (an unclean shutdown recovers from there); ``cleaner-offset-checkpoint`` where each
compacted log's dirty part begins.  Format: a version line ``0``, a count line, then one
``topic partition offset`` line per partition; written to a temp file, fsynced, renamed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

log = logging.getLogger(__name__)

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
VERSION = 0


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """``(topic, partition) -> offset`` from ``path``; empty if missing, logged if damaged."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        log.error("cannot read checkpoint file %s: %s; treating it as empty", path, exc)
        return {}
    try:
        return _parse(text)
    except (ValueError, IndexError) as exc:
        log.error("malformed checkpoint file %s: %s; treating it as empty", path, exc)
        return {}


def _parse(text: str) -> dict[tuple[str, int], int]:
    """The entries of a checkpoint file's text; ValueError names what is wrong."""
    lines = text.splitlines()
    if len(lines) < 2:
        raise ValueError("no version and count lines")
    if lines[0].strip() != str(VERSION):
        raise ValueError(f"unknown version {lines[0]!r}")
    count, entries = int(lines[1]), lines[2:]
    if len(entries) != count:
        raise ValueError(f"{len(entries)} entries, the header says {count}")
    offsets = {}
    for number, line in enumerate(entries, 3):
        fields = line.rsplit(" ", 2)
        if len(fields) != 3:
            raise ValueError(f"line {number} {line!r} is not 'topic partition offset'")
        offsets[(fields[0], int(fields[1]))] = int(fields[2])
    return offsets


def write_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    """Replace ``path`` atomically with ``offsets`` in Kafka's format."""
    path = Path(path)
    lines = [str(VERSION), str(len(offsets))]
    lines += [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


__all__ = ["CLEANER_CHECKPOINT", "RECOVERY_POINT_CHECKPOINT", "read_checkpoint", "write_checkpoint"]
