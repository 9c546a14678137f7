"""Topic ids (KIP-516): each topic's 16-byte id, kept in its partitions' ``partition.metadata``.

Kafka writes ``version: 0`` and ``topic_id: <base64>`` into every partition directory; the
mini-broker does the same, so a restarted broker answers the ids it answered before (Metadata
v10+, and the share-group APIs, which name topics by id only).  A partition directory written
before ids were kept gets one on load.
"""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path

__all__ = ["PARTITION_METADATA", "ZERO_ID", "new_topic_id", "read_topic_id", "write_topic_id"]

PARTITION_METADATA = "partition.metadata"
ZERO_ID = bytes(16)


def new_topic_id() -> bytes:
    """A random id that is not the zero id (Kafka reserves it for "no id")."""
    while True:
        topic_id = uuid.uuid4().bytes
        if topic_id != ZERO_ID:
            return topic_id


def _encode(topic_id: bytes) -> str:
    return base64.urlsafe_b64encode(topic_id).decode("ascii").rstrip("=")


def read_topic_id(partition_dir: Path) -> bytes | None:
    """The id stored in a partition directory, or None (absent or unreadable)."""
    try:
        lines = (Path(partition_dir) / PARTITION_METADATA).read_text("ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        name, _, value = line.partition(":")
        if name.strip() == "topic_id":
            text = value.strip()
            try:
                topic_id = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            except ValueError:
                return None
            return topic_id if len(topic_id) == 16 else None
    return None


def write_topic_id(partition_dir: Path, topic_id: bytes) -> None:
    """Store ``topic_id`` in a partition directory (written whole, then renamed)."""
    path = Path(partition_dir) / PARTITION_METADATA
    tmp = path.with_name(PARTITION_METADATA + ".tmp")
    tmp.write_text(f"version: 0\ntopic_id: {_encode(topic_id)}\n", "ascii")
    os.replace(tmp, path)
