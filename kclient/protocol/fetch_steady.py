"""A caught-up reader's usual Fetch request, prepared once and stamped per send.

In an incremental fetch session (KIP-227) a reader that keeps up sends the same request again
and again: the same partitions, sizes and settings, only the correlation id, ``max_wait_ms``,
the session epoch and each partition's fetch offset moving on.  :class:`SteadyFetch` keeps the
Fetch v12 frame of such a request (written once by :func:`~kclient.protocol.fetch_one.request_frame`)
and where those fields sit in it, and writes them in place: a few ``struct`` packs instead of
building the body's dictionaries and encoding them for every poll.  The bytes are the same as
``request_frame`` gives for the body with those values (``tests/protocol/test_fetch_steady.py``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from .fetch_one import (
    _FRAME_HEAD,
    _PARTITION,
    _REQUEST_HEAD,
    _topic_head,
    compact_count,
    request_frame,
)

__all__ = ["SteadyFetch"]

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
#: where the request head's max_wait_ms and session_epoch sit, from its start
_WAIT_AT, _EPOCH_AT = 4, 21
#: where a partition's fetch_offset sits, from the partition's start
_OFFSET_AT = 8


class SteadyFetch:
    """The frame of one Fetch v12 request ``body`` (its ``topics`` listing ``order``'s
    partitions, in any grouping), to send again with new values (:meth:`stamp`)."""

    __slots__ = ("key", "frame", "_wait_at", "_epoch_at", "_offsets_at")

    def __init__(
        self, key: Any, client_header: bytes, body: dict[str, Any], order: Sequence[tuple[str, int]]
    ) -> None:
        #: what the caller matches before reusing it (the shape this frame was written for)
        self.key = key
        self.frame = bytearray(request_frame(0, client_header, body))
        head = _FRAME_HEAD.size + len(client_header)
        self._wait_at, self._epoch_at = head + _WAIT_AT, head + _EPOCH_AT
        pos = head + _REQUEST_HEAD.size + len(compact_count(len(body["topics"])))
        where: dict[tuple[str, int], int] = {}
        for t in body["topics"]:
            parts = t["partitions"]
            pos += len(_topic_head(t, parts))
            for p in parts:
                where[(t["topic"], p["partition"])] = pos + _OFFSET_AT
                pos += _PARTITION.size
            pos += 1  # the topic's tagged section
        if len(where) != len(order) or set(where) != set(order):
            raise ValueError("the body lists other partitions than order names")
        #: each partition's fetch_offset position, in ``order``
        self._offsets_at = [where[k] for k in order]

    def stamp(self, corr: int, max_wait_ms: int, epoch: int, offsets: Sequence[int]) -> bytearray:
        """The frame with correlation id ``corr``, ``max_wait_ms``, session ``epoch`` and the
        partitions' fetch ``offsets`` (in the constructor's ``order``) written in; the next
        call reuses it."""
        frame = self.frame
        _I32.pack_into(frame, 8, corr)
        _I32.pack_into(frame, self._wait_at, max_wait_ms)
        _I32.pack_into(frame, self._epoch_at, epoch)
        for at, offset in zip(self._offsets_at, offsets):
            _I64.pack_into(frame, at, offset)
        return frame
