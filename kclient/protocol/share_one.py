"""ShareFetch and ShareAcknowledge answers (v1, v2) read without the generic schema walk.

An explicit share consumer gets one of these answers per poll or two; the generic decoder
(:meth:`kclient.protocol.schema.Api.decode_response`) walks the declarative schema field by
field for each, some 40-190 us of the client's CPU per answer.  :func:`read_share_fetch` and
:func:`read_share_acknowledge` read the answers these versions have with straight-line
``struct`` unpacks into the very ``Struct`` tree the generic decoder builds (the records stay
a view of the frame); an answer carrying tagged fields, a null or negative count, or anything
short or malformed makes them return None, and the caller decodes it the generic way (which
says what is wrong).  ``integration/test_share_one.py`` checks both give equal answers on a
real Kafka's, and the schema stays the reference.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from .fetch_one import compact_count as _n
from .schema import Struct
from .varint import decode_uvarint

__all__ = [
    "read_share_fetch",
    "read_share_acknowledge",
    "read_share_acknowledge_v1",
    "reader_for",
    "request_frame",
]

#: ShareFetch's and ShareAcknowledge's API keys
SHARE_FETCH_KEY, SHARE_ACKNOWLEDGE_KEY = 78, 79
#: throttle_time_ms, error_code
_HEAD = struct.Struct(">ih")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
#: partition_index, error_code
_PART = struct.Struct(">ih")
#: current_leader: leader_id, leader_epoch
_LEADER = struct.Struct(">ii")
#: an acquired range: first_offset, last_offset, delivery_count, its empty tagged section
_ACQUIRED = struct.Struct(">qqhB")
_new = object.__new__


class _Odd(Exception):
    """A shape these readers leave to the generic decoder."""


def _struct(values: dict[str, Any]) -> Struct:
    s: Struct = _new(Struct)
    s.__dict__ = values
    return s


def _count(view: memoryview, pos: int) -> tuple[int, int]:
    """A compact array's element count (not null)."""
    n, pos = decode_uvarint(view, pos)
    if n == 0:
        raise _Odd
    return n - 1, pos


def _string(view: memoryview, pos: int) -> tuple[str | None, int]:
    """A compact nullable string."""
    n, pos = decode_uvarint(view, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    if end > len(view):
        raise _Odd
    return str(view[pos:end], "utf-8"), end


def _no_tags(view: memoryview, pos: int) -> int:
    """Past an empty tagged section (a field in one: the generic decoder keeps it)."""
    if view[pos]:
        raise _Odd
    return pos + 1


def _leader(view: memoryview, pos: int) -> tuple[Struct, int]:
    leader_id, epoch = _LEADER.unpack_from(view, pos)
    return _struct({"leader_id": leader_id, "leader_epoch": epoch}), _no_tags(view, pos + 8)


def _endpoints(view: memoryview, pos: int) -> tuple[list[Struct], int]:
    n, pos = _count(view, pos)
    out = []
    for _ in range(n):
        node_id = _I32.unpack_from(view, pos)[0]
        host, pos = _string(view, pos + 4)
        if host is None:
            raise _Odd
        port = _I32.unpack_from(view, pos)[0]
        rack, pos = _string(view, pos + 4)
        pos = _no_tags(view, pos)
        out.append(_struct({"node_id": node_id, "host": host, "port": port, "rack": rack}))
    return out, pos


def _fetch_partition(view: memoryview, pos: int) -> tuple[Struct, int]:
    index, code = _PART.unpack_from(view, pos)
    message, pos = _string(view, pos + 6)
    ack_code = _I16.unpack_from(view, pos)[0]
    ack_message, pos = _string(view, pos + 2)
    leader, pos = _leader(view, pos)
    size, pos = decode_uvarint(view, pos)
    records = None
    if size:
        end = pos + size - 1
        if end > len(view):
            raise _Odd
        records = view[pos:end]
        pos = end
    n, pos = _count(view, pos)
    acquired = []
    for _ in range(n):
        first, last, count, tags = _ACQUIRED.unpack_from(view, pos)
        if tags:
            raise _Odd
        pos += 19
        acquired.append(
            _struct({"first_offset": first, "last_offset": last, "delivery_count": count})
        )
    part = {
        "partition_index": index,
        "error_code": code,
        "error_message": message,
        "acknowledge_error_code": ack_code,
        "acknowledge_error_message": ack_message,
        "current_leader": leader,
        "records": records,
        "acquired_records": acquired,
    }
    return _struct(part), _no_tags(view, pos)


def _ack_partition(view: memoryview, pos: int) -> tuple[Struct, int]:
    index, code = _PART.unpack_from(view, pos)
    message, pos = _string(view, pos + 6)
    leader, pos = _leader(view, pos)
    part = {
        "partition_index": index,
        "error_code": code,
        "error_message": message,
        "current_leader": leader,
    }
    return _struct(part), _no_tags(view, pos)


def _read(
    view: memoryview,
    pos: int,
    lock_timeout: bool,
    partition: Callable[[memoryview, int], tuple[Struct, int]],
) -> Struct | None:
    """An answer body of either API: the head, the topics (their partitions by
    ``partition``), the node endpoints; None for a shape left to the generic decoder."""
    try:
        throttle, code = _HEAD.unpack_from(view, pos)
        message, pos = _string(view, pos + 6)
        values: dict[str, Any] = {
            "throttle_time_ms": throttle,
            "error_code": code,
            "error_message": message,
        }
        if lock_timeout:
            values["acquisition_lock_timeout_ms"] = _I32.unpack_from(view, pos)[0]
            pos += 4
        else:  # (ShareAcknowledge v1 has none: the schema's default, as the generic reads it)
            values["acquisition_lock_timeout_ms"] = 0
        n, pos = _count(view, pos)
        topics = []
        for _ in range(n):
            if pos + 16 > len(view):
                return None
            topic_id = bytes(view[pos : pos + 16])
            m, pos = _count(view, pos + 16)
            parts = []
            for _ in range(m):
                part, pos = partition(view, pos)
                parts.append(part)
            pos = _no_tags(view, pos)
            topics.append(_struct({"topic_id": topic_id, "partitions": parts}))
        values["responses"] = topics
        values["node_endpoints"], pos = _endpoints(view, pos)
        if _no_tags(view, pos) != len(view):
            return None
    except (_Odd, struct.error, IndexError, ValueError):  # the generic way says what it is
        return None
    return _struct(values)


def read_share_fetch(view: memoryview, pos: int) -> Struct | None:
    """A ShareFetch v1/v2 answer body at ``pos`` of ``view`` (after the header), or None."""
    return _read(view, pos, True, _fetch_partition)


def read_share_acknowledge_v1(view: memoryview, pos: int) -> Struct | None:
    """A ShareAcknowledge v1 answer body (no acquisition lock timeout), or None."""
    return _read(view, pos, False, _ack_partition)


def read_share_acknowledge(view: memoryview, pos: int) -> Struct | None:
    """A ShareAcknowledge v2 answer body, or None."""
    return _read(view, pos, True, _ack_partition)


_READERS: dict[tuple[int, int], Callable[[memoryview, int], Struct | None]] = {
    (SHARE_FETCH_KEY, 1): read_share_fetch,
    (SHARE_FETCH_KEY, 2): read_share_fetch,
    (SHARE_ACKNOWLEDGE_KEY, 1): read_share_acknowledge_v1,
    (SHARE_ACKNOWLEDGE_KEY, 2): read_share_acknowledge,
}


def reader_for(key: int, version: int) -> Callable[[memoryview, int], Struct | None] | None:
    """The reader of an answer of API ``key`` at ``version`` (None: the generic decoder)."""
    return _READERS.get((key, version))


# -- requests --------------------------------------------------------------------------

#: size prefix, api key, api version, correlation id
_FRAME_HEAD = struct.Struct(">ihhi")
#: share_session_epoch, max_wait_ms, min_bytes, max_bytes, max_records, batch_size
_FETCH_HEAD = struct.Struct(">iiiiii")
#: an acknowledgement batch's first_offset, last_offset
_RANGE = struct.Struct(">qq")
#: the body keys each request's writer knows (any other: the generic encoder)
_FETCH_KEYS = frozenset(
    (
        "group_id",
        "member_id",
        "share_session_epoch",
        "max_wait_ms",
        "min_bytes",
        "max_bytes",
        "max_records",
        "batch_size",
        "share_acquire_mode",
        "is_renew_ack",
        "topics",
        "forgotten_topics_data",
    )
)
_ACK_KEYS = frozenset(("group_id", "member_id", "share_session_epoch", "is_renew_ack", "topics"))


def _str(s: str | None) -> bytes:
    """A compact nullable string."""
    if s is None:
        return b"\x00"
    b = s.encode("utf-8")
    return _n(len(b)) + b


def _uuid(value: bytes) -> bytes:
    if len(value) != 16:
        raise ValueError("uuid")
    return bytes(value)


def _topics(out: list[bytes], topics: list[dict[str, Any]]) -> None:
    """The topics of either request: partitions and their acknowledgement batches."""
    out.append(_n(len(topics)))
    for t in topics:
        if len(t) != 2:
            raise KeyError("topic")
        parts = t["partitions"]
        out += (_uuid(t["topic_id"]), _n(len(parts)))
        for p in parts:
            if len(p) != 2:
                raise KeyError("partition")
            batches = p["acknowledgement_batches"]
            out += (_I32.pack(p["partition_index"]), _n(len(batches)))
            for b in batches:
                if len(b) != 3:
                    raise KeyError("batch")
                kinds = b["acknowledge_types"]
                out += (
                    _RANGE.pack(b["first_offset"], b["last_offset"]),
                    _n(len(kinds)),
                    struct.pack(f">{len(kinds)}b", *kinds),
                    b"\x00",
                )
            out.append(b"\x00")
        out.append(b"\x00")


def _fetch_body(out: list[bytes], version: int, body: dict[str, Any]) -> None:
    out += (
        _str(body.get("group_id")),
        _str(body["member_id"]),
        _FETCH_HEAD.pack(
            body["share_session_epoch"],
            body["max_wait_ms"],
            body["min_bytes"],
            body.get("max_bytes", 0x7FFFFFFF),
            body["max_records"],
            body["batch_size"],
        ),
    )
    if version >= 2:
        out.append(_MODE.pack(body.get("share_acquire_mode", 0), bool(body.get("is_renew_ack"))))
    _topics(out, body["topics"])
    forgotten = body["forgotten_topics_data"]
    out.append(_n(len(forgotten)))
    for t in forgotten:
        if len(t) != 2:
            raise KeyError("forgotten topic")
        ps = t["partitions"]
        out += (_uuid(t["topic_id"]), _n(len(ps)), struct.pack(f">{len(ps)}i", *ps), b"\x00")


def _ack_body(out: list[bytes], version: int, body: dict[str, Any]) -> None:
    out += (
        _str(body.get("group_id")),
        _str(body["member_id"]),
        _I32.pack(body["share_session_epoch"]),
    )
    if version >= 2:
        out.append(b"\x01" if body.get("is_renew_ack") else b"\x00")
    _topics(out, body["topics"])


#: share_acquire_mode, is_renew_ack
_MODE = struct.Struct(">b?")
_WRITERS: dict[int, tuple[frozenset[str], Callable[[list[bytes], int, dict[str, Any]], None]]] = {
    SHARE_FETCH_KEY: (_FETCH_KEYS, _fetch_body),
    SHARE_ACKNOWLEDGE_KEY: (_ACK_KEYS, _ack_body),
}


def request_frame(
    key: int, version: int, corr: int, client_header: bytes, body: Any
) -> bytes | None:
    """The whole request frame (size prefix first) of a ShareFetch or ShareAcknowledge v1/v2
    body as the core builds it (:mod:`kclient.core.share_fetch`; absent fields at their
    schema defaults), byte for byte the generic encoder's; None for any other API, version or
    body (a key it does not know, a value it cannot write): the generic encoder writes it, or
    names what is wrong.  ``client_header``: the request header after the correlation id."""
    writer = _WRITERS.get(key)
    if writer is None or version not in (1, 2) or type(body) is not dict:
        return None
    keys, write = writer
    if not keys.issuperset(body):
        return None
    out = [b"", client_header]
    try:
        write(out, version, body)
    except (KeyError, TypeError, ValueError, AttributeError, struct.error, OverflowError):
        return None
    out.append(b"\x00")  # the body's tagged section
    size = sum(map(len, out)) + 8
    out[0] = _FRAME_HEAD.pack(size, key, version, corr)
    return b"".join(out)
