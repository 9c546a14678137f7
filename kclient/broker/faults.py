"""Fault injection for tests, like librdkafka's mock cluster and franz-go's kfake.

``broker.faults.inject(api_key, error=6, count=3)`` answers the next three requests of that API
with error 6 wherever the response carries an error code; ``.delay(api_key, ms, count)`` holds
responses back; ``.drop_connection(api_key, count)`` closes the connection instead of answering;
``.lose_response(api_key, count)`` handles the request, then closes the connection instead of
answering (a lost acknowledgement: the work is done, the client cannot know).
Counts are one-shot (they run down); the broker consults :meth:`Faults.take` before dispatch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kclient.protocol.framing import Request

from .interface import body_of

__all__ = ["Faults", "Fault", "error_body"]


@dataclass
class Fault:
    """One armed fault: what to do and how many more requests it applies to."""

    kind: str  # "error" | "delay" | "drop" | "lose"
    count: int
    error: int = 0
    ms: int = 0


class Faults:
    """Per-API queues of armed faults; thread-safe, consumed one request at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: dict[int, list[Fault]] = {}
        self.fired: list[tuple[int, str]] = []

    def _arm(self, api_key: int, fault: Fault) -> None:
        """Queue a fault for an API."""
        if fault.count < 1:
            raise ValueError("count must be at least 1")
        with self._lock:
            self._armed.setdefault(int(api_key), []).append(fault)

    def inject(self, api_key: int, error: int, count: int = 1) -> None:
        """Answer the next ``count`` requests of ``api_key`` with error code ``error``."""
        self._arm(api_key, Fault("error", count, error=int(error)))

    def delay(self, api_key: int, ms: int, count: int = 1) -> None:
        """Delay the next ``count`` responses of ``api_key`` by ``ms`` milliseconds."""
        self._arm(api_key, Fault("delay", count, ms=int(ms)))

    def drop_connection(self, api_key: int, count: int = 1) -> None:
        """Close the connection on the next ``count`` requests of ``api_key``."""
        self._arm(api_key, Fault("drop", count))

    def lose_response(self, api_key: int, count: int = 1) -> None:
        """Handle the next ``count`` requests of ``api_key``, then drop the connection unanswered."""
        self._arm(api_key, Fault("lose", count))

    def clear(self, api_key: int | None = None) -> None:
        """Disarm every fault (or those of one API)."""
        with self._lock:
            if api_key is None:
                self._armed.clear()
            else:
                self._armed.pop(api_key, None)

    def pending(self, api_key: int) -> int:
        """How many requests of ``api_key`` are still going to be affected."""
        with self._lock:
            return sum(f.count for f in self._armed.get(api_key, []))

    def take(self, api_key: int) -> Fault | None:
        """The fault for this request, if one is armed (counting it down)."""
        if not self._armed:
            return None
        with self._lock:
            queue = self._armed.get(api_key)
            if not queue:
                return None
            fault = queue[0]
            fault.count -= 1
            if fault.count <= 0:
                queue.pop(0)
                if not queue:
                    del self._armed[api_key]
            self.fired.append((api_key, fault.kind))
            return fault


def _partitions_error(
    request: Request,
    code: int,
    topics: str,
    tname: str,
    parts: str,
    pname: str,
    out_topics: str,
    out_name: str,
    out_parts: str,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """Mirror a request's topic/partition lists into a response with ``code`` everywhere (the
    response names a partition ``index`` in Produce, ``partition_index`` elsewhere)."""
    out_index = "index" if out_parts == "partition_responses" else "partition_index"
    result = []
    for t in getattr(request.body, topics) or []:
        plist = []
        for p in getattr(t, parts):
            index = getattr(p, pname) if not isinstance(p, int) else p
            plist.append({out_index: index, "error_code": code, **extra})
        result.append({out_name: getattr(t, tname), out_parts: plist})
    return {out_topics: result}


def _produce(request: Request, code: int) -> dict[str, Any]:
    """Produce: the error on every partition."""
    return _partitions_error(
        request,
        code,
        "topic_data",
        "name",
        "partition_data",
        "index",
        "responses",
        "name",
        "partition_responses",
        {"base_offset": -1},
    )


def _fetch(request: Request, code: int) -> dict[str, Any]:
    """Fetch: the error on every partition, no records."""
    return _partitions_error(
        request,
        code,
        "topics",
        "topic",
        "partitions",
        "partition",
        "responses",
        "topic",
        "partitions",
        {"high_watermark": -1, "records": b""},
    )


def _list_offsets(request: Request, code: int) -> dict[str, Any]:
    """ListOffsets: the error on every partition."""
    return _partitions_error(
        request,
        code,
        "topics",
        "name",
        "partitions",
        "partition_index",
        "topics",
        "name",
        "partitions",
        {},
    )


def _offset_commit(request: Request, code: int) -> dict[str, Any]:
    """OffsetCommit: the error on every partition."""
    return _partitions_error(
        request,
        code,
        "topics",
        "name",
        "partitions",
        "partition_index",
        "topics",
        "name",
        "partitions",
        {},
    )


def _offset_fetch(request: Request, code: int) -> dict[str, Any]:
    """OffsetFetch: the error on every partition and at the top (v2+)."""
    body = _partitions_error(
        request,
        code,
        "topics",
        "name",
        "partition_indexes",
        "",
        "topics",
        "name",
        "partitions",
        {"committed_offset": -1},
    )
    body["error_code"] = code
    return body


def _create_topics(request: Request, code: int) -> dict[str, Any]:
    """CreateTopics: the error on every topic."""
    return {"topics": [{"name": t.name, "error_code": code} for t in body_of(request).topics]}


def _delete_topics(request: Request, code: int) -> dict[str, Any]:
    """DeleteTopics: the error on every topic."""
    return {"responses": [{"name": n, "error_code": code} for n in body_of(request).topic_names]}


def _top_level(request: Request, code: int) -> dict[str, Any]:
    """APIs with one top-level error code (group APIs, ApiVersions, FindCoordinator)."""
    return {"error_code": code}


_BUILDERS: dict[int, Callable[[Request, int], dict[str, Any]]] = {
    0: _produce,
    1: _fetch,
    2: _list_offsets,
    8: _offset_commit,
    9: _offset_fetch,
    19: _create_topics,
    20: _delete_topics,
}


def error_body(request: Request, code: int) -> Any:
    """A response body to ``request`` that reports error ``code`` wherever it can."""
    return _BUILDERS.get(request.header.api_key, _top_level)(request, code)


def stamp_metadata_error(body: dict[str, Any], code: int) -> dict[str, Any]:
    """Put ``code`` on every topic of a Metadata response body (Metadata's fault answer)."""
    for topic in body.get("topics", []):
        topic["error_code"] = code
    return body
