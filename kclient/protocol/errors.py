"""Kafka's error codes as exceptions, plus the protocol layer's own decode errors.

Sans-IO and dependency-free (imports nothing of kclient) so the client, the mini-broker and the
record readers can all raise and catch the same classes.  Every broker error code from Kafka's
``Errors`` table (``-1 .. 128``) has one ``BrokerResponseError`` subclass carrying ``errno``,
``message`` (Kafka's name, e.g. ``"OFFSET_OUT_OF_RANGE"``), ``description`` (Kafka's text, also the
class docstring), ``retriable`` and ``invalid_metadata`` (the client should refresh metadata).

Names follow the 0.8 client where it had one (``NotLeaderForPartitionError`` for code 6, whose
modern Kafka name is ``NOT_LEADER_OR_FOLLOWER``; ``MessageSizeTooLargeError`` for code 10); the
other 0.8-era names (``ConsumerCoordinatorNotAvailableError``, ...) are aliases.

An instance's ``str`` reads ``"OFFSET_OUT_OF_RANGE (error 1) for events-0: <description>"``: the
``context`` argument says what the error was about (a topic-partition, a group, a request).
"""

from __future__ import annotations

from . import error_codes
from .error_base import (
    BrokerResponseError,
    KafkaError,
    ProtocolDecodeError,
    UnrecognizedBrokerError,
    UnsupportedCodecError,
    all_error_classes,
    code_for_exception,
    error_for_code,
    raise_for_code,
)
from .error_codes import *  # noqa: F401,F403  (one class per Kafka error code)

__all__ = [
    "KafkaError",
    "ProtocolDecodeError",
    "UnsupportedCodecError",
    "BrokerResponseError",
    "UnrecognizedBrokerError",
    "error_for_code",
    "raise_for_code",
    "code_for_exception",
    "all_error_classes",
]
__all__ += error_codes.__all__  # the static list of one class per Kafka code (and aliases)
