"""ShareFetch (key 78) v1-v2: acquire records of a share group's partitions (KIP-932).

The request carries the share session's epoch (0 opens one, -1 closes it), partitions to add
to and forget from the session, and piggy-backed acknowledgements, applied before anything
is acquired.  Records are acquired on every partition of the session, at most
``max_records`` (whole batches may overshoot), and answered with their bytes, their acquired
ranges and delivery counts.  With nothing to hand out the fetch waits (up to ``max_wait_ms``)
for an append to one of the session's partitions.  v2's renew mode (share_acquire_mode 255)
only applies acknowledgements.
"""

from __future__ import annotations

import threading
from concurrent.futures import InvalidStateError
from typing import Any

from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import SHARE_FETCH
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..delayed import DelayedResponse
from ..interface import Broker, body_of
from ..share.coordinator import Acquired
from ..share.requests import Resolved, ack_batches, leader, refusal, resolve
from ..share.sessions import CLOSE, OPEN, ShareSession
from .registry import handles

RENEW_MODE = 255
DEFAULT_MAX_RECORDS = 500
TopicPartition = tuple[str, int]


def _top(code: int, message: str | None = None, lock_ms: int = 0) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "acquisition_lock_timeout_ms": lock_ms,
        "responses": [],
        "node_endpoints": [],
    }


class _Fetch:
    """One ShareFetch after its session and acknowledgement parts: what to answer."""

    def __init__(
        self,
        broker: Broker,
        body: Any,
        session: ShareSession | None,
        resolved: Resolved,
        ack_codes: dict[TopicPartition, int],
    ) -> None:
        self.broker, self.body, self.session = broker, body, session
        self.resolved, self.ack_codes = resolved, ack_codes
        max_records = getattr(body, "max_records", 0) or DEFAULT_MAX_RECORDS
        self.max_records = max_records if max_records > 0 else DEFAULT_MAX_RECORDS

    def acquire(self) -> dict[TopicPartition, Acquired]:
        """Acquire on the session's partitions (nothing without a session)."""
        if self.session is None:
            return {}
        return self.broker.share.acquire(self.session, self.max_records, self.body.max_bytes)

    def answer(self, acquired: dict[TopicPartition, Acquired]) -> dict[str, Any]:
        """The response body: requested partitions, those with records or errors, and
        those with acknowledgement results."""
        by_topic: dict[bytes, dict[int, dict[str, Any]]] = {}
        ids = {name: tid for tid, name in self.resolved.names.items()}
        for (tid, index), code in self.resolved.refused.items():
            by_topic.setdefault(tid, {})[index] = self._entry(None, index, code)
        wanted = [(t.topic_id, p.partition_index) for t in self.body.topics for p in t.partitions]
        keys = [
            (self.resolved.names[bytes(tid)], i)
            for tid, i in wanted
            if bytes(tid) in self.resolved.names
        ]
        for key in dict.fromkeys([*keys, *acquired, *self.ack_codes]):
            topic, index = key
            tid = ids.get(topic) or self.broker.cluster.topic_id(topic)
            code, ranges, data = acquired.get(key, (0, [], b""))
            entry = self._entry(topic, index, code, self.ack_codes.get(key, 0))
            entry["records"] = data
            entry["acquired_records"] = [
                {"first_offset": a, "last_offset": b, "delivery_count": n} for a, b, n in ranges
            ]
            by_topic.setdefault(tid, {})[index] = entry
        lock_ms = self.broker.share.group_settings(self.body.group_id).lock_ms
        return {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "acquisition_lock_timeout_ms": lock_ms,
            "responses": [
                {"topic_id": tid, "partitions": list(parts.values())}
                for tid, parts in by_topic.items()
            ],
            "node_endpoints": [],
        }

    def _entry(self, topic: str | None, index: int, code: int, ack: int = 0) -> dict[str, Any]:
        return {
            "partition_index": index,
            "error_code": code,
            "error_message": None,
            "acknowledge_error_code": ack,
            "acknowledge_error_message": None,
            "current_leader": leader(self.broker, topic, index)
            if topic
            else {"leader_id": -1, "leader_epoch": -1},
            "records": b"",
            "acquired_records": [],
        }


class _Parked:
    """A share fetch that found nothing, parked until an append or ``max_wait_ms``."""

    def __init__(self, fetch: _Fetch) -> None:
        assert fetch.session is not None
        self.fetch, self.future = fetch, DelayedResponse()
        self._lock, self._done = threading.Lock(), False
        broker = fetch.broker
        self._token = broker.watchers.watch(list(fetch.session.partitions), self._wake)
        self._timer = broker.scheduler.call_later(fetch.body.max_wait_ms / 1000, self._expire)
        self.future.on_abandon(self._abandoned)

    def _claim(self) -> bool:
        """Whether this call is the one that ends the wait."""
        with self._lock:
            if self._done:
                return False
            self._done = True
        self.fetch.broker.watchers.unwatch(self._token)
        self.fetch.broker.scheduler.cancel(self._timer)
        return True

    def _wake(self, nbytes: int) -> None:
        if self._claim():
            self._finish()

    def _expire(self) -> None:
        if self._claim():
            self._finish()

    def _abandoned(self) -> None:
        self._claim()

    def _finish(self) -> None:
        """Acquire now and answer (unless the connection went away meanwhile)."""
        if self.future.cancelled():
            return
        try:
            result: Any = self.fetch.answer(self.fetch.acquire())
            self.future.set_result(result)
        except InvalidStateError:
            pass  # abandoned while acquiring: the records stay locked until expiry
        except Exception as exc:  # noqa: BLE001 - handed on to the waiting request
            try:
                self.future.set_exception(exc)
            except InvalidStateError:
                pass


@handles(SHARE_FETCH, "1-2")
def handle(broker: Broker, request: Request) -> Any:
    """Session, acknowledgements, then acquisition (parked when there is nothing yet)."""
    body = body_of(request)
    group_id, member_id, epoch = body.group_id, body.member_id, body.share_session_epoch
    code, message = refusal(broker, request, body)
    if code:
        return _top(code, message)
    resolved = resolve(
        body.topics,
        broker.cluster.topic_by_id,
        lambda name: allowed(broker, request, AclOperation.READ, ResourceType.TOPIC, name),
    )
    acks = ack_batches(body.topics, resolved)
    if epoch == OPEN and acks:
        return _top(E.InvalidRequestError.errno, "Acknowledge data present on initial epoch.")
    add = [
        (resolved.names[bytes(t.topic_id)], p.partition_index)
        for t in body.topics
        if bytes(t.topic_id) in resolved.names
        for p in t.partitions
    ]
    forget = [
        (name, index)
        for t in (body.forgotten_topics_data or ())
        if (name := broker.cluster.topic_by_id(bytes(t.topic_id))) is not None
        for index in t.partitions
    ]
    code, session = broker.share.open_session(
        group_id, member_id, epoch, [] if epoch == CLOSE else add, forget
    )
    if code:
        return _top(code)
    ack_codes = broker.share.acknowledge(group_id, member_id, acks) if acks else {}
    if epoch == CLOSE:
        broker.share.close_session(group_id, member_id)
        session = None
    elif getattr(body, "share_acquire_mode", 0) == RENEW_MODE:
        session = None
    fetch = _Fetch(broker, body, session, resolved, ack_codes)
    acquired = fetch.acquire()
    if acquired or session is None or body.max_wait_ms <= 0 or ack_codes or not session.partitions:
        return fetch.answer(acquired)
    return _Parked(fetch).future
