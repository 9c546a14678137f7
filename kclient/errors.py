"""Every error kclient raises: the broker's error codes and the client's own failures.

Re-exports all of :mod:`kclient.protocol.errors` (``KafkaError``, ``BrokerResponseError`` and one
class per Kafka error code) and adds the client-side errors, all under the same ``KafkaError`` so
``except KafkaError`` catches anything kclient raises.  ``retriable`` is set on the ones a retry
may cure (connection and timeout errors) so retry policies can use one test for both kinds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kclient.protocol import errors as _protocol_errors
from kclient.protocol.errors import *  # noqa: F401,F403  (the re-export is the point)
from kclient.protocol.errors import BrokerResponseError, KafkaError

if TYPE_CHECKING:  # mypy does not follow protocol.errors' ``__all__ += error_codes.__all__``
    from kclient.protocol.error_codes import *  # noqa: F401,F403

_MAX_LISTED = 10

__all__ = list(_protocol_errors.__all__) + [
    "KafkaConnectionError",
    "KafkaTimeoutError",
    "NoBrokersAvailableError",
    "BrokersUnreachableError",
    "ZooKeeperError",
    "InvalidConfigError",
    "FailedToSendMessageError",
    "QueueFullError",
    "ConsumerTimeoutError",
    "ConsumerRebalanceFailedError",
    "NoOffsetForPartitionError",
    "IllegalStateError",
    "WakeupError",
    "AuthenticationError",
    "SslAuthenticationError",
    "SaslAuthenticationError",
    "SecurityProtocolError",
]


class KafkaConnectionError(KafkaError):
    """A broker (or ZooKeeper) connection could not be made or broke."""

    retriable = True

    def __init__(
        self, host: str, port: int, reason: str = "", *, closed_by_peer: bool = False
    ) -> None:
        """Keep where we tried to connect and why it failed (``closed_by_peer``: the other
        side closed the connection, rather than answering garbage or not at all)."""
        super().__init__(host, port, reason)
        self.host, self.port, self.reason = host, port, reason
        self.closed_by_peer = closed_by_peer

    def __str__(self) -> str:
        """``connection to host:port failed: reason``."""
        tail = f": {self.reason}" if self.reason else ""
        return f"connection to {self.host}:{self.port} failed{tail}"


class SecurityProtocolError(KafkaConnectionError):
    """Client and listener disagree on the transport: plaintext against TLS or the reverse, or
    SASL where the listener has none; retrying cannot help, the config must change."""

    retriable = False


class AuthenticationError(KafkaConnectionError):
    """The broker did not accept who we are (Java's ``AuthenticationException``); not
    retriable: the same credentials fail again."""

    retriable = False


class SslAuthenticationError(AuthenticationError):
    """The TLS handshake failed: a certificate that does not verify (expired, unknown CA,
    wrong host name) or a client certificate the broker refused; ``reason`` says which."""


class SaslAuthenticationError(AuthenticationError):
    """SASL authentication failed; ``mechanism`` names the SASL mechanism tried."""

    def __init__(self, host: str, port: int, reason: str = "", *, mechanism: str = "") -> None:
        """Keep the broker, the mechanism and the broker's (or our) reason."""
        super().__init__(host, port, reason)
        self.mechanism = mechanism

    def __str__(self) -> str:
        """``SASL <mechanism> authentication with host:port failed: reason``."""
        tail = f": {self.reason}" if self.reason else ""
        return f"SASL {self.mechanism} authentication with {self.host}:{self.port} failed{tail}"


class KafkaTimeoutError(KafkaError, TimeoutError):
    """An operation did not finish in its configured time (also a builtin ``TimeoutError``)."""

    retriable = True


class NoBrokersAvailableError(KafkaError):
    """None of the bootstrap brokers (or registered brokers) could be reached."""

    retriable = True

    def __init__(self, message: str = "", brokers: Iterable[Any] = ()) -> None:
        """Keep the brokers that were tried, so the message can name them."""
        super().__init__(message)
        self.brokers = tuple(brokers)

    def __str__(self) -> str:
        """The message, then the brokers tried."""
        text = str(self.args[0]) if self.args and self.args[0] else "no brokers available"
        if self.brokers:
            text += " (tried " + ", ".join(_broker_name(b) for b in self.brokers) + ")"
        return text


class BrokersUnreachableError(NoBrokersAvailableError, KafkaConnectionError):
    """No broker could be reached for a client's whole timeout: raised to the caller (a consumer's
    poll) instead of empty answers for ever.  Both a NoBrokersAvailableError (``brokers``: what
    was tried) and a KafkaConnectionError (``host``/``port``: the first of them)."""

    retriable = True

    def __init__(self, message: str = "", brokers: Iterable[Any] = ()) -> None:
        """Keep the message and the brokers tried."""
        KafkaError.__init__(self, message)
        self.brokers = tuple(brokers)
        first = self.brokers[0] if self.brokers else ("", 0)
        host, port = first if isinstance(first, tuple) else (str(first), 0)
        self.host, self.port, self.reason = host, port, message
        self.closed_by_peer = False

    __str__ = NoBrokersAvailableError.__str__


class ZooKeeperError(KafkaError):
    """ZooKeeper could not be reached or failed an operation; ``connect`` names the ensemble
    (the connect string, chroot included) and the kazoo error is chained as the cause."""

    retriable = True

    def __init__(self, connect: str, reason: str = "") -> None:
        """Keep the connect string and what went wrong."""
        super().__init__(connect, reason)
        self.connect, self.reason = connect, reason

    def __str__(self) -> str:
        """``ZooKeeper host:port[/chroot]: reason``."""
        return (
            f"ZooKeeper {self.connect}: {self.reason}"
            if self.reason
            else f"ZooKeeper {self.connect} failed"
        )


class InvalidConfigError(KafkaError, ValueError):
    """A config key that is unknown or belongs to another role, or a value out of bounds."""

    def __init__(
        self,
        message: str,
        key: str | None = None,
        value: Any = None,
        allowed: str | Sequence[Any] | None = None,
    ) -> None:
        """Keep the offending ``key``, its ``value`` and what is ``allowed`` instead."""
        super().__init__(message)
        self.key, self.value, self.allowed = key, value, allowed


class FailedToSendMessageError(KafkaError):
    """Messages that were not acknowledged after all retries; ``failed`` says which and why."""

    def __init__(
        self, failed: Sequence[tuple[Any, BaseException | None]], message: str = ""
    ) -> None:
        """``failed`` is a list of ``(message, exception)`` pairs."""
        super().__init__(list(failed), message)
        self.failed = list(failed)
        self.message = message

    def __str__(self) -> str:
        """How many failed, then each message and its error (the first ten)."""
        head = self.message or f"failed to send {len(self.failed)} message(s)"
        items = [f"{_short(msg)}: {_short(exc)}" for msg, exc in self.failed[:_MAX_LISTED]]
        more = len(self.failed) - _MAX_LISTED
        if more > 0:
            items.append(f"... and {more} more")
        return head + ("; " + "; ".join(items) if items else "")


class QueueFullError(KafkaError):
    """The async producer's queue stayed full for ``queue.enqueue.timeout.ms``.

    ``not_queued`` holds the messages (ProducerData) of the call that were not queued.
    """

    not_queued: list[Any] = []


class ConsumerTimeoutError(KafkaError):
    """No message arrived within ``consumer.timeout.ms``; iteration may resume afterwards."""


class ConsumerRebalanceFailedError(KafkaError):
    """A consumer rebalance still failed after ``rebalance.max.retries`` attempts."""


class NoOffsetForPartitionError(KafkaError):
    """A partition has no committed offset and ``auto.offset.reset`` is none."""


class IllegalStateError(KafkaError):
    """An operation that the object's state does not allow (e.g. send after close)."""


class WakeupError(KafkaError):
    """A blocking call was cut short by ``wakeup()`` from another thread (Java's
    WakeupException)."""


def _short(obj: Any, limit: int = 120) -> str:
    """A one-line, length-capped description of a message or exception."""
    if isinstance(obj, BrokerResponseError):
        text = obj.message + (f" for {obj.context}" if obj.context else "")
    elif isinstance(obj, BaseException):
        text = f"{type(obj).__name__}: {obj}" if str(obj) else type(obj).__name__
    else:
        text = repr(obj)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _broker_name(broker: Any) -> str:
    """``host:port`` for a (host, port) pair, else the broker's str."""
    if isinstance(broker, tuple) and len(broker) == 2:
        return f"{broker[0]}:{broker[1]}"
    return str(broker)


def error_name(exc: BaseException) -> str:
    """Kafka's name of a broker error code (UNKNOWN_TOPIC_OR_PARTITION), else the class name."""
    name = getattr(type(exc), "message", None) if hasattr(exc, "errno") else None
    return name if isinstance(name, str) else type(exc).__name__
