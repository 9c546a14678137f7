"""Fetch (key 1): read each partition straight from its segment files.

Data whose message format the request version can carry goes out as file regions (sendfile);
older versions get down-converted bytes (v0-v1 read magic 0, v2-v3 magic <= 1, v4+ any).  A
response with fewer than ``min_bytes`` waits (a Future) until appends to the fetched partitions
bring enough or ``max_wait_ms`` passes; if its connection closes first, the parked fetch lets go of
its watchers and timer at once.  From v3 the total ``max_bytes`` is honoured, and the first
entry of the first non-empty partition is returned whole even when larger (KIP-74).
Every v4+ answer carries the partition's last stable offset; a read_committed fetch
(isolation_level 1) reads only below it and gets the aborted transactions overlapping what it
read (an empty list when none).  Down-converted data leaves control batches (markers) out.
Fetch sessions (KIP-227, v7+): ``broker.fetch_sessions`` decides what a fetch in a session
reads and answers (:mod:`kclient.broker.fetch_sessions`).
"""

from __future__ import annotations

import os
import struct
import threading
from concurrent.futures import InvalidStateError
from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import FETCH
from kclient.protocol.errors import OffsetOutOfRangeError, UnsupportedCodecError
from kclient.protocol.framing import Request
from kclient.protocol.records import convert_records

from ..authorizer import allowed
from ..delayed import DelayedResponse
from ..fetch_sessions import FetchContext
from ..interface import Broker, body_of
from .registry import handles

OFFSET_OUT_OF_RANGE = OffsetOutOfRangeError.errno
UNSUPPORTED_COMPRESSION_TYPE = E.UnsupportedCompressionTypeError.errno
KAFKA_STORAGE_ERROR = E.KafkaStorageError.errno
TOPIC_AUTHORIZATION_FAILED = E.TopicAuthorizationFailedError.errno
_HEAD = struct.Struct(">qi")


def max_magic(version: int) -> int:
    """Newest message format a Fetch version can carry."""
    return 0 if version < 2 else (1 if version < 4 else 2)


def _partition_entry(
    index: int,
    code: int,
    hw: int = -1,
    start: int = -1,
    records: Any = b"",
    aborted: list[Any] | None = None,
    lso: int = -1,
) -> dict[str, Any]:
    """One partition's response entry; an error one carries -1 offsets, as Kafka's (and, for
    a partition refused before any read, an empty aborted transactions list, not null)."""
    if code:
        return {
            "partition_index": index,
            "error_code": code,
            "high_watermark": -1,
            "last_stable_offset": -1,
            "log_start_offset": -1,
            "aborted_transactions": aborted,
            "preferred_read_replica": -1,
            "records": records,
        }
    return {
        "partition_index": index,
        "error_code": code,
        "high_watermark": hw,
        "last_stable_offset": lso,
        "log_start_offset": start,
        "aborted_transactions": aborted,
        "preferred_read_replica": -1,
        "records": records,
    }


def _head(data: Any) -> bytes:
    """The first 12 bytes (offset, size) of a region or bytes."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data[:12])
    return os.pread(data.file, 12, data.position)


def _first_entry_size(data: Any) -> int | None:
    """Total size of the first entry in ``data`` (None if not even its header is there)."""
    if len(data) < 12:
        return None
    size: int = _HEAD.unpack(_head(data))[1]
    return 12 + size


def _read(
    log_: Any, offset: int, limit: int, whole_first: bool, max_offset: int | None = None
) -> Any:
    """Read up to ``limit`` bytes (below ``max_offset``, when given); with ``whole_first``,
    at least the first entry complete."""
    data = log_.read(offset, limit, max_offset)
    if not whole_first or not data:
        return data
    need = _first_entry_size(data)
    if need is None or need > len(data):
        data = log_.read(offset, max(need or 0, limit, 12), max_offset)
        need = _first_entry_size(data)
        if need is not None and need > len(data):
            data = log_.read(offset, need, max_offset)
    return data


def _convert(data: Any, magic: int, fetch_offset: int) -> Any:
    """Down-convert fetched data to ``magic`` (a lone partial entry is passed through). As
    Kafka, converted messages before ``fetch_offset`` (the head of the first batch) are left out."""
    raw = data.read() if hasattr(data, "read") else bytes(data)
    converted = convert_records(raw, magic)
    if not converted:
        whole = _first_entry_size(raw)
        return b"" if whole is not None and whole <= len(raw) else raw  # markers only
    pos = 0
    while pos + 12 <= len(converted):
        last_offset, size = _HEAD.unpack_from(converted, pos)
        if last_offset >= fetch_offset:
            break
        pos += 12 + size
    return converted[pos:]


def _aborted(log_: Any, fetch_offset: int, lso: int) -> list[dict[str, Any]]:
    """The aborted transactions a read_committed consumer needs for a read from
    ``fetch_offset`` (bounded by the last stable offset)."""
    return [
        {"producer_id": t.producer_id, "first_offset": t.first_offset}
        for t in log_.aborted_transactions(fetch_offset, lso)
    ]


def _read_partition(
    broker: Broker,
    topic: str,
    req: Any,
    version: int,
    limit: int,
    whole_first: bool,
    committed: bool = False,
) -> dict[str, Any]:
    """One partition's response entry (``committed``: isolation read_committed)."""
    index = req.partition
    log_, code = broker.partition_log(topic, index)
    if log_ is None:
        return _partition_entry(index, code, aborted=[])
    lso = log_.last_stable_offset
    hw, start = log_.log_end_offset, log_.log_start_offset
    bound = lso if committed else None
    try:
        data = (
            _read(log_, req.fetch_offset, limit, whole_first, bound)
            if limit > 0 or whole_first
            else b""
        )
        if data and log_.config.message_format_version > max_magic(version):
            data = _convert(data, max_magic(version), req.fetch_offset)
    except OffsetOutOfRangeError:
        return _partition_entry(index, OFFSET_OUT_OF_RANGE)
    except UnsupportedCodecError:
        return _partition_entry(index, UNSUPPORTED_COMPRESSION_TYPE)
    except OSError:
        return _partition_entry(index, KAFKA_STORAGE_ERROR)
    aborted = _aborted(log_, req.fetch_offset, lso) if committed else None
    return _partition_entry(
        index, 0, hw, start, data if data is not None else b"", aborted, lso if version >= 4 else hw
    )


def read_all(
    broker: Broker, body: Any, version: int, ctx: FetchContext, denied: frozenset[str] = frozenset()
) -> tuple[dict[str, Any], int, bool]:
    """Read every partition of ``ctx``: (response body, bytes read, any partition error); the
    partitions of ``denied`` topics answer TOPIC_AUTHORIZATION_FAILED."""
    budget = body.max_bytes if version >= 3 else 0x7FFFFFFF
    committed = version >= 4 and body.isolation_level == 1
    total, failed, responses = 0, False, []
    for topic, reqs in ctx.topics:
        parts = []
        for req in reqs:
            if topic in denied:
                parts.append(
                    _partition_entry(req.partition, TOPIC_AUTHORIZATION_FAILED, aborted=[])
                )
                failed = True
                continue
            limit = min(req.partition_max_bytes, budget - total)
            entry = _read_partition(
                broker,
                topic,
                req,
                version,
                limit,
                whole_first=version >= 3 and total == 0,
                committed=committed,
            )
            total += len(entry["records"])
            failed = failed or entry["error_code"] != 0
            parts.append(entry)
        responses.append({"topic": topic, "partitions": parts})
    body_out = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}
    return body_out, total, failed


class DelayedFetch:
    """A fetch parked until appends bring ``min_bytes`` or ``max_wait_ms`` runs out."""

    def __init__(self, broker: Broker, body: Any, version: int, ctx: FetchContext, have: int):
        self.broker, self.body, self.version, self.ctx = broker, body, version, ctx
        self.future = DelayedResponse()
        self._lock = threading.Lock()
        self._done = False
        self._bytes = have
        keys = [(t, p.partition) for t, ps in ctx.topics for p in ps]
        self._token = broker.watchers.watch(keys, self._on_append)
        self._timer = broker.scheduler.call_later(body.max_wait_ms / 1000.0, self._expire)
        self.future.on_abandon(self._abandoned)

    def _on_append(self, nbytes: int) -> None:
        """An append to a watched partition: answer once enough bytes arrived."""
        with self._lock:
            if self._done:
                return
            self._bytes += nbytes
            if self._bytes < self.body.min_bytes:
                return
            self._done = True
        self._finish()

    def _expire(self) -> None:
        """max_wait_ms passed: answer with whatever is there."""
        with self._lock:
            if self._done:
                return
            self._done = True
        self._finish()

    def _abandoned(self) -> None:
        """The connection closed: stop watching and drop the timer, nothing to answer."""
        with self._lock:
            if self._done:
                return
            self._done = True
        self._release()

    def _release(self) -> None:
        """Unregister from the append watchers and the timer."""
        self.broker.watchers.unwatch(self._token)
        self.broker.scheduler.cancel(self._timer)

    def recheck(self, seen: dict[tuple[str, int], int]) -> None:
        """Catch appends that landed between the first read and the watch registration."""
        for key, end in seen.items():
            log_, code = self.broker.partition_log(*key)
            if log_ is not None and log_.log_end_offset != end:
                self._on_append(self.body.min_bytes)
                return

    def _finish(self) -> None:
        """Stop watching, read again and resolve the future (unless it was abandoned)."""
        self._release()
        if self.future.cancelled():
            return
        error: Exception | None = None
        try:
            result = self.ctx.answer(read_all(self.broker, self.body, self.version, self.ctx)[0])
        except Exception as exc:  # noqa: BLE001 - handed on to the waiting request
            result, error = None, exc
        try:
            if error is None:
                self.future.set_result(result)
            else:
                self.future.set_exception(error)
        except InvalidStateError:
            pass  # abandoned while it was being read


def _high_watermarks(body: dict[str, Any]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> high watermark seen in a response body."""
    return {
        (t["topic"], p["partition_index"]): p["high_watermark"]
        for t in body["responses"]
        for p in t["partitions"]
    }


@handles(FETCH, "0-12")
def handle(broker: Broker, request: Request) -> Any:
    """Answer now if there is enough data (or an error), else park the fetch."""
    body, version = body_of(request), request.header.api_version
    ctx = broker.fetch_sessions.context(body, version)
    denied = frozenset(
        t
        for t, _ in ctx.topics
        if not allowed(broker, request, AclOperation.READ, ResourceType.TOPIC, t)
    )
    response, total, failed = read_all(broker, body, version, ctx, denied)
    if total >= body.min_bytes or body.max_wait_ms <= 0 or failed or not ctx.topics:
        return ctx.answer(response)
    delayed = DelayedFetch(broker, body, version, ctx, total)
    delayed.recheck(_high_watermarks(response))
    return delayed.future
