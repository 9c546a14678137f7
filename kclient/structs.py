"""Plain data classes shared by the admin client and the consumers (one definition each)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, NamedTuple

__all__ = [
    "TopicPartition",
    "OffsetAndMetadata",
    "ConsumerRecord",
    "AcknowledgeType",
    "ShareConsumerRecord",
]


class TopicPartition(NamedTuple):
    """A partition of a topic: a named ``(topic, partition)`` tuple, as kafka-python's (equal
    to and hashed as the plain tuple; a consumer looks one up in a dict many times a poll,
    and a tuple's hash is computed in C where a dataclass's ran Python code each time)."""

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


class AcknowledgeType(IntEnum):
    """How a share consumer settles a delivered record (KIP-932; RENEW: KIP-1222), with
    Kafka's wire values: ACCEPT done, RELEASE for another try, REJECT never again, RENEW keep
    the lock longer."""

    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class ShareConsumerRecord(NamedTuple):
    """One record a share consumer delivered: a ConsumerRecord's fields and how many times it
    has been delivered (1 the first time)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    headers: list[tuple[str, bytes | None]]
    delivery_count: int
