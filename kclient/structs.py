"""Plain data classes shared by the admin client and the consumer (one definition each)."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TopicPartition", "OffsetAndMetadata"]


@dataclass(frozen=True, order=True)
class TopicPartition:
    """A partition of a topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed offset (the next offset to consume) and its metadata string."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1
