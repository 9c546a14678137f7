"""Connection limits as Kafka's ConnectionQuotas: ``max.connections`` and ``max.connections.per.ip``.

Theory of operation.  The acceptor asks :meth:`ConnectionQuotas.has_slot` before it accepts:
at ``max.connections`` it stops accepting (new connections wait in the listen backlog, as
Kafka's acceptor blocks in ``waitForConnectionSlot``) until a connection closes.  Once accepted,
:meth:`ConnectionQuotas.inc` counts the connection against its address; an address already at
its limit (``max.connections.per.ip``, or its entry in ``max.connections.per.ip.overrides``,
``host:count,...``) is refused and the socket closed at once, as Kafka's TooManyConnections.
Processors call :meth:`ConnectionQuotas.dec` when a connection closes.

Also here: :class:`RateLimitedLog`, so a condition that repeats (an accept failing while file
descriptors are exhausted) is logged once per interval with a count, not once per occurrence.
"""

from __future__ import annotations

import logging
import socket
import threading
import time

__all__ = ["ConnectionQuotas", "RateLimitedLog", "TooManyConnectionsError", "parse_overrides"]

_MAX_INT = 2147483647


class TooManyConnectionsError(Exception):
    """An address already holds its maximum number of connections."""

    def __init__(self, address: str, count: int):
        super().__init__(
            f"address {address} already has the configured maximum of {count} connections"
        )
        self.address, self.count = address, count


def parse_overrides(value: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides`` ("host:count,ip:count") -> address -> count; host
    names are resolved to their addresses, as Kafka does."""
    overrides: dict[str, int] = {}
    for item in (value or "").split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ValueError(f"max.connections.per.ip.overrides: {item!r} is not host:count")
        try:
            address = socket.gethostbyname(host.strip().strip("[]"))
        except OSError:
            address = host.strip().strip("[]")
        overrides[address] = int(count)
    return overrides


class ConnectionQuotas:
    """Counts open connections per address and in total; thread safe."""

    def __init__(
        self,
        max_connections: int = _MAX_INT,
        max_per_ip: int = _MAX_INT,
        overrides: dict[str, int] | None = None,
    ):
        if max_connections < 0 or max_per_ip < 0:
            raise ValueError("max.connections and max.connections.per.ip must be >= 0")
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides or {})
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self.total = 0

    def limit_for(self, address: str) -> int:
        """The connection limit of one address."""
        return self.overrides.get(address, self.max_per_ip)

    def has_slot(self) -> bool:
        """Whether the broker-wide limit leaves room for one more connection."""
        return self.total < self.max_connections

    def inc(self, address: str) -> None:
        """Count a new connection; raises TooManyConnectionsError (not counted) at the limit."""
        limit = self.limit_for(address)
        with self._lock:
            count = self._counts.get(address, 0)
            if count >= limit:
                raise TooManyConnectionsError(address, limit)
            self._counts[address] = count + 1
            self.total += 1

    def dec(self, address: str) -> None:
        """A counted connection closed."""
        with self._lock:
            count = self._counts.get(address, 0)
            if count <= 1:
                self._counts.pop(address, None)
            else:
                self._counts[address] = count - 1
            self.total = max(0, self.total - 1)

    def count(self, address: str) -> int:
        """Open connections from ``address``."""
        return self._counts.get(address, 0)


class RateLimitedLog:
    """Log a repeating condition at most once per ``interval`` seconds, with how often it
    happened in between."""

    def __init__(self, logger: logging.Logger, interval: float = 10.0):
        self.logger, self.interval = logger, interval
        self._next = 0.0
        self._suppressed = 0

    def warning(self, message: str, *args: object) -> None:
        """Log now, or count the occurrence if the last line is younger than the interval."""
        now = time.monotonic()
        if now < self._next:
            self._suppressed += 1
            return
        if self._suppressed:
            message += f" ({self._suppressed} more since the last report)"
        self._suppressed, self._next = 0, now + self.interval
        self.logger.warning(message, *args)
