"""Partitioners: which partition of a topic a keyed message goes to.

Imports nothing of kclient.  ``partition(key, num_partitions)`` returns ``0 <= p < num_partitions``.

* ``DefaultPartitioner`` -- murmur2 of the key bytes as the Java client computes it
  (``Utils.murmur2``, seed ``0x9747b28c``), ``(murmur2(key) & 0x7fffffff) % n``: the same partition
  the Java producer, librdkafka's ``murmur2`` partitioner and kafka-python choose, in every process
  (Python's salted ``hash()`` is never used).
* ``JavaHashPartitioner`` -- the Scala 0.8 producer's ``Utils.abs(key.hashCode) % n`` with Java's
  ``String.hashCode``; ``abs_mode`` picks between the two ``Utils.abs`` that shipped (see there).
* ``RoundRobinPartitioner`` -- ignores the key, cycles through the partitions (thread-safe).

A null key (``None``) goes to a random partition.  The producer may instead pick among the
partitions that currently have a leader, as the 0.8 ``DefaultEventHandler`` does, before it asks a
partitioner at all.
"""

from __future__ import annotations

import random
import struct
import threading

__all__ = [
    "Partitioner",
    "DefaultPartitioner",
    "Murmur2Partitioner",
    "JavaHashPartitioner",
    "RoundRobinPartitioner",
    "murmur2",
    "to_positive",
    "java_string_hashcode",
]

Key = bytes | bytearray | memoryview | str | None

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_CACHE_MAX = 8192
_BIG_KEY = 64  # above this many bytes, unpack words with struct instead of one big int


def _murmur2_u32(data: bytes, _m: int = _M, _mask: int = _MASK) -> int:
    """Java's ``Utils.murmur2`` as an unsigned 32-bit int (little-endian words, seed 0x9747b28c).

    Hot path: the key is read as one little-endian int and consumed 32 bits at a time; ``h`` is
    masked only once at the end (only its low 32 bits matter); constants are bound as locals.
    """
    length = len(data)
    if length > _BIG_KEY:
        return _murmur2_words(data, _SEED ^ length, length)
    h = _SEED ^ length
    x = int.from_bytes(data, "little")
    n = length >> 2
    while n:
        k = (x * _m) & _mask
        x >>= 32
        k = ((k ^ (k >> 24)) * _m) & _mask
        h = h * _m ^ k
        n -= 1
    if length & 3:
        h = ((h ^ x) * _m) & _mask
    else:
        h &= _mask
    h = ((h ^ (h >> 13)) * _m) & _mask
    return h ^ (h >> 15)


def _murmur2_words(data: bytes, h: int, length: int) -> int:
    """The same hash for long keys: words via struct, so the cost stays linear."""
    end = length & ~3
    for (k,) in struct.iter_unpack("<I", data[:end]):
        k = (k * _M) & _MASK
        k = ((k ^ (k >> 24)) * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    if length & 3:
        h = ((h ^ int.from_bytes(data[end:], "little")) * _M) & _MASK
    h = ((h ^ (h >> 13)) * _M) & _MASK
    return h ^ (h >> 15)


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Java's ``Utils.murmur2(byte[])``: the same signed 32-bit result for the same bytes."""
    h = _murmur2_u32(bytes(data))
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Java's ``Utils.toPositive``: clear the sign bit (``n & 0x7fffffff``)."""
    return n & 0x7FFFFFFF


def java_string_hashcode(s: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ...`` over UTF-16 code units, 32-bit signed."""
    h = 0
    units = s.encode("utf-16-be", "surrogatepass")
    for (u,) in struct.iter_unpack(">H", units):
        h = (31 * h + u) & _MASK
    return h - 0x100000000 if h & 0x80000000 else h


def _key_bytes(key: Key) -> bytes:
    """Key bytes for hashing: str is encoded UTF-8, bytes-likes copied to bytes."""
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise TypeError(
        f"partition key must be bytes, str or None, not {type(key).__name__}; "
        "serialize it first (key.serializer.class)"
    )


def _check_count(num_partitions: int) -> None:
    """Reject a partition count that leaves nothing to choose from."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")


class Partitioner:
    """Interface: map a message key to a partition in ``range(num_partitions)``."""

    def partition(self, key: Key, num_partitions: int) -> int:
        """The partition for ``key`` among ``num_partitions`` partitions."""
        raise NotImplementedError

    def __call__(self, key: Key, num_partitions: int) -> int:
        """Partitioners are also plain callables."""
        return self.partition(key, num_partitions)


class DefaultPartitioner(Partitioner):
    """Java-compatible murmur2 partitioning; null keys go to a random partition."""

    def __init__(self) -> None:
        """Start with an empty cache of recent key hashes (keys repeat; hashing is pure Python)."""
        self._cache: dict[bytes, int] = {}

    def partition(self, key: Key, num_partitions: int) -> int:
        """``(murmur2(key) & 0x7fffffff) % num_partitions``, or random for a null key."""
        if num_partitions <= 0:
            _check_count(num_partitions)
        if key is None:
            return random.randrange(num_partitions)
        if type(key) is not bytes:
            key = _key_bytes(key)
        h = self._cache.get(key)
        if h is None:
            h = self._remember(key)
        return (h & 0x7FFFFFFF) % num_partitions

    def _remember(self, key: bytes) -> int:
        """Hash ``key`` and cache it; the cache is dropped whole when full (bounded memory)."""
        h = _murmur2_u32(key)
        if len(self._cache) >= _CACHE_MAX:
            self._cache = {}
        self._cache[key] = h
        return h


Murmur2Partitioner = DefaultPartitioner


class JavaHashPartitioner(Partitioner):
    """The Scala 0.8 producer's ``Utils.abs(key.hashCode) % n`` for string keys.

    The key's bytes are decoded as UTF-8 and hashed with Java's ``String.hashCode`` (UTF-16 code
    units, 32-bit overflow), which is what the JVM hashed when the key was a ``String`` written by
    ``StringEncoder``.  Kafka shipped two ``Utils.abs``: 0.8.0 and 0.8.1 used ``n & 0x7fffffff``
    (``abs_mode="mask"``, the default here); 0.8.2 used ``0 if n == Int.MinValue else
    math.abs(n)`` (``abs_mode="abs"``).  They differ for every negative hash code, so pick the one
    the Java producers sharing the topic run.  ``Math.abs`` alone is never used: it returns
    ``Integer.MIN_VALUE`` (negative) for ``"polygenelubricants"``; both modes map that to 0.
    """

    def __init__(self, abs_mode: str = "mask") -> None:
        """``abs_mode``: ``"mask"`` (Kafka 0.8.0/0.8.1) or ``"abs"`` (Kafka 0.8.2)."""
        if abs_mode not in ("mask", "abs"):
            raise ValueError(f"abs_mode must be 'mask' or 'abs', got {abs_mode!r}")
        self.abs_mode = abs_mode

    def partition(self, key: Key, num_partitions: int) -> int:
        """``abs(hashCode(key)) % num_partitions``, or random for a null key."""
        _check_count(num_partitions)
        if key is None:
            return random.randrange(num_partitions)
        text = key if isinstance(key, str) else _key_bytes(key).decode("utf-8", "replace")
        h = java_string_hashcode(text)
        if self.abs_mode == "mask":
            return (h & 0x7FFFFFFF) % num_partitions
        return (0 if h == -0x80000000 else abs(h)) % num_partitions


class RoundRobinPartitioner(Partitioner):
    """Ignore the key; hand out 0, 1, 2, ... modulo the partition count (thread-safe)."""

    def __init__(self) -> None:
        """Start the counter at 0."""
        self._next = 0
        self._lock = threading.Lock()

    def partition(self, key: Key, num_partitions: int) -> int:
        """The next partition in turn."""
        _check_count(num_partitions)
        with self._lock:
            n = self._next
            self._next = n + 1
        return n % num_partitions
