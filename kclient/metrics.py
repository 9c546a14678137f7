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
import weakref
from bisect import bisect_left
from collections import Counter, deque
from collections.abc import Callable, Iterable
from typing import Any

from kclient.errors import error_name

__all__ = [
    "ConnectionStats",
    "ClientMetrics",
    "StatsReporter",
    "Registration",
    "percentile",
    "error_name",
    "start_reporter",
    "live_snapshots",
    "serve_prometheus",
    "instrument_meter",
    "LATENCY_BUCKETS",
]

log = logging.getLogger("kclient.metrics")

#: round-trip times kept per connection for the percentiles (the most recent ones)
RTT_SAMPLES = 1024

#: upper bounds (seconds) of the request latency histograms: the OpenTelemetry messaging
#: conventions' advice for messaging.client.operation.duration
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)


class ConnectionStats:
    """One connection's counts (see the module docstring)."""

    __slots__ = (
        "address",
        "node_id",
        "requests",
        "responses",
        "errors",
        "bytes_out",
        "bytes_in",
        "connects",
        "disconnects",
        "state",
        "rtts",
        "sent_at",
        "by_api",
        "latency",
        "sink",
    )

    def __init__(self, address: str, node_id: int | None) -> None:
        self.address, self.node_id = address, node_id
        self.requests = self.responses = self.errors = 0
        self.bytes_out = self.bytes_in = self.connects = self.disconnects = 0
        #: INIT (never connected), UP, DOWN
        self.state = "INIT"
        #: round-trip times in ms, most recent last
        self.rtts: deque[float] = deque(maxlen=RTT_SAMPLES)
        #: correlation id -> (monotonic time its request was written, its API name)
        self.sent_at: dict[int, tuple[float, str]] = {}
        #: requests per API name (Produce, Fetch, Metadata, ...)
        self.by_api: Counter[str] = Counter()
        #: per API name: round trips per LATENCY_BUCKETS bucket (+1 for above), then their sum
        self.latency: dict[str, list[float]] = {}
        #: called with (api, address, seconds) per answered request (an OpenTelemetry histogram)
        self.sink: Callable[[str, str, float], Any] | None = None

    def answered(self, corr: int) -> None:
        """The response to request ``corr`` arrived: its round trip into rtts and the histogram
        of its API (per request, never per message)."""
        sent = self.sent_at.pop(corr, None)
        if sent is None:
            return
        secs = time.monotonic() - sent[0]
        self.rtts.append(secs * 1000.0)
        h = self.latency.get(sent[1])
        if h is None:
            h = self.latency[sent[1]] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        h[bisect_left(LATENCY_BUCKETS, secs)] += 1
        h[-1] += secs
        if self.sink is not None:
            self.sink(sent[1], self.address, secs)


def percentile(samples: Iterable[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of ``samples`` by nearest rank, or None when there are none."""
    ordered = sorted(samples)
    if not ordered:
        return None
    rank = max(1, min(len(ordered), int(q * len(ordered) + 0.999999)))
    return ordered[rank - 1]


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
        #: messages sent (AIOProducer) or consumed (consumers) per (topic, partition), counted
        #: per batch by the one thread (or event loop) that moves them
        self.messages: Counter[Any] = Counter()  # keys: (topic, partition) or TopicPartition
        #: per topic: process durations per LATENCY_BUCKETS bucket, then their sum (the
        #: ``process`` spans of tracing time them)
        self.process: dict[str, list[float]] = {}
        #: see ConnectionStats.sink (instrument_meter() sets it for later clients)
        self.sink: Callable[[str, str, float], Any] | None = _SINK
        #: called with (topic, seconds) per ended process span (instrument_meter)
        self.process_sink: Callable[[str, float], Any] | None = _PROCESS_SINK

    def register(self, stats: ConnectionStats) -> None:
        """A new connection of this client."""
        stats.sink = self.sink
        with self._lock:
            self._conns.append(stats)

    def processed(self, topic: str, secs: float) -> None:
        """One record of ``topic`` was processed in ``secs`` (a ``process`` span ended)."""
        h = self.process.get(topic)
        if h is None:
            h = self.process[topic] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        h[bisect_left(LATENCY_BUCKETS, secs)] += 1
        h[-1] += secs
        if self.process_sink is not None:
            self.process_sink(topic, secs)

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
                b = out[c.address] = {
                    "node_id": c.node_id,
                    "state": "INIT",
                    "connections": 0,
                    "requests": 0,
                    "responses": 0,
                    "errors": 0,
                    "bytes_out": 0,
                    "bytes_in": 0,
                    "connects": 0,
                    "disconnects": 0,
                    "requests_by_api": Counter(),
                    "latency_by_api": {},
                }
                rtts[c.address] = []
            if b["node_id"] is None:
                b["node_id"] = c.node_id
            b["connections"] += 1
            for k in (
                "requests",
                "responses",
                "errors",
                "bytes_out",
                "bytes_in",
                "connects",
                "disconnects",
            ):
                b[k] += getattr(c, k)
            if c.state == "UP" or (c.state == "DOWN" and b["state"] == "INIT"):
                b["state"] = c.state
            rtts[c.address] += list(c.rtts)
            b["requests_by_api"].update(dict(c.by_api))
            _add_histograms(b["latency_by_api"], c.latency)
        for address, b in out.items():
            b["requests_by_api"] = dict(b["requests_by_api"])
            samples = rtts[address]
            b["rtt_ms"] = {
                "p50": percentile(samples, 0.5),
                "p99": percentile(samples, 0.99),
                "samples": len(samples),
                **{f"p{int(q * 100)}": percentile(samples, q) for q in (0.75, 0.9, 0.95)},
                "min": min(samples, default=None),
                "max": max(samples, default=None),
                "avg": sum(samples) / len(samples) if samples else None,
            }
        return out

    def snapshot(self, **extra: Any) -> dict[str, Any]:
        """The client-wide part of ``metrics()``, with ``extra`` sections added."""
        brokers = self.brokers()
        with self._lock:
            errors = dict(self._errors)
            retries, rebalances = self.retries, self.rebalances
        totals = {
            k: sum(b[k] for b in brokers.values())
            for k in ("requests", "responses", "errors", "bytes_out", "bytes_in")
        }
        out = {
            "time": time.time(),
            "brokers": brokers,
            "totals": totals,
            "retries": retries,
            "errors_by_code": errors,
            "rebalances": rebalances,
            **extra,
        }
        if self.process:
            out["process_seconds"] = _add_histograms({}, self.process)
        return out

    def with_messages(
        self, partitions: dict[str, dict[str, Any]], key: str
    ) -> dict[str, dict[str, Any]]:
        """``partitions`` (keyed ``topic/p``) with this registry's message counts as ``key``
        (``consumed`` or ``messages``), adding the partitions only counted."""
        for tp, n in list(self.messages.items()):
            topic, part = (tp.topic, tp.partition) if hasattr(tp, "topic") else tp
            entry = partitions.setdefault(f"{topic}/{part}", {"topic": topic, "partition": part})
            entry[key] = n
        return partitions


def _add_histograms(
    into: dict[str, dict[str, Any]], hists: dict[str, list[float]]
) -> dict[str, dict[str, Any]]:
    """Sum bucket lists into ``{name: {"buckets": [...], "count": n, "sum": s}}`` (buckets
    per LATENCY_BUCKETS bound, then one for above)."""
    for name, h in list(hists.items()):
        h = list(h)
        d = into.get(name)
        if d is None:
            d = into[name] = {
                "le": list(LATENCY_BUCKETS),
                "buckets": [0] * (len(LATENCY_BUCKETS) + 1),
                "count": 0,
                "sum": 0.0,
            }
        for i, n in enumerate(h[:-1]):
            d["buckets"][i] += int(n)
        d["count"] += int(sum(h[:-1]))
        d["sum"] += h[-1]
    return into


class StatsReporter(threading.Thread):
    """Calls ``stats_cb(json_text)`` every ``interval_ms`` until stopped (librdkafka's
    ``statistics.interval.ms``)."""

    def __init__(
        self,
        snapshot: Callable[[], dict[str, Any]],
        stats_cb: Callable[[str], Any],
        interval_ms: int,
        name: str = "kclient-stats",
        fmt: str = "kclient",
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.snapshot, self.stats_cb, self.interval = snapshot, stats_cb, interval_ms / 1000.0
        self._stop_event = threading.Event()
        #: ``statistics.format``: kclient's metrics() as is, or librdkafka's STATISTICS.md layout
        self.fmt = fmt
        self.started = time.monotonic()

    def stats(self) -> dict[str, Any]:
        """One statistics document in the chosen layout."""
        if self.fmt == "librdkafka":
            from kclient.observability.librdkafka import librdkafka_stats

            return librdkafka_stats(self.snapshot(), self.started)
        return self.snapshot()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            try:
                self.stats_cb(json.dumps(self.stats(), default=str))
            except Exception:
                log.exception("stats_cb raised")

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(5)


class Registration:
    """A client's place in the live registry (what Prometheus and OpenTelemetry metrics read),
    and its StatsReporter if ``stats_cb`` is on; ``stop()`` (at the client's close) ends both."""

    def __init__(
        self, snapshot: Callable[[], dict[str, Any]], reporter: StatsReporter | None
    ) -> None:
        self.reporter = reporter
        self._key = id(self)
        with _LIVE_LOCK:
            _LIVE[self._key] = (
                weakref.WeakMethod(snapshot)
                if hasattr(snapshot, "__self__")
                else (lambda: snapshot)
            )

    def stop(self) -> None:
        with _LIVE_LOCK:
            _LIVE.pop(self._key, None)
        if self.reporter is not None:
            self.reporter.stop()


_LIVE: dict[int, Callable[[], Callable[[], dict[str, Any]] | None]] = {}
_LIVE_LOCK = threading.Lock()


def live_snapshots() -> list[dict[str, Any]]:
    """``metrics()`` of every open client of this process (a closed or collected one is
    left out; one whose snapshot fails is logged and left out)."""
    with _LIVE_LOCK:
        refs = list(_LIVE.values())
    out = []
    for ref in refs:
        fn = ref()
        if fn is None:
            continue
        try:
            out.append(fn())
        except Exception:
            log.exception("a client's metrics() failed")
    return out


def start_reporter(
    interval_ms: int,
    stats_cb: Callable[[str], Any] | None,
    snapshot: Callable[[], dict[str, Any]],
    fmt: str = "kclient",
) -> Registration:
    """Register a client's ``metrics()`` (``snapshot``) in the live registry, with a running
    StatsReporter when both ``statistics.interval.ms`` and ``stats_cb`` are set (``fmt``:
    ``statistics.format``)."""
    r = None
    if interval_ms and stats_cb is not None:
        r = StatsReporter(snapshot, stats_cb, interval_ms, fmt=fmt)
        r.start()
    return Registration(snapshot, r)


_SINK: Callable[[str, str, float], Any] | None = None
_PROCESS_SINK: Callable[[str, float], Any] | None = None


def instrument_meter(meter_provider: Any = None) -> None:
    """Export kclient's metrics through OpenTelemetry: observable instruments over every live
    client, and messaging.client.operation.duration recorded per request by clients made
    from now on.  ``meter_provider``: default OpenTelemetry's global one."""
    global _SINK, _PROCESS_SINK
    from kclient.observability.meters import instrument

    if meter_provider is None:
        from opentelemetry import metrics

        meter_provider = metrics.get_meter_provider()
    _SINK, _PROCESS_SINK = instrument(meter_provider, live_snapshots, LATENCY_BUCKETS)


def serve_prometheus(port: int = 0, addr: str = "127.0.0.1") -> Any:
    """Serve every live client's metrics (and a mini-broker's, once registered) for Prometheus
    at ``http://addr:port/metrics`` from a daemon thread; returns the server (its
    ``server_port``; ``shutdown()`` stops it).  Needs ``prometheus_client`` (the otel extra);
    docs/observability.md lists the metrics."""
    from kclient.observability.prometheus import serve

    return serve(live_snapshots, port, addr)
