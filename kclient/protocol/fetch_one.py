"""A Fetch answer holding one partition, read without the generic schema walk.

A consumer reading one partition waits on a long-poll Fetch whose answer carries that
partition's new records; the generic decoder (:meth:`kclient.protocol.schema.Api.decode_response`)
walks the declarative schema field by field for it, on the path from the broker's answer to
the application's record.  :func:`read_one_partition` reads the common answer of Fetch v12 (one
topic, one partition, no aborted transactions listed, no tagged fields) with two ``struct``
unpacks into the very ``Struct`` tree the generic decoder builds (records stay a view of the
frame); any other answer makes it return None, and the caller decodes it the generic way.
``tests/protocol/test_fetch_one.py`` checks that both give equal answers.
"""

from __future__ import annotations

import struct

from .framing import Reader
from .schema import Struct
from .varint import decode_uvarint

__all__ = ["read_one_partition", "reader_for", "ONE_PARTITION_VERSION"]

#: the Fetch version this reader knows (the highest kclient sends)
ONE_PARTITION_VERSION = 12
#: throttle_time_ms, error_code, session_id
_HEAD = struct.Struct(">ihi")
#: partition_index, error_code, high_watermark, last_stable_offset, log_start_offset
_PART = struct.Struct(">ihqqq")
_I32 = struct.Struct(">i")
#: the partition's, the topic's and the answer's tagged sections, each empty
_NO_TAGS = b"\x00\x00\x00"


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
    part = Struct(
        partition_index=index,
        error_code=error,
        high_watermark=high,
        last_stable_offset=stable,
        log_start_offset=start,
        aborted_transactions=[] if listed else None,
        preferred_read_replica=replica,
        records=records,
    )
    return Struct(
        throttle_time_ms=throttle,
        error_code=code,
        session_id=session_id,
        responses=[Struct(topic=topic, partitions=[part])],
    )


def reader_for(version: int) -> Reader | None:
    """The reader for a Fetch answer of ``version`` (None: only the generic decoder)."""
    return read_one_partition if version == ONE_PARTITION_VERSION else None
