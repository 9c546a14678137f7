"""Fetch v12 without the generic schema walk: the request written, and an answer holding one
partition read.

A consumer reading one partition waits on a long-poll Fetch whose answer carries that
partition's new records; the generic decoder (:meth:`kclient.protocol.schema.Api.decode_response`)
walks the declarative schema field by field for it, on the path from the broker's answer to
the application's record.  :func:`read_one_partition` reads the common answer of Fetch v12 (one
topic, one partition, no aborted transactions listed, no tagged fields) with two ``struct``
unpacks into the very ``Struct`` tree the generic decoder builds (records stay a view of the
frame); any other answer makes it return None, and the caller decodes it the generic way.
``tests/protocol/test_fetch_one.py`` checks that both give equal answers.

:func:`request_frame` writes the whole v12 request frame of a body as
:func:`kclient.core.fetch.fetch_body` and the fetch session build it (the fields they fill;
the others at their schema defaults) with a few ``struct`` packs: the same bytes as the generic
encoder (checked there too), at a tenth of its cost, on every poll of a consumer.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

from .schema import Struct
from .speedups import load_speedup
from .varint import decode_uvarint, encode_uvarint

__all__ = ["read_one_partition", "reader_for", "request_frame", "ONE_PARTITION_VERSION"]

#: the Fetch version this reader knows (the highest kclient sends)
ONE_PARTITION_VERSION = 12
#: throttle_time_ms, error_code, session_id
_HEAD = struct.Struct(">ihi")
#: partition_index, error_code, high_watermark, last_stable_offset, log_start_offset
_PART = struct.Struct(">ihqqq")
_I32 = struct.Struct(">i")
#: a Struct without calling its __init__ (its fields' dict given whole)
_new = object.__new__
#: the partition's, the topic's and the answer's tagged sections, each empty
_NO_TAGS = b"\x00\x00\x00"
#: size prefix, api key, api version, correlation id
_FRAME_HEAD = struct.Struct(">ihhi")
#: replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch
_REQUEST_HEAD = struct.Struct(">iiiibii")
#: partition, current_leader_epoch, fetch_offset, last_fetched_epoch, log_start_offset,
#: partition_max_bytes, the partition's empty tagged section
_PARTITION = struct.Struct(">iiqiqib")
#: Fetch's API key
FETCH_KEY = 1
#: a compact array's length prefix, for lengths below 127: one byte
_SMALL = [bytes((n + 1,)) for n in range(127)]
#: the keys of a partition in a request
_PARTITION_KEYS = frozenset(
    (
        "partition",
        "current_leader_epoch",
        "fetch_offset",
        "last_fetched_epoch",
        "log_start_offset",
        "partition_max_bytes",
    )
)
#: the request body's keys :func:`request_frame` writes (any other: the generic encoder)
_BODY_KEYS = frozenset(
    (
        "replica_id",
        "max_wait_ms",
        "min_bytes",
        "max_bytes",
        "isolation_level",
        "session_id",
        "session_epoch",
        "topics",
        "forgotten_topics_data",
        "rack_id",
    )
)


def read_one_partition(view: memoryview, pos: int) -> Struct | None:
    """The Fetch v12 answer body at ``pos`` of ``view`` (after the header), or None when it
    is not one topic with one partition, without aborted transactions or tagged fields."""
    try:
        throttle, code, session_id = _HEAD.unpack_from(view, pos)
        pos += 10
        if view[pos] != 2:  # compact array of one topic
            return None
        n = view[pos + 1]  # the topic name's length + 1, in one byte
        if not 0 < n < 0x80:
            return None
        topic = str(view[pos + 2 : pos + 1 + n], "utf-8")
        pos += 1 + n
        if view[pos] != 2:  # one partition
            return None
        index, error, high, stable, start = _PART.unpack_from(view, pos + 1)
        pos += 31
        listed = view[pos]  # aborted transactions: 0 null, 1 none
        if listed > 1:
            return None
        replica = _I32.unpack_from(view, pos + 1)[0]
        size = view[pos + 5]  # the records' length + 1, an unsigned varint
        if size < 0x80:
            pos += 6
        elif view[pos + 6] < 0x80:  # two bytes: up to 16 KiB of records
            size = (size & 0x7F) | (view[pos + 6] << 7)
            pos += 7
        else:
            size, pos = decode_uvarint(view, pos + 5)
        records = None
        if size:
            end = pos + size - 1
            records = view[pos:end]
            pos = end
        if view[pos:] != _NO_TAGS:
            return None
    except (struct.error, IndexError, ValueError):  # short or not utf-8: the generic way says
        return None
    part = _new(Struct)
    part.__dict__ = {
        "partition_index": index,
        "error_code": error,
        "high_watermark": high,
        "last_stable_offset": stable,
        "log_start_offset": start,
        "aborted_transactions": [] if listed else None,
        "preferred_read_replica": replica,
        "records": records,
    }
    topic_answer = _new(Struct)
    topic_answer.__dict__ = {"topic": topic, "partitions": [part]}
    answer = _new(Struct)
    answer.__dict__ = {
        "throttle_time_ms": throttle,
        "error_code": code,
        "session_id": session_id,
        "responses": [topic_answer],
    }
    return answer


#: the C twin of :func:`read_one_partition` (kclient/protocol/records/_walk.pyx), when built
#: and wanted: the same tree, in one call on the path from the answer to ``poll()``
_walk = load_speedup("kclient.protocol.records._walk")
_c_read = getattr(_walk, "read_one_partition", None)
_reader: Callable[[memoryview, int], Struct | None] = (
    read_one_partition if _c_read is None else partial(_c_read, struct_cls=Struct)
)


def reader_for(version: int) -> Callable[[memoryview, int], Struct | None] | None:
    """The reader for a Fetch answer of ``version`` (None: only the generic decoder)."""
    return _reader if version == ONE_PARTITION_VERSION else None


@lru_cache(maxsize=4096)
def _compact_string(s: str) -> bytes:
    b = s.encode("utf-8")
    return encode_uvarint(len(b) + 1) + b


def compact_count(n: int) -> bytes:
    """A compact array's length prefix (one byte below 127; :mod:`share_one` too)."""
    return _SMALL[n] if n < 127 else encode_uvarint(n + 1)


def _topic_head(t: dict[str, Any], items: list[Any]) -> bytes:
    """A topic's name and its array's length prefix (KeyError: a key Fetch does not have)."""
    if len(t) != 2:
        raise KeyError("topic")
    return _compact_string(t["topic"]) + compact_count(len(items))


def _partition(p: dict[str, Any]) -> bytes:
    """One partition of a request (KeyError: a key missing, or one Fetch does not have)."""
    if len(p) == 3:  # what the core builds: the others at their defaults
        return _PARTITION.pack(
            p["partition"], -1, p["fetch_offset"], -1, -1, p["partition_max_bytes"], 0
        )
    if not _PARTITION_KEYS.issuperset(p):
        raise KeyError("partition")
    return _PARTITION.pack(
        p["partition"],
        p.get("current_leader_epoch", -1),
        p["fetch_offset"],
        p.get("last_fetched_epoch", -1),
        p.get("log_start_offset", -1),
        p["partition_max_bytes"],
        0,
    )


def request_frame(corr: int, client_header: bytes, body: dict[str, Any]) -> bytes:
    """The whole Fetch v12 request frame (size prefix first) for ``body``; ``client_header``
    is the request header after the correlation id (:func:`client_header`).  Raises KeyError
    (a field missing or unknown) or struct.error for a body the core would not build: the
    generic encoder writes it with its defaults, or names what is wrong."""
    out = [
        b"",
        client_header,
        _REQUEST_HEAD.pack(
            body["replica_id"],
            body["max_wait_ms"],
            body["min_bytes"],
            body["max_bytes"],
            body["isolation_level"],
            body["session_id"],
            body["session_epoch"],
        ),
    ]
    topics = body["topics"]
    out.append(compact_count(len(topics)))
    for t in topics:
        parts = t["partitions"]
        out.append(_topic_head(t, parts))
        out.extend(map(_partition, parts))
        out.append(b"\x00")  # the topic's tagged section
    forgotten = body["forgotten_topics_data"]
    out.append(compact_count(len(forgotten)))
    for t in forgotten:
        ps = t["partitions"]
        out.append(_topic_head(t, ps))
        out.append(struct.pack(f">{len(ps)}i", *ps))
        out.append(b"\x00")
    out.append(_compact_string(body["rack_id"]))
    out.append(b"\x00")  # the body's tagged section
    size = sum(map(len, out)) + 8
    out[0] = _FRAME_HEAD.pack(size, FETCH_KEY, ONE_PARTITION_VERSION, corr)
    return b"".join(out)


def client_header(client_id: str | None) -> bytes:
    """The request header v2 after the correlation id: the client id (a nullable string with
    a 16-bit length) and an empty tagged section."""
    if client_id is None:
        return b"\xff\xff\x00"
    b = client_id.encode("utf-8")
    return struct.pack(">h", len(b)) + b + b"\x00"


def writes(body: dict[str, Any]) -> bool:
    """Whether :func:`request_frame` writes ``body`` (only the keys it knows)."""
    return _BODY_KEYS.issuperset(body)
