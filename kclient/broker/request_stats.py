"""The mini-broker's request metrics: per API the requests answered, answers with a top-level
error code, request and response bytes and a latency histogram (read to response queued,
a parked Fetch's wait included); connections open and accepted.

The network processors call :meth:`RequestStats.answered` once per request and
:meth:`connected` / :meth:`closed` per connection (a lock per call: processors are threads).
``MiniBroker.metrics()`` returns :meth:`snapshot`, in the shape kclient's Prometheus and
OpenTelemetry exporters read (``type`` broker; docs/observability.md).
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from typing import Any

__all__ = ["RequestStats", "BROKER_LATENCY_BUCKETS"]

#: upper bounds (seconds): finer than a client's, a local broker answers in well under 1 ms
BROKER_LATENCY_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


class RequestStats:
    """Counts of one broker's network layer (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: API name -> [requests, errors, bytes in, bytes out, sum of seconds, *buckets]
        self._apis: dict[str, list[float]] = {}
        self.open = self.accepted = 0

    def connected(self) -> None:
        with self._lock:
            self.open += 1
            self.accepted += 1

    def closed(self) -> None:
        with self._lock:
            self.open -= 1

    def answered(
        self, api: str, received: float, bytes_in: int, bytes_out: int, error: bool
    ) -> None:
        """One request of ``api`` read at monotonic ``received`` was answered (or dropped
        without an answer, as acks=0 Produce is)."""
        secs = time.monotonic() - received if received else 0.0
        with self._lock:
            a = self._apis.get(api)
            if a is None:
                a = self._apis[api] = [0.0] * (5 + len(BROKER_LATENCY_BUCKETS) + 1)
            a[0] += 1
            a[1] += error
            a[2] += bytes_in
            a[3] += bytes_out
            a[4] += secs
            a[5 + bisect_left(BROKER_LATENCY_BUCKETS, secs)] += 1

    def snapshot(self, node_id: int) -> dict[str, Any]:
        """The broker's metrics dict (``type`` broker)."""
        with self._lock:
            apis = {k: list(v) for k, v in self._apis.items()}
            open_, accepted = self.open, self.accepted
        return {
            "type": "broker",
            "node_id": node_id,
            "time": time.time(),
            "connections": open_,
            "connections_accepted": accepted,
            "apis": {
                name: {
                    "requests": int(a[0]),
                    "errors": int(a[1]),
                    "bytes_in": int(a[2]),
                    "bytes_out": int(a[3]),
                    "latency": {
                        "le": list(BROKER_LATENCY_BUCKETS),
                        "buckets": [int(n) for n in a[5:]],
                        "count": int(a[0]),
                        "sum": a[4],
                    },
                }
                for name, a in sorted(apis.items())
            },
        }
