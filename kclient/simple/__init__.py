"""The low-level consumer: one broker, stateless requests, each carrying its offset.

::

    from kclient.simple import SimpleConsumer, FetchRequest, OffsetRequest
    with SimpleConsumer("127.0.0.1", 9092, so_timeout=30000, buffer_size=65536,
                        client_id="me") as c:
        for mo in c.fetch(FetchRequest("events", 0, offset=0, max_size=1 << 20)):
            mo.offset, mo.next_offset, mo.message.key, mo.message.value
        c.multifetch([FetchRequest("events", 0, 0), FetchRequest("events", 1, 0)])
        c.get_offsets_before("events", 0, OffsetRequest.LATEST_TIME, max_num_offsets=1)
        cols = c.fetch_columns(FetchRequest("events", 0, offset=0), end_offset=1000)
        cols.offsets, cols.values, cols.keys, cols.timestamps, cols.next_offset

:class:`~kclient.io.fetcher.Fetcher` (the threaded driver of :mod:`kclient.core.fetch`) is the
fetch path under it (partitions at offsets from one connection -> decoded messages,
per-partition errors, high watermarks).
"""

from kclient.core.columns import MessageColumns, message_columns
from kclient.core.message_set import ByteBufferMessageSet, MessageSet
from kclient.core.messages import BatchInfo, Message, MessageAndOffset
from kclient.io.fetcher import DEFAULT_MAX_BUFFER_SIZE, Fetcher, PartitionFetch, PendingFetch

from .consumer import (
    FetchRequest,
    MultiFetchResponse,
    OffsetAndMetadata,
    OffsetRequest,
    SimpleConsumer,
)

__all__ = [
    "SimpleConsumer",
    "FetchRequest",
    "OffsetRequest",
    "MultiFetchResponse",
    "OffsetAndMetadata",
    "Fetcher",
    "PartitionFetch",
    "PendingFetch",
    "DEFAULT_MAX_BUFFER_SIZE",
    "ByteBufferMessageSet",
    "MessageSet",
    "Message",
    "MessageAndOffset",
    "BatchInfo",
    "MessageColumns",
    "message_columns",
]
