"""The live clients' ``metrics()`` snapshots as metric families: one conversion that both the
Prometheus endpoint and the OpenTelemetry instruments read, at collection time (so nothing is
done per message or per request for them).

Names are the OpenTelemetry messaging conventions' where they define one
(``messaging.client.operation.duration``, ``messaging.client.sent.messages``,
``messaging.client.consumed.messages``, ``messaging.process.duration``) and ``kclient.*``
otherwise (lag, queue depth, per-broker traffic); a mini-broker's snapshot (``type`` broker)
gives ``kclient.broker.*``.  Samples with equal attributes (two clients with one client.id)
are summed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Family", "Histogram", "families", "OPERATION_NAMES"]

#: Kafka API -> messaging.operation.name (other APIs keep their own name)
OPERATION_NAMES = {"Produce": "send", "Fetch": "poll", "OffsetCommit": "commit"}


@dataclass
class Histogram:
    """Bucket counts per upper bound ``le`` (non-cumulative, one more for above), count, sum."""

    le: list[float]
    buckets: list[int]
    count: int
    sum: float

    def add(self, other: Histogram) -> None:
        self.buckets = [a + b for a, b in zip(self.buckets, other.buckets)]
        self.count += other.count
        self.sum += other.sum

    def cumulative(self) -> list[tuple[float, int]]:
        """``(le, count at or below)`` pairs, ending with ``(inf, count)``."""
        out, total = [], 0
        for le, n in zip(self.le + [float("inf")], self.buckets):
            total += n
            out.append((le, total))
        return out


@dataclass
class Family:
    """One metric: its OpenTelemetry name, kind (counter, gauge, histogram), unit, help, and
    ``{attribute tuple: value}``."""

    name: str
    kind: str
    unit: str
    help: str
    samples: dict[tuple[tuple[str, str], ...], Any] = field(default_factory=dict)

    def add(self, attrs: dict[str, Any], value: Any) -> None:
        key = tuple(sorted((k, str(v)) for k, v in attrs.items() if v is not None))
        old = self.samples.get(key)
        if old is None:
            self.samples[key] = value
        elif isinstance(old, Histogram):
            old.add(value)
        else:
            self.samples[key] = old + value


_SPECS = [
    (
        "messaging.client.operation.duration",
        "histogram",
        "s",
        "Duration of each request a client made to a broker, by operation (Kafka API)",
    ),
    (
        "messaging.client.sent.messages",
        "counter",
        "{message}",
        "Messages a producer sent to a partition (each attempt)",
    ),
    (
        "messaging.client.consumed.messages",
        "counter",
        "{message}",
        "Messages a consumer handed to the application, per partition",
    ),
    (
        "messaging.process.duration",
        "histogram",
        "s",
        "Time the application spent on a record (process spans, when tracing is on)",
    ),
    (
        "kclient.consumer.lag",
        "gauge",
        "{message}",
        "High watermark minus the consumer's position, per partition",
    ),
    (
        "kclient.producer.queue.depth",
        "gauge",
        "{message}",
        "Messages queued in a producer and not yet reported",
    ),
    ("kclient.client.requests", "counter", "{request}", "Requests written, per broker and API"),
    (
        "kclient.client.connection.errors",
        "counter",
        "{error}",
        "Connection-level failures per broker",
    ),
    ("kclient.client.errors", "counter", "{error}", "Errors seen, by Kafka error name"),
    ("kclient.client.sent.bytes", "counter", "By", "Request bytes written, per broker"),
    ("kclient.client.received.bytes", "counter", "By", "Response bytes read, per broker"),
    ("kclient.broker.requests", "counter", "{request}", "Requests a mini-broker answered, per API"),
    (
        "kclient.broker.request.errors",
        "counter",
        "{request}",
        "Mini-broker answers carrying an error code, per API",
    ),
    (
        "kclient.broker.request.duration",
        "histogram",
        "s",
        "Time a mini-broker took to answer a request, per API",
    ),
    ("kclient.broker.received.bytes", "counter", "By", "Request bytes a mini-broker read"),
    ("kclient.broker.sent.bytes", "counter", "By", "Response bytes a mini-broker wrote"),
    ("kclient.broker.connections", "gauge", "{connection}", "Open client connections"),
    (
        "kclient.broker.connections.accepted",
        "counter",
        "{connection}",
        "Client connections accepted",
    ),
]


def families(snapshots: Iterable[dict[str, Any]]) -> list[Family]:
    """The metric families of ``snapshots`` (``metrics()`` dicts of clients and brokers)."""
    fams = {name: Family(name, kind, unit, help_) for name, kind, unit, help_ in _SPECS}
    for snap in snapshots:
        (_broker if snap.get("type") == "broker" else _client)(snap, fams)
    return list(fams.values())


def _hist(d: dict[str, Any]) -> Histogram:
    return Histogram(list(d["le"]), list(d["buckets"]), int(d["count"]), float(d["sum"]))


def _client(snap: dict[str, Any], fams: dict[str, Family]) -> None:
    common = {"messaging.system": "kafka", "messaging.client.id": snap.get("client_id") or None}
    group = snap.get("group_id") or None
    for address, b in snap.get("brokers", {}).items():
        host, _, port = address.rpartition(":")
        at = {**common, "server.address": host, "server.port": port}
        for api, h in b.get("latency_by_api", {}).items():
            fams["messaging.client.operation.duration"].add(
                {**at, "messaging.operation.name": OPERATION_NAMES.get(api, api)}, _hist(h)
            )
        for api, n in b.get("requests_by_api", {}).items():
            fams["kclient.client.requests"].add({**at, "kafka.api": api}, n)
        fams["kclient.client.connection.errors"].add(at, b.get("errors", 0))
        fams["kclient.client.sent.bytes"].add(at, b.get("bytes_out", 0))
        fams["kclient.client.received.bytes"].add(at, b.get("bytes_in", 0))
    for code, n in snap.get("errors_by_code", {}).items():
        fams["kclient.client.errors"].add({**common, "error.type": code}, n)
    producer = snap.get("type") == "producer"
    for key, p in snap.get("partitions", {}).items():
        topic, _, part = key.rpartition("/")
        at = {
            **common,
            "messaging.destination.name": topic,
            "messaging.destination.partition.id": part,
        }
        if producer and "messages" in p:
            fams["messaging.client.sent.messages"].add(at, p["messages"])
        if not producer:
            at["messaging.consumer.group.name"] = group
            if "consumed" in p:
                fams["messaging.client.consumed.messages"].add(at, p["consumed"])
            if p.get("lag") is not None:
                fams["kclient.consumer.lag"].add(at, p["lag"])
    for topic, h in snap.get("process_seconds", {}).items():
        fams["messaging.process.duration"].add(
            {**common, "messaging.destination.name": topic, "messaging.consumer.group.name": group},
            _hist(h),
        )
    if producer and "queue_depth" in snap:
        fams["kclient.producer.queue.depth"].add(common, snap["queue_depth"])


def _broker(snap: dict[str, Any], fams: dict[str, Family]) -> None:
    common = {"kafka.broker.id": snap.get("node_id")}
    for api, a in snap.get("apis", {}).items():
        at = {**common, "kafka.api": api}
        fams["kclient.broker.requests"].add(at, a["requests"])
        fams["kclient.broker.request.errors"].add(at, a["errors"])
        fams["kclient.broker.request.duration"].add(at, _hist(a["latency"]))
        fams["kclient.broker.received.bytes"].add(at, a["bytes_in"])
        fams["kclient.broker.sent.bytes"].add(at, a["bytes_out"])
    fams["kclient.broker.connections"].add(common, snap.get("connections", 0))
    fams["kclient.broker.connections.accepted"].add(common, snap.get("connections_accepted", 0))


def collect(source: Callable[[], Iterable[dict[str, Any]]]) -> list[Family]:
    """:func:`families` of what ``source`` returns now."""
    return families(source())
