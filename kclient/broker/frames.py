"""Cutting one connection's bytes into request frames, spending memory only as bytes arrive.

Theory of operation.  Between frames one ``recv`` of up to :data:`HEAD_READ` bytes fetches the
next size prefix; complete frames in that chunk (small requests) are decoded where they lie.
A frame that is not complete in the chunk gets a buffer of its own, and the rest is received
straight into it with ``recv_into`` (one call per selector wake-up) and decoded in place, so
Records fields stay views of it.  That buffer starts with the bytes already read; when full and
more bytes are readable it grows to :data:`FIRST_ALLOCATION`, then doubles, never past the
announced size: a 4-byte size prefix alone costs nothing, and a connection holds at most twice
what it actually sent (at least 64 KiB once payload bytes arrive).

Frames larger than :data:`HEAD_READ` also reserve their announced size from the broker's
:class:`~kclient.broker.memory_pool.MemoryPool` (``queued.max.request.bytes``) before any of it
is read.  When the pool refuses, the reader is *starved*: it keeps the size prefix, reads
nothing more, and the network thread mutes the connection until memory is released (when a
reserved request has been answered or its connection closed), as Kafka's Selector mutes channels
under memory pressure.  Small frames are exempt, so heartbeats, metadata and fetch requests go
on while large produce requests wait; per connection they are bounded by the read-ahead.

A size outside ``0..max_frame`` (``socket.request.max.bytes``) raises before anything is
allocated; the caller closes that connection.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from typing import Any

from kclient.protocol.errors import ProtocolDecodeError

from .memory_pool import MemoryPool

__all__ = ["FIRST_ALLOCATION", "HEAD_READ", "FrameReader"]

HEAD_READ = 16 * 1024  # between frames: a size prefix and any small frames after it
FIRST_ALLOCATION = 64 * 1024  # a large frame's first growth; it doubles as bytes arrive

_SIZE = struct.Struct(">i")


class FrameReader:
    """One connection's request framing, with pool reservations for its large frames."""

    __slots__ = (
        "decode",
        "max_frame",
        "pool",
        "chunk",
        "frame",
        "got",
        "need",
        "reserved",
        "held",
        "starved",
    )

    def __init__(
        self, decode: Callable[[Any], Any], max_frame: int, pool: MemoryPool | None = None
    ):
        self.decode = decode
        self.max_frame = max_frame
        self.pool = pool
        self.chunk = b""  # bytes read between frames, not yet cut
        self.frame: bytearray | None = None  # the frame being received (grows to ``need``)
        self.got = 0  # bytes of ``frame`` received so far
        self.need = 0  # the frame's announced size
        self.reserved = 0  # pool bytes held by the frame being received
        self.held = 0  # pool bytes held by the last completed frame
        self.starved = False  # waiting for the pool: read nothing

    def fill(self, sock: socket.socket) -> bool:
        """One receive from ``sock``; False at the end of the stream. Socket errors propagate."""
        frame = self.frame
        if frame is not None:
            if self.got == len(frame):  # full but not complete: grow, up to the frame
                grown = min(self.need, max(FIRST_ALLOCATION, 2 * len(frame)))
                frame += bytes(grown - len(frame))
            n = sock.recv_into(memoryview(frame)[self.got :])
            self.got += n
            return n > 0
        data = sock.recv(HEAD_READ)
        if data:
            self.chunk = self.chunk + data if self.chunk else data
        return bool(data)

    def take(self) -> list[Any]:
        """The requests completed by what was received; raises on a bad size or frame.

        A completed large frame is returned last, and its reservation moves to :attr:`held`
        until :meth:`release_held`.  A refused reservation sets :attr:`starved`; call again once
        the pool has memory."""
        frame = self.frame
        if frame is not None:
            if self.got < self.need:
                return []
            self.frame = None
            self.held, self.reserved = self.held + self.reserved, 0
            return [self.decode(frame)]
        self.starved = False
        data, self.chunk = self.chunk, b""
        view, end, pos = memoryview(data), len(data), 0
        requests: list[Any] = []
        while end - pos >= 4:
            n = _SIZE.unpack_from(data, pos)[0]
            if n < 0 or n > self.max_frame:
                raise ProtocolDecodeError(
                    f"frame size {n} is outside 0..{self.max_frame} (socket.request.max.bytes)"
                )
            start = pos + 4
            if end - start < n:  # the rest goes into a buffer of its own
                if not self._start_frame(n, view[start:]):
                    self.chunk = data[pos:]
                    self.starved = True
                return requests
            requests.append(self.decode(view[start : start + n]))
            pos = start + n
        if pos < end:
            self.chunk = data[pos:]  # part of a size prefix
        return requests

    def _start_frame(self, n: int, have: memoryview) -> bool:
        """Reserve (large frames) and hold the bytes already read; False if the pool refused.
        The buffer grows in :meth:`fill`, once more bytes are readable."""
        if n > HEAD_READ and self.pool is not None:
            if not self.pool.try_allocate(n):
                return False
            self.reserved = n
        self.frame, self.got, self.need = bytearray(have), len(have), n
        return True

    def release_held(self) -> None:
        """The last completed large frame has been handled: give its reservation back."""
        held, self.held = self.held, 0
        if held and self.pool is not None:
            self.pool.release(held)

    def close(self) -> None:
        """The connection is gone: drop buffers and give every reservation back."""
        self.frame, self.chunk = None, b""
        held, self.held, self.reserved = self.held + self.reserved, 0, 0
        if held and self.pool is not None:
            self.pool.release(held)
