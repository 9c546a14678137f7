"""``statistics.format=librdkafka``: a client's metrics() snapshot in librdkafka's
STATISTICS.md layout, for dashboards and parsers built for confluent-kafka's ``stats_cb``.

Only the fields kclient has are filled; librdkafka's others are left out rather than
invented.  Times are librdkafka's units: ``ts`` and ``age`` in microseconds, ``time`` in
seconds, broker ``rtt`` windows in microseconds.  Offsets kclient does not know are -1001
(librdkafka's RD_KAFKA_OFFSET_INVALID).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

__all__ = ["librdkafka_stats"]

INVALID = -1001
_IDS = itertools.count(1)


def librdkafka_stats(snap: dict[str, Any], started: float) -> dict[str, Any]:
    """The STATISTICS.md document of one ``metrics()`` snapshot (``started``: the monotonic
    time the reporter began, for ``age``)."""
    now = time.monotonic()
    kind = "producer" if snap.get("type") == "producer" else "consumer"
    totals = snap.get("totals", {})
    topics = _topics(snap, kind)
    parts = [p for t in topics.values() for p in t["partitions"].values()]
    out: dict[str, Any] = {
        "name": f"{snap.get('client_id') or 'kclient'}#{kind}-{next(_IDS)}",
        "client_id": snap.get("client_id") or "",
        "type": kind,
        "ts": int(now * 1e6),
        "time": int(snap.get("time", time.time())),
        "age": int((now - started) * 1e6),
        "tx": totals.get("requests", 0),
        "tx_bytes": totals.get("bytes_out", 0),
        "rx": totals.get("responses", 0),
        "rx_bytes": totals.get("bytes_in", 0),
        "brokers": _brokers(snap),
        "topics": topics,
    }
    if kind == "producer":
        out["msg_cnt"] = snap.get("queue_depth", 0)
        out["txmsgs"] = sum(p.get("txmsgs", 0) for p in parts)
        out["txmsg_bytes"] = sum(p.get("txbytes", 0) for p in parts)
    else:
        out["rxmsgs"] = sum(p.get("rxmsgs", 0) for p in parts)
    if snap.get("group_id"):
        out["cgrp"] = {
            "state": "up" if parts else "wait-assign",
            "rebalance_cnt": snap.get("rebalances", 0),
            "assignment_size": len(parts),
        }
    return out


def _us(ms: float | None) -> int:
    return 0 if ms is None else int(ms * 1000)


def _brokers(snap: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for address, b in snap.get("brokers", {}).items():
        node = b.get("node_id")
        name = f"{address}/{node if node is not None else 'bootstrap'}"
        rtt = b.get("rtt_ms", {})
        out[name] = {
            "name": name,
            "nodeid": node if node is not None else -1,
            "nodename": address,
            "source": "learned" if node is not None else "configured",
            "state": b.get("state", "INIT"),
            "tx": b.get("requests", 0),
            "txbytes": b.get("bytes_out", 0),
            "txerrs": b.get("errors", 0),
            "rx": b.get("responses", 0),
            "rxbytes": b.get("bytes_in", 0),
            "connects": b.get("connects", 0),
            "disconnects": b.get("disconnects", 0),
            "req": dict(b.get("requests_by_api", {})),
            "rtt": {
                "min": _us(rtt.get("min")),
                "max": _us(rtt.get("max")),
                "avg": _us(rtt.get("avg")),
                "p50": _us(rtt.get("p50")),
                "p75": _us(rtt.get("p75")),
                "p90": _us(rtt.get("p90")),
                "p95": _us(rtt.get("p95")),
                "p99": _us(rtt.get("p99")),
                "cnt": rtt.get("samples", 0),
            },
        }
    return out


def _topics(snap: dict[str, Any], kind: str) -> dict[str, Any]:
    topics: dict[str, Any] = {}
    for key, p in snap.get("partitions", {}).items():
        topic, _, part = key.rpartition("/")
        t = topics.setdefault(topic, {"topic": topic, "partitions": {}})
        t["partitions"][part] = _partition(int(part), p, kind)
    return topics


def _partition(part: int, p: dict[str, Any], kind: str) -> dict[str, Any]:
    if kind == "producer":
        return {
            "partition": part,
            "txmsgs": p.get("messages", 0),
            "txbytes": p.get("bytes", 0),
            "msgs_inflight": p.get("in_flight", 0),
        }
    position = p.get("position", p.get("consumed_offset", p.get("fetch_offset", INVALID)))
    fetched = p.get("fetched_offset", p.get("fetch_offset", position))
    hw = p.get("high_watermark", -1)
    lag = p.get("lag")
    return {
        "partition": part,
        "app_offset": _offset(position),
        "next_offset": _offset(fetched),
        "hi_offset": _offset(hw),
        "consumer_lag": -1 if lag is None else lag,
        "rxmsgs": p.get("consumed", 0),
        "fetchq_cnt": p.get("buffered", 0),
        "fetch_state": "stopped" if p.get("paused") else "active",
        "committed_offset": INVALID,
    }


def _offset(value: int | None) -> int:
    return INVALID if value is None or value < 0 else value
