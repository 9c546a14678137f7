"""Client metrics: what ``metrics()`` of the Producer, SimpleConsumer and ConsumerConnector return.

Every :class:`~kclient.connection.BrokerConnection` counts its own traffic in a
:class:`ConnectionStats` (requests, responses, errors, bytes out and in, round-trip times,
connection state) with plain attribute increments under the connection's own send or receive
lock, so nothing is shared between threads on the hot path.  A client's
:class:`ClientMetrics` (handed to its connections through ``ConnectionSettings.metrics``) keeps
them all and sums them per broker when asked, beside the client's own counts: retries, errors by
code, rebalances, and what the client knows per partition.

``statistics.interval.ms`` (librdkafka's key, 0 = off) with a ``stats_cb`` makes a
:class:`StatsReporter` thread call ``stats_cb(json_text)`` with the same snapshot as JSON, as
librdkafka and confluent-kafka do.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["ConnectionStats", "ClientMetrics", "StatsReporter", "percentile", "error_name",
           "start_reporter"]

log = logging.getLogger("kclient.metrics")

#: round-trip times kept per connection for the percentiles (the most recent ones)
RTT_SAMPLES = 1024


class ConnectionStats:
    """One connection's counts (see the module docstring)."""

    __slots__ = ("address", "node_id", "requests", "responses", "errors", "bytes_out",
                 "bytes_in", "connects", "disconnects", "state", "rtts", "sent_at", "by_api")

    def __init__(self, address: str, node_id: int | None) -> None:
        self.address, self.node_id = address, node_id
        self.requests = self.responses = self.errors = 0
        self.bytes_out = self.bytes_in = self.connects = self.disconnects = 0
        #: INIT (never connected), UP, DOWN
        self.state = "INIT"
        #: round-trip times in ms, most recent last
        self.rtts: deque[float] = deque(maxlen=RTT_SAMPLES)
        #: correlation id -> monotonic time its request was written
        self.sent_at: dict[int, float] = {}
        #: requests per API name (Produce, Fetch, Metadata, ...)
        self.by_api: Counter[str] = Counter()


def percentile(samples: Iterable[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of ``samples`` by nearest rank, or None when there are none."""
    ordered = sorted(samples)
    if not ordered:
        return None
    rank = max(1, min(len(ordered), int(q * len(ordered) + 0.999999)))
    return ordered[rank - 1]


def error_name(exc: BaseException) -> str:
    """Kafka's name of a broker error code (UNKNOWN_TOPIC_OR_PARTITION), else the class name."""
    name = getattr(type(exc), "message", None) if hasattr(exc, "errno") else None
    return name if isinstance(name, str) else type(exc).__name__


class ClientMetrics:
    """One client's metrics registry: its connections' stats and its own counters."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conns: list[ConnectionStats] = []
        #: retried requests or batches
        self.retries = 0
        #: rebalances completed (consumer groups)
        self.rebalances = 0
        self._errors: Counter[str] = Counter()

    def register(self, stats: ConnectionStats) -> None:
        """A new connection of this client."""
        with self._lock:
            self._conns.append(stats)

    def error(self, exc: BaseException, n: int = 1) -> None:
        """Count an error by its code name (UNKNOWN_TOPIC_OR_PARTITION, KafkaConnectionError)."""
        with self._lock:
            self._errors[error_name(exc)] += n

    def rebalanced(self) -> None:
        with self._lock:
            self.rebalances += 1

    def retry(self, n: int = 1) -> None:
        with self._lock:
            self.retries += n

    def brokers(self) -> dict[str, dict[str, Any]]:
        """Per broker (``host:port``): the sums over every connection to it."""
        with self._lock:
            conns = list(self._conns)
        out: dict[str, dict[str, Any]] = {}
        rtts: dict[str, list[float]] = {}
        for c in conns:
            b = out.get(c.address)
            if b is None:
                b = out[c.address] = {"node_id": c.node_id, "state": "INIT", "connections": 0,
                                      "requests": 0, "responses": 0, "errors": 0,
                                      "bytes_out": 0, "bytes_in": 0, "connects": 0,
                                      "disconnects": 0, "requests_by_api": Counter()}
                rtts[c.address] = []
            if b["node_id"] is None:
                b["node_id"] = c.node_id
            b["connections"] += 1
            for k in ("requests", "responses", "errors", "bytes_out", "bytes_in", "connects",
                      "disconnects"):
                b[k] += getattr(c, k)
            if c.state == "UP" or (c.state == "DOWN" and b["state"] == "INIT"):
                b["state"] = c.state
            rtts[c.address] += list(c.rtts)
            b["requests_by_api"].update(dict(c.by_api))
        for address, b in out.items():
            b["requests_by_api"] = dict(b["requests_by_api"])
            samples = rtts[address]
            b["rtt_ms"] = {"p50": percentile(samples, 0.5), "p99": percentile(samples, 0.99),
                           "samples": len(samples)}
        return out

    def snapshot(self, **extra: Any) -> dict[str, Any]:
        """The client-wide part of ``metrics()``, with ``extra`` sections added."""
        brokers = self.brokers()
        with self._lock:
            errors = dict(self._errors)
            retries, rebalances = self.retries, self.rebalances
        totals = {k: sum(b[k] for b in brokers.values())
                  for k in ("requests", "responses", "errors", "bytes_out", "bytes_in")}
        return {"time": time.time(), "brokers": brokers, "totals": totals, "retries": retries,
                "errors_by_code": errors, "rebalances": rebalances, **extra}


class StatsReporter(threading.Thread):
    """Calls ``stats_cb(json_text)`` every ``interval_ms`` until stopped (librdkafka's
    ``statistics.interval.ms``)."""

    def __init__(self, snapshot: Callable[[], dict[str, Any]], stats_cb: Callable[[str], Any],
                 interval_ms: int, name: str = "kclient-stats") -> None:
        super().__init__(name=name, daemon=True)
        self.snapshot, self.stats_cb, self.interval = snapshot, stats_cb, interval_ms / 1000.0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            try:
                self.stats_cb(json.dumps(self.snapshot(), default=str))
            except Exception:
                log.exception("stats_cb raised")

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(5)


def start_reporter(interval_ms: int, stats_cb: Callable[[str], Any] | None,
                   snapshot: Callable[[], dict[str, Any]]) -> StatsReporter | None:
    """A running StatsReporter when both ``statistics.interval.ms`` and ``stats_cb`` are set."""
    if not interval_ms or stats_cb is None:
        return None
    r = StatsReporter(snapshot, stats_cb, interval_ms)
    r.start()
    return r
