"""Incremental fetch sessions (KIP-227): the client's half, once for every reader.

Theory of operation: a :class:`FetchSession` is what one broker holds for one reader between
Fetch requests (v7+).  The first request is *full* (every partition, ``session_epoch`` 0); the
broker answers with a ``session_id`` (0: it made no session, so the next request is full again)
and every partition.  From then on each request is *incremental* (``session_id`` and the next
epoch, 1, 2, ...): it lists only the partitions that are new or whose offset or size changed
since the last request, and names in ``forgotten_topics_data`` those no longer wanted; the
broker fetches the others at the offsets it keeps and answers only the partitions with
something new (records, a changed high watermark, log start or last stable offset, an error).
A partition left out of an incremental answer had nothing new: :attr:`FetchSession.known` keeps
the offsets it last reported, so every reader still gets one message set per partition asked.

The session holds exactly one request at a time (the drivers keep one Fetch in flight per
broker): :meth:`~FetchSession.body` builds it and makes what it asked the session's partitions,
:meth:`~FetchSession.answer` takes the answer's session fields.  FETCH_SESSION_ID_NOT_FOUND
(the broker evicted or forgot it) starts a new session, INVALID_FETCH_SESSION_EPOCH closes it
and starts a new one; both answers carry no data, so the reader asks again, in full.  A lost
answer (:meth:`~FetchSession.failed`) makes the next request full.  :meth:`~FetchSession.close_body`
ends the session (epoch -1) when the reader closes.  Oversized-entry refetches stay sessionless
(``session_epoch`` -1), so they never move the session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kclient.protocol.error_codes import FetchSessionIdNotFoundError, InvalidFetchSessionEpochError
from kclient.protocol.fetch_one import ONE_PARTITION_VERSION, client_header
from kclient.protocol.fetch_steady import SteadyFetch

from .fetch import FetchSettings, PartitionFetch, fetch_body

if TYPE_CHECKING:
    from kclient.protocol.messages import FetchResponse

__all__ = ["FetchSession", "MIN_VERSION", "INITIAL_EPOCH", "FINAL_EPOCH", "SESSION_ERRORS"]

#: The first Fetch version with sessions.
MIN_VERSION = 7
#: ``session_epoch`` of a full request that opens a session, and of one that closes it.
INITIAL_EPOCH, FINAL_EPOCH = 0, -1
SESSION_NOT_FOUND = FetchSessionIdNotFoundError.errno
INVALID_EPOCH = InvalidFetchSessionEpochError.errno
#: Top-level errors that mean "ask again, in full".
SESSION_ERRORS = frozenset({SESSION_NOT_FOUND, INVALID_EPOCH})
_INT32_MAX = 0x7FFFFFFF

_Key = tuple[str, int]


class FetchSession:
    """One reader's fetch session with one broker (see the module docstring)."""

    __slots__ = (
        "id",
        "epoch",
        "partitions",
        "known",
        "_full",
        "full_requests",
        "incremental_requests",
        "last_partitions",
        "steady_requests",
        "_steady",
    )

    def __init__(self) -> None:
        #: the broker's session id (0: none yet) and the epoch of the next request
        self.id = 0
        self.epoch = INITIAL_EPOCH
        #: what the broker's session holds: (topic, partition) -> (offset, max bytes)
        self.partitions: dict[_Key, tuple[int, int]] = {}
        #: (topic, partition) -> (high watermark, last stable offset, log start) last answered
        self.known: dict[_Key, tuple[int, int, int]] = {}
        self._full: bool | None = None
        #: requests built, full and incremental, and the partitions the last one listed
        self.full_requests = self.incremental_requests = self.last_partitions = 0
        #: requests sent from the prepared frame of a caught-up reader's usual request
        self.steady_requests = 0
        self._steady: SteadyFetch | None = None

    def body(
        self, asked: Sequence[PartitionFetch], settings: FetchSettings, version: int
    ) -> dict[str, Any]:
        """The Fetch request for ``asked`` at ``version``: full or incremental; sessionless
        below v7."""
        if version < MIN_VERSION:
            self._full = None
            return fetch_body(asked, settings)
        want = {(r.topic, r.partition): (r.offset, min(r.max_bytes, _INT32_MAX)) for r in asked}
        if self.epoch == INITIAL_EPOCH:
            body = fetch_body(asked, settings)
            self._full = True
            self.full_requests += 1
            self.known = {}
            self.last_partitions = len(asked)
        else:
            self._full = False
            self.incremental_requests += 1
            old = self.partitions
            changed = [
                r for r in asked if old.get((r.topic, r.partition)) != want[(r.topic, r.partition)]
            ]
            gone = [k for k in old if k not in want]
            for k in gone:
                self.known.pop(k, None)
            body = fetch_body(asked, settings, changed)
            body["forgotten_topics_data"] = _forgotten(gone)
            self.last_partitions = len(changed)
        body["session_id"], body["session_epoch"] = self.id, self.epoch
        self.partitions = want
        return body

    def request(
        self,
        asked: Sequence[PartitionFetch],
        settings: FetchSettings,
        version: int,
        client_id: str | None,
    ) -> dict[str, Any] | Callable[[int], bytearray]:
        """The request for ``asked``, for a driver to send: :meth:`body`'s, or for a caught-up
        reader's usual request (:meth:`steady`) the frame kept from the last one, as a function
        of the correlation id that stamps it (the same bytes the body would encode to,
        :class:`~kclient.protocol.fetch_steady.SteadyFetch`)."""
        steady, key = self._steady, _steady_key(asked, settings, version, self.id)
        if steady is not None and steady.key == key:
            epoch = self.steady(asked)  # None: not the usual request after all
            if epoch is not None:
                self.steady_requests += 1
                wait, offsets = settings.max_wait_ms, [r.offset for r in asked]
                return lambda corr: steady.stamp(corr, wait, epoch, offsets)
        body = self.body(asked, settings, version)
        if _steady_shape(body, asked, version):
            self._steady = SteadyFetch(  # (self.id is the same: body() does not move it)
                key,
                client_header(client_id),
                body,
                [(r.topic, r.partition) for r in asked],
            )
        return body

    def steady(self, asked: Sequence[PartitionFetch]) -> int | None:
        """The epoch of the incremental request :meth:`body` would build for ``asked`` when it
        is a caught-up reader's usual one (the session's partitions, sizes unchanged, every
        offset moved on, so all listed and none forgotten), taken as :meth:`body` takes it;
        None, the session untouched, for any other request (build it with :meth:`body`)."""
        old = self.partitions
        if self.epoch == INITIAL_EPOCH or len(old) != len(asked):
            return None
        want = {}
        for r in asked:
            key = (r.topic, r.partition)
            had = old.get(key)
            size = min(r.max_bytes, _INT32_MAX)
            if had is None or had[0] == r.offset or had[1] != size:
                return None
            want[key] = (r.offset, size)
        self._full = False
        self.incremental_requests += 1
        self.last_partitions = len(asked)
        self.partitions = want
        return self.epoch

    def answer(self, resp: FetchResponse) -> bool:
        """Take the session fields of the answer to the last :meth:`body`; False for a session
        error (the answer has no data: ask again, the next request is full)."""
        full, self._full = self._full, None
        if full is None:
            return True
        code = getattr(resp, "error_code", 0)  # (absent before Fetch v7)
        if code:
            if code == SESSION_NOT_FOUND:
                self.id = 0
            self.epoch = INITIAL_EPOCH
            return code not in SESSION_ERRORS
        sid = resp.session_id
        if sid == 0:
            self.id, self.epoch = 0, INITIAL_EPOCH
        elif full:
            self.id, self.epoch = sid, 1
        else:
            self.epoch = 1 if self.epoch >= _INT32_MAX else self.epoch + 1
        known = self.known
        for t in resp.responses:
            for p in t.partitions:
                known[(t.topic, p.partition_index)] = (
                    p.high_watermark,
                    p.last_stable_offset,
                    p.log_start_offset,
                )
        return True

    def failed(self) -> None:
        """The answer to the last request was lost: the next request is full (and, carrying
        the old id, closes the broker's session before opening a new one)."""
        self._full = None
        self.epoch = INITIAL_EPOCH

    def close_body(self, settings: FetchSettings) -> dict[str, Any] | None:
        """The request ending the session (epoch -1, no partitions), or None without one;
        the session is new again after it."""
        if self.id == 0:
            return None
        body = fetch_body((), settings)
        body.update(max_wait_ms=0, session_id=self.id, session_epoch=FINAL_EPOCH, max_bytes=0)
        self.id, self.epoch, self.partitions, self.known, self._full = (
            0,
            INITIAL_EPOCH,
            {},
            {},
            None,
        )
        return body


def _forgotten(keys: Sequence[_Key]) -> list[dict[str, Any]]:
    topics: dict[str, list[int]] = {}
    for t, p in keys:
        topics.setdefault(t, []).append(p)
    return [{"topic": t, "partitions": ps} for t, ps in topics.items()]


def _steady_key(
    asked: Sequence[PartitionFetch], settings: FetchSettings, version: int, sid: int
) -> tuple[object, ...]:
    """What a :class:`SteadyFetch` frame was written for: everything in the request but the
    correlation id, max wait, epoch and offsets."""
    return (
        version,
        sid,
        settings.min_bytes,
        settings.max_bytes,
        settings.isolation_level,
        tuple([(r.topic, r.partition, r.max_bytes) for r in asked]),
    )


def _steady_shape(body: dict[str, Any], asked: Sequence[PartitionFetch], version: int) -> bool:
    """Whether ``body`` is a caught-up reader's usual request: incremental at Fetch v12,
    listing every partition asked and forgetting none (then its frame is kept)."""
    if version != ONE_PARTITION_VERSION or body["session_epoch"] in (INITIAL_EPOCH, FINAL_EPOCH):
        return False
    listed = sum(len(t["partitions"]) for t in body["topics"])
    return listed == len(asked) and not body["forgotten_topics_data"]
