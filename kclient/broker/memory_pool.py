"""The request memory pool behind ``queued.max.request.bytes``, as Kafka's SimpleMemoryPool.

Theory of operation.  Kafka's SocketServer gives every request frame a buffer from one pool
shared by all network threads; when the pool is out of memory a connection that needs a buffer
is muted (its socket is not read) until some request is processed and its buffer released.  The
pool is non-strict: an allocation succeeds whenever *any* memory is available, so the pool may
dip below zero by at most one frame (``socket.request.max.bytes``), and a frame larger than what
is left never waits forever.

Here the pool is a ledger of reservations: a frame reserves its announced size when its size
prefix has been read, but the network layer allocates the bytes only as they arrive (see
``network._FrameReader``), so a size prefix alone costs nothing, and what the broker holds for
frames in progress is bounded by the pool plus one frame.  ``queued.max.request.bytes`` = -1
(Kafka's default) means no pool: frames are never muted for memory, only grown as they arrive.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["MemoryPool", "pool_for"]


class MemoryPool:
    """A byte budget shared by the network threads; ``try_allocate`` / ``release`` by size."""

    def __init__(self, capacity: int):
        if capacity <= 0:
            raise ValueError(f"memory pool capacity must be positive, not {capacity}")
        self.capacity = capacity
        self._available = capacity
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    @property
    def available(self) -> int:
        """Bytes not reserved (negative after a non-strict allocation overshot)."""
        return self._available

    @property
    def is_out_of_memory(self) -> bool:
        """True while no allocation can succeed."""
        return self._available <= 0

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` (from the releasing thread) when memory becomes available again."""
        self._listeners.append(callback)

    def try_allocate(self, size: int) -> bool:
        """Reserve ``size`` bytes if any memory is available (non-strict, as Kafka's broker)."""
        if size < 0:
            raise ValueError(f"cannot allocate {size} bytes")
        with self._lock:
            if self._available <= 0:
                return False
            self._available -= size
            return True

    def release(self, size: int) -> None:
        """Give back a reservation; listeners hear of it when the pool had run out."""
        if size <= 0:
            return
        with self._lock:
            was_out = self._available <= 0
            self._available += size
            now_free = was_out and self._available > 0
        if now_free:
            for callback in list(self._listeners):
                callback()

    def __repr__(self) -> str:
        return f"MemoryPool(capacity={self.capacity}, available={self._available})"


def pool_for(queued_max_request_bytes: int, socket_request_max_bytes: int) -> MemoryPool | None:
    """The pool for a broker's settings: None for -1 (unbounded, Kafka's default); as Kafka,
    a bounded pool must hold at least one frame of ``socket.request.max.bytes``."""
    if queued_max_request_bytes <= 0:
        return None
    if queued_max_request_bytes < socket_request_max_bytes:
        raise ValueError(
            f"queued.max.request.bytes ({queued_max_request_bytes}) must be -1 or at least "
            f"socket.request.max.bytes ({socket_request_max_bytes})"
        )
    return MemoryPool(queued_max_request_bytes)
