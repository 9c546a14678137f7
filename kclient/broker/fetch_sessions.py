"""The mini-broker's incremental fetch sessions (KIP-227), kept as Kafka keeps them.

Theory of operation: every Fetch (v7+) gets a :class:`FetchContext` from
:meth:`FetchSessionCache.context`, by its ``session_id`` and ``session_epoch``:

* id 0, epoch -1 (and every request below v7): *sessionless*, the partitions asked, no session;
* epoch 0 (*full*): an existing session of that id is closed, the partitions asked are read and,
  when the cache has a slot (or can evict a session, below), a new session holds them, its id
  in the answer and its next epoch 1; epoch -1 with an id closes that session and reads
  sessionless;
* any other epoch (*incremental*): an unknown id answers FETCH_SESSION_ID_NOT_FOUND, an epoch
  other than the session's next INVALID_FETCH_SESSION_EPOCH (both with no partitions and
  session id 0).  Otherwise the listed partitions are added or updated, the forgotten ones
  removed (a session left empty is closed and the fetch is sessionless), and *every* partition
  of the session is read at the offset it holds; the answer carries only those with records,
  an error, or a high watermark or log start offset other than the one last answered, and
  those move to the end of the session's order (the next read starts with the others).

The cache holds ``max.incremental.fetch.session.cache.slots`` sessions.  A new session takes a
free slot, else evicts the least recently used session when that was unused for
:data:`EVICTION_MS`, else the smallest session older than that (by partition count; a
replica's sessions are privileged over a consumer's) when the new one is not smaller; else no
session is made (the answer's session id is 0).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from kclient.protocol import error_codes as E

__all__ = ["FetchSessionCache", "FetchContext", "PartitionRead", "EVICTION_MS"]

#: How long a session is safe from eviction after its creation and after its last use (Kafka's
#: constant, min.incremental.fetch.session.eviction.ms in KIP-227).
EVICTION_MS = 120_000
INITIAL_EPOCH, FINAL_EPOCH = 0, -1
SESSION_NOT_FOUND = E.FetchSessionIdNotFoundError.errno
INVALID_EPOCH = E.InvalidFetchSessionEpochError.errno
_INT32_MAX = 0x7FFFFFFF

_Key = tuple[str, int]


class PartitionRead(NamedTuple):
    """One partition to read, shaped like a Fetch request's partition entry."""

    partition: int
    fetch_offset: int
    partition_max_bytes: int


class _Session:
    """One session: its partitions (in read order) with the offsets last answered."""

    __slots__ = (
        "id",
        "privileged",
        "partitions",
        "answered",
        "created",
        "last_used",
        "epoch",
        "size",
    )

    def __init__(
        self, sid: int, privileged: bool, partitions: dict[_Key, PartitionRead], now: float
    ) -> None:
        self.id, self.privileged, self.partitions = sid, privileged, partitions
        #: (high watermark, log start offset) last answered per partition
        self.answered: dict[_Key, tuple[int, int]] = {}
        self.created = self.last_used = now
        self.epoch = 1
        self.size = len(partitions)


class FetchContext:
    """What one Fetch reads (:attr:`topics`) and how its answer is shaped (:meth:`answer`)."""

    def __init__(
        self,
        cache: FetchSessionCache,
        topics: list[tuple[str, list[PartitionRead]]],
        *,
        full: bool = False,
        session: _Session | None = None,
        error: int = 0,
        privileged: bool = False,
    ) -> None:
        self.cache, self.topics, self.full = cache, topics, full
        self.session, self.error, self.privileged = session, error, privileged
        self._epoch = session.epoch if session is not None else 0

    def answer(self, response: dict[str, Any]) -> dict[str, Any]:
        """The answer from ``response`` (every partition read): with the session id, and for
        an incremental fetch only the partitions with something new."""
        if self.error:
            return {**response, "error_code": self.error, "session_id": 0, "responses": []}
        session = self.session
        if session is not None:
            return self.cache.incremental_answer(session, self._epoch, response)
        if self.full:
            sid = self.cache.create(self.privileged, self.topics, response)
            return {**response, "session_id": sid}
        return {**response, "session_id": 0}


class FetchSessionCache:
    """The broker's fetch sessions (see the module docstring); thread-safe."""

    def __init__(
        self,
        slots: int,
        eviction_ms: int = EVICTION_MS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.slots, self.eviction_s, self.clock = slots, eviction_ms / 1000.0, clock
        self._sessions: dict[int, _Session] = {}
        self._lock = threading.Lock()
        #: sessions evicted so far (tests, metrics)
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, sid: int) -> bool:
        return sid in self._sessions

    def context(self, body: Any, version: int) -> FetchContext:
        """The context of one Fetch request ``body`` at ``version``."""
        asked = [
            (
                t.topic,
                [
                    PartitionRead(p.partition, p.fetch_offset, p.partition_max_bytes)
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ]
        if version < 7:
            return FetchContext(self, asked)
        sid, epoch = body.session_id, body.session_epoch
        privileged = body.replica_id >= 0
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if sid:
                with self._lock:
                    self._sessions.pop(sid, None)
            return FetchContext(self, asked, full=epoch == INITIAL_EPOCH, privileged=privileged)
        with self._lock:
            session = self._sessions.get(sid)
            if session is None:
                return FetchContext(self, [], error=SESSION_NOT_FOUND)
            if session.epoch != epoch:
                return FetchContext(self, [], error=INVALID_EPOCH)
            _update(session, asked, body.forgotten_topics_data)
            if not session.partitions:
                del self._sessions[sid]
                return FetchContext(self, asked)
            session.last_used = self.clock()
            session.size = len(session.partitions)
            session.epoch = 1 if session.epoch >= _INT32_MAX else session.epoch + 1
            return FetchContext(self, _by_topic(session.partitions.items()), session=session)

    def create(
        self,
        privileged: bool,
        topics: list[tuple[str, list[PartitionRead]]],
        response: dict[str, Any],
    ) -> int:
        """A new session over ``topics`` as answered by ``response``; its id, or 0 when the
        cache has no room for it."""
        parts = {(t, p.partition): p for t, ps in topics for p in ps}
        now = self.clock()
        with self._lock:
            if len(self._sessions) >= self.slots and not self._evict(privileged, len(parts), now):
                return 0
            sid = 0
            while sid == 0 or sid in self._sessions:
                sid = random.randint(1, _INT32_MAX - 1)
            session = self._sessions[sid] = _Session(sid, privileged, parts, now)
            for t in response["responses"]:
                for p in t["partitions"]:
                    hw = -1 if p["error_code"] else p["high_watermark"]
                    session.answered[(t["topic"], p["partition_index"])] = (
                        hw,
                        p["log_start_offset"],
                    )
        return sid

    def incremental_answer(
        self, session: _Session, epoch: int, response: dict[str, Any]
    ) -> dict[str, Any]:
        """``response`` with only the partitions that have something new, the session's
        record of what it answered updated (INVALID_FETCH_SESSION_EPOCH when another request
        of the session came in between)."""
        with self._lock:
            if session.epoch != epoch:
                return {
                    **response,
                    "error_code": INVALID_EPOCH,
                    "session_id": session.id,
                    "responses": [],
                }
            out = []
            for t in response["responses"]:
                keep = []
                for p in t["partitions"]:
                    key = (t["topic"], p["partition_index"])
                    hw, start = p["high_watermark"], p["log_start_offset"]
                    if p["error_code"]:
                        hw = -1  # answered again when the error is gone
                    if (
                        len(p["records"])
                        or p["error_code"]
                        or session.answered.get(key) != (hw, start)
                    ):
                        session.answered[key] = (hw, start)
                        keep.append(p)
                        if key in session.partitions:  # to the end of the read order
                            session.partitions[key] = session.partitions.pop(key)
                if keep:
                    out.append({"topic": t["topic"], "partitions": keep})
            return {**response, "session_id": session.id, "responses": out}

    def _evict(self, privileged: bool, size: int, now: float) -> bool:
        """Make room for a new session of ``size`` partitions (see the module docstring)."""
        sessions = self._sessions.values()
        stale = min(sessions, key=lambda s: (s.last_used, s.id), default=None)
        if stale is not None and now - stale.last_used > self.eviction_s:
            return self._drop(stale)
        old = [
            s
            for s in sessions
            if now - s.created > self.eviction_s or (privileged and not s.privileged)
        ]
        first = min(old, key=lambda s: (s.privileged, s.size, s.id), default=None)
        if first is None or (privileged, size, 0) < (first.privileged, first.size, first.id):
            return False
        return self._drop(first)

    def _drop(self, session: _Session) -> bool:
        del self._sessions[session.id]
        self.evictions += 1
        return True


def _update(
    session: _Session, asked: list[tuple[str, list[PartitionRead]]], forgotten: Iterable[Any]
) -> None:
    """Add or update the partitions listed, remove the forgotten ones."""
    for topic, parts in asked:
        for p in parts:
            session.partitions[(topic, p.partition)] = p
    for f in forgotten:
        for index in f.partitions:
            session.partitions.pop((f.topic, index), None)
            session.answered.pop((f.topic, index), None)


def _by_topic(parts: Iterable[tuple[_Key, PartitionRead]]) -> list[tuple[str, list[PartitionRead]]]:
    """Partitions in order, consecutive ones of a topic together."""
    out: list[tuple[str, list[PartitionRead]]] = []
    for (topic, _), p in parts:
        if out and out[-1][0] == topic:
            out[-1][1].append(p)
        else:
            out.append((topic, [p]))
    return out
