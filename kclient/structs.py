"""Plain data classes shared by the admin client and the consumers (one definition each)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["TopicPartition", "OffsetAndMetadata", "ConsumerRecord"]


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


class ConsumerRecord(NamedTuple):
    """One consumed record, as kafka-python's ConsumerRecord (kclient.Consumer, AIOConsumer)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    headers: list[tuple[str, bytes | None]]
