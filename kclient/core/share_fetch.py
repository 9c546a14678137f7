"""Share fetching (KIP-932), written once for both drivers: share sessions with each leader,
ShareFetch with the acknowledgements of earlier deliveries riding along, the records it
acquires (and their delivery counts), and ShareAcknowledge to settle without fetching.

:class:`ShareFetchState` is what a share consumer holds between polls: one
:class:`ShareSession` per broker, the acquired records not handed out yet, the delivered ones
not settled yet, and the acknowledgements waiting to be sent.  :func:`share_fetch` and
:func:`share_acknowledge` are the conversations; they return :class:`AckOutcome` s, one per
partition and answer, for ``commit_sync`` and the acknowledgement commit callback.
"""

from __future__ import annotations

import logging
import operator
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kclient.errors import (
    InvalidShareSessionEpochError,
    KafkaError,
    ShareSessionNotFoundError,
    UnsupportedVersionError,
    error_for_code,
)
from kclient.protocol.apis import SHARE_ACKNOWLEDGE, SHARE_FETCH
from kclient.structs import AcknowledgeType, ShareConsumerRecord, TopicPartition

from .share_group import ShareMemberState
from .share_records import decode_acquired, pieces, span
from .steps import Conversation, Gather, Request

__all__ = [
    "GAP",
    "ShareFetchConfig",
    "ShareSession",
    "ShareFetchState",
    "AckOutcome",
    "FetchOutcome",
    "ack_batches",
    "share_fetch",
    "share_acknowledge",
]

log = logging.getLogger(__name__)

_OFFSET = operator.attrgetter("offset")
#: an acquired offset with no record to deliver (a control record, a compacted gap)
GAP = 0
_RENEW = int(AcknowledgeType.RENEW)
_ACCEPT = int(AcknowledgeType.ACCEPT)
#: the session is gone or out of step: open a new one (epoch 0)
_SESSION_LOST = (ShareSessionNotFoundError.errno, InvalidShareSessionEpochError.errno)
#: partition errors that call for fresh metadata (the leader moved, the topic changed)
_REFRESH = frozenset(
    {3, 6, 74, 100}
)  # UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER, FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_ID
_MAX_EPOCH = 0x7FFFFFFF


@dataclass(frozen=True)
class ShareFetchConfig:
    """What a ShareFetch asks for (Java's KafkaShareConsumer settings)."""

    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 52428800
    max_records: int = 500
    batch_size: int = 500
    acquire_mode: int = 0  # 0 batch_optimized, 1 record_limit (ShareFetch v2)
    #: a fetch sent ahead takes what is there now (the next poll's own fetch waits): the
    #: poll, commit or close that reads its answer never waits a long poll
    ahead_wait_ms: int = 0
    #: records a member may hold acquired and not handed out, counting a fetch sent ahead's
    #: (which asks for the room left): fewer, larger fetches than one poll's worth each, so
    #: fewer round trips to wait for (Kafka's per-fetch cost dominates small records)
    hold_records: int = 2000
    check_crcs: bool = True


@dataclass
class ShareSession:
    """A share session with one broker: its epoch (0: the next request opens it), the
    partitions it holds, and its requests on the wire not answered yet (a request sent behind
    them takes the epoch they will have moved it to: Kafka answers a connection's requests in
    order)."""

    epoch: int = 0
    partitions: set[TopicPartition] = field(default_factory=set)
    in_flight: int = 0

    def advance(self) -> None:
        self.epoch = _next(self.epoch)

    def send_epoch(self) -> int:
        """The epoch of a request written now: one step past each request still in flight."""
        epoch = self.epoch
        for _ in range(self.in_flight):
            epoch = _next(epoch)
        return epoch

    def reset(self) -> None:
        self.epoch = 0
        self.partitions = set()


def _next(epoch: int) -> int:
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


@dataclass(frozen=True)
class AckOutcome:
    """How the acknowledgements of ``offsets`` of ``tp`` ended (``error`` None: applied)."""

    tp: TopicPartition
    offsets: frozenset[int]
    error: KafkaError | None


@dataclass
class FetchOutcome:
    """What one round of share fetches gave: offsets acquired (records and gaps, decoded when
    taken), acknowledgements settled, and whether metadata is stale."""

    records: int = 0
    acks: list[AckOutcome] = field(default_factory=list)
    refresh: bool = False
    errors: list[KafkaError] = field(default_factory=list)


def ack_batches(acks: Mapping[int, int]) -> list[dict[str, Any]]:
    """Acknowledgement batches for ``{offset: type}``: runs of consecutive offsets, one type
    for the run when they agree, else one per offset."""
    batches: list[dict[str, Any]] = []
    offsets = sorted(acks)
    if offsets and offsets[-1] - offsets[0] + 1 == len(offsets):
        kinds = set(acks.values())
        if len(kinds) == 1:  # the common case: one run, one type (a whole poll accepted)
            return [
                {
                    "first_offset": offsets[0],
                    "last_offset": offsets[-1],
                    "acknowledge_types": [*kinds],
                }
            ]
    i = 0
    while i < len(offsets):
        j = i
        while j + 1 < len(offsets) and offsets[j + 1] == offsets[j] + 1:
            j += 1
        types = [acks[o] for o in offsets[i : j + 1]]
        batches.append(
            {
                "first_offset": offsets[i],
                "last_offset": offsets[j],
                "acknowledge_types": types[:1] if len(set(types)) == 1 else types,
            }
        )
        i = j + 1
    return batches


class ShareFetchState:
    """A share consumer's sessions, buffered and delivered records, and pending acks."""

    def __init__(
        self,
        member: ShareMemberState,
        config: ShareFetchConfig | None = None,
        key: Callable[[Any], Any] | None = None,
        value: Callable[[Any], Any] | None = None,
    ) -> None:
        self.member = member
        self.config = config or ShareFetchConfig()
        self.key, self.value = key, value
        self.sessions: dict[int, ShareSession] = {}
        #: decoded, not handed out: runs of records, each the acquired records of one record
        #: batch (batch_optimized: a poll hands out whole ones); ``buffered`` counts them
        self.buffer: deque[list[ShareConsumerRecord]] = deque()
        self.buffered = 0
        #: acquired, not decoded yet: (partition, its ShareFetch answer); decoded by take(),
        #: so a fetch sent ahead goes out before the records it follows are built
        self.raw: deque[tuple[TopicPartition, Any]] = deque()
        #: offsets acquired in ``raw`` (records and gaps)
        self.raw_count = 0
        #: delivered to the application, not settled: tp -> offsets, but for the records of
        #: ``in_order`` not counted yet (read through :attr:`delivered`, which has both)
        self._delivered: dict[TopicPartition, set[int]] = {}
        #: settled, not sent: tp -> {offset: type} (through :attr:`pending`, likewise)
        self._pending: dict[TopicPartition, dict[int, int]] = {}
        #: the last poll's records (explicit mode), for acceptances in the order delivered:
        #: a face accepts ``in_order[acked]`` by counting it (``acked += 1``), and the records
        #: counted are applied, a partition's run at a time, before the maps are read
        #: (:meth:`_apply_in_order`).  Its records stay out of the delivered sets (no set of
        #: offsets built and emptied again per poll) until a record is settled out of that
        #: order: then the ones not counted go into them and ``in_order`` is emptied
        self.in_order: list[ShareConsumerRecord] | tuple[()] = ()
        self.acked = 0
        self._applied = 0
        #: the runs of ``in_order``: (start, end, partition)
        self._runs: list[tuple[int, int, TopicPartition]] = []
        #: the broker whose session acquired a partition's records (its acks go there)
        self.node_of: dict[TopicPartition, int] = {}
        self.lock_timeout_ms = -1
        #: acknowledge()'s last partition: (tp, its delivered set, its pending acks), None
        #: once those maps change
        self._last: tuple[TopicPartition, set[int], dict[int, int]] | None = None

    # -- the application's side --------------------------------------------------------

    @property
    def delivered(self) -> dict[TopicPartition, set[int]]:
        """Delivered and not settled: tp -> offsets (a copy when records are counted in
        order: change it through :meth:`acknowledge` and :meth:`settle_all`)."""
        if self.acked != self._applied:
            self._apply_in_order()
        if self.acked >= len(self.in_order):
            return self._delivered
        out = {tp: set(held) for tp, held in self._delivered.items()}
        for tp, offsets in self._uncounted():
            out.setdefault(tp, set()).update(offsets)
        return out

    def _uncounted(self) -> Iterator[tuple[TopicPartition, Iterable[int]]]:
        """The records of ``in_order`` not counted yet (delivered, not settled), by run."""
        order, i = self.in_order, self.acked
        if i >= len(order):
            return
        for start, end, tp in self._runs:
            if max(start, i) < end:
                yield tp, _offsets(order, max(start, i), end)

    def _stop_counting(self) -> None:
        """Settle no more records by counting this poll: the ones not counted go into the
        delivered sets (the counted applied first)."""
        if self.acked != self._applied:
            self._apply_in_order()
        delivered = self._delivered
        for tp, offsets in self._uncounted():
            held = delivered.get(tp)
            if held is None:
                held = delivered[tp] = set()
            held.update(offsets)
        self.in_order = ()
        self._last = None

    @property
    def pending(self) -> dict[TopicPartition, dict[int, int]]:
        """Settled and not sent: tp -> {offset: type}."""
        if self.acked != self._applied:
            self._apply_in_order()
        return self._pending

    def _apply_in_order(self) -> None:
        """Settle the records accepted in order since the last time (ACCEPT), a partition's
        run at a time: set and dict operations in C instead of Python per record."""
        lo, hi = self._applied, self.acked
        self._applied = hi
        self._last = None
        order, pending = self.in_order, self._pending
        for start, end, tp in self._runs:
            a, b = max(start, lo), min(end, hi)
            if a >= b:
                continue
            accepted = dict.fromkeys(_offsets(order, a, b), _ACCEPT)
            acks = pending.get(tp)
            if acks is None:
                pending[tp] = accepted
            else:
                acks.update(accepted)

    def held(self) -> int:
        """Records acquired and not handed out (the undecoded counted with their gaps)."""
        return self.buffered + self.raw_count

    def take(self, max_records: int, in_order: bool = False) -> list[ShareConsumerRecord]:
        """Up to ``max_records`` buffered records, now delivered (to be settled).  In
        ``batch_optimized`` mode (Java's default ``share.acquire.mode``) a poll ends at the end
        of a record batch, so it may hand out more, as Java's KafkaShareConsumer does: Kafka
        settles whole batches faster than split ones (per-offset state).  ``in_order``: they
        may be accepted by counting them in :attr:`in_order` (explicit mode)."""
        buffer = self.buffer
        self.decode(max_records)
        whole = self.config.acquire_mode == 0
        if self.in_order:
            self._stop_counting()  # the last poll's records not settled stay delivered
        delivered = self._delivered
        self.in_order, self.acked, self._applied = (), 0, 0
        runs: list[tuple[int, int, TopicPartition]] = []
        out: list[ShareConsumerRecord] = []
        while buffer and len(out) < max_records:
            room = max_records - len(out)
            run = buffer[0]
            if whole or len(run) <= room:
                buffer.popleft()
            else:
                buffer[0] = run[room:]
                run = run[:room]
            start = len(out)
            out += run
            first = run[0]  # a run is of one partition: one set lookup for it
            tp = TopicPartition(first.topic, first.partition)
            runs.append((start, len(out), tp))
            if in_order:  # out of the sets while counted (see in_order)
                continue
            held = delivered.get(tp)
            if held is None:
                held = delivered[tp] = set()
            held.update(map(_OFFSET, run))
        self.buffered -= len(out)
        if in_order and out:
            self.in_order, self._runs = out[:], runs  # (a copy: the caller may change its list)
        return out

    def decode(self, max_records: int, ahead: bool = False) -> bool:
        """Build records from the undecoded answers until ``max_records`` are buffered (or
        none is left), as :meth:`take` does first.  ``ahead``: done by a driver while it waits
        for the brokers (a commit's answer), so the next poll finds its records built; an
        answer that fails to decode is then left for that poll to raise (False)."""
        raw = self.raw
        while self.buffered < max_records and raw:
            tp, p = raw[0]
            failed = None
            try:
                self._acquire(tp, p)
            except Exception as exc:  # noqa: BLE001 - raised below, or by the poll that takes it
                if ahead:
                    return False
                failed = exc
            raw.popleft()
            self.raw_count -= span(p)
            if failed is not None:
                raise failed
        return True

    def acknowledge(self, tp: TopicPartition, offset: int, kind: int, record: Any = None) -> None:
        """Settle a delivered record (RENEW keeps it delivered: it must be settled again).
        Records come in runs of one partition: the last partition's sets are kept (the same
        ``tp`` object: no hashing per record) until the maps they belong to change.
        ``record``: the record itself, to keep accepting the rest in order by counting
        (:attr:`in_order`) when it is the next in that order."""
        if self.acked != self._applied:
            self._apply_in_order()
        if self.in_order and self._step_in_order(record, kind):
            acks = self._pending.get(tp)
            if acks is None:
                acks = self._pending[tp] = {}
            acks[offset] = kind
            return
        last = self._last
        if last is not None and last[0] is tp:
            held, acks = last[1], last[2]
        else:
            found = self._delivered.get(tp)
            if found is None:
                raise _not_delivered(tp, offset)
            held, acks = found, self._pending.setdefault(tp, {})
            self._last = (tp, held, acks)
        if offset not in held:
            raise _not_delivered(tp, offset)
        if kind != _RENEW:
            held.discard(offset)
            if not held:
                del self._delivered[tp]
                self._last = None
        acks[offset] = kind

    def _step_in_order(self, record: Any, kind: int) -> bool:
        """Before a record is settled one by one: past it when it is the next in order (and
        stays settled: True, the caller notes its type), else no counting for the rest of
        this poll's records."""
        i = self.acked
        order = self.in_order
        if i < len(order) and order[i] is record and kind != _RENEW:
            self.acked = self._applied = i + 1
            return True
        self._stop_counting()
        return False

    def settle_all(self, kind: int) -> None:
        """Settle every delivered record as ``kind``: implicit acceptance, or releasing at
        close."""
        self._stop_counting()
        delivered, pending = self._delivered, self._pending
        for tp, offsets in delivered.items():  # (in C: a poll's worth of records each time)
            pending.setdefault(tp, {}).update(dict.fromkeys(offsets, kind))
        delivered.clear()

    def drop_buffered(self) -> int:
        """Forget the records acquired but never handed out (closing): left unacknowledged,
        they are released when the share session closes (a broker that takes back the
        delivery of a closed session's records, as Kafka's newer code does, can; after a
        RELEASE it could not).  Returns how many (gaps included)."""
        n = self.held()
        self.buffer.clear()
        self.buffered = 0
        self.raw.clear()
        self.raw_count = 0
        return n

    def fetch_ahead(self, max_poll_records: int) -> int:
        """How many records the next ShareFetch, sent now as a poll is about to take
        ``max_poll_records``, may ask for: the room left under ``hold_records`` once this
        poll's are taken, or 0 (send none) when that room is under one poll's worth.  What a
        member holds under acquisition locks stays within about ``hold_records`` (whole
        batches may overshoot)."""
        left = max(0, self.held() - max_poll_records)
        if left >= max_poll_records:
            return 0
        return max(max_poll_records, self.config.hold_records - left)

    def unsettled(self) -> int:
        """How many delivered records are not settled."""
        return sum(len(v) for v in self._delivered.values()) + max(
            0, len(self.in_order) - self.acked
        )

    def has_pending(self) -> bool:
        return any(self.pending.values())

    # -- what goes to each broker ------------------------------------------------------

    def _take_acks(self, node: int) -> dict[TopicPartition, dict[int, int]]:
        pending = self.pending
        self._last = None
        taken = {tp: a for tp, a in pending.items() if a and self.node_of.get(tp) == node}
        for tp in taken:
            del pending[tp]
        return taken

    def ack_nodes(self) -> set[int]:
        """The brokers that pending acknowledgements go to."""
        return {self.node_of[tp] for tp, a in self.pending.items() if a and tp in self.node_of}

    def drop_orphans(self) -> list[AckOutcome]:
        """Acknowledgements of partitions no broker delivered (cannot be sent) as failures."""
        out = []
        pending = self.pending
        self._last = None
        for tp in [tp for tp in pending if tp not in self.node_of]:
            out.append(_failed(tp, pending.pop(tp), ShareSessionNotFoundError(f"{tp}")))
        return out

    def _topic(
        self, tps: Iterable[TopicPartition], acks: Mapping[TopicPartition, Any]
    ) -> list[dict[str, Any]]:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp in sorted(tps):
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "acknowledgement_batches": ack_batches(acks.get(tp, {})),
                }
            )
        ids = self.member.topic_ids
        return [{"topic_id": ids[t], "partitions": ps} for t, ps in by_topic.items() if t in ids]

    def fetch_body(
        self,
        session: ShareSession,
        wanted: set[TopicPartition],
        acks: Mapping[TopicPartition, Any],
        max_records: int | None = None,
    ) -> tuple[dict[str, Any], set[TopicPartition], set[TopicPartition]]:
        """A ShareFetch for ``session`` (asking for ``max_records``, default the config's):
        the partitions new to it and those with acknowledgements, the ones it should forget;
        returns (body, added, forgotten)."""
        listed = set(acks) | (wanted - session.partitions)
        forgotten = session.partitions - wanted - set(acks)
        cfg = self.config
        body = {
            "group_id": self.member.group_id,
            "member_id": self.member.member_id,
            "share_session_epoch": session.send_epoch(),
            "max_wait_ms": cfg.max_wait_ms,
            "min_bytes": cfg.min_bytes,
            "max_bytes": cfg.max_bytes,
            "max_records": max_records or cfg.max_records,
            "batch_size": cfg.batch_size,
            "share_acquire_mode": cfg.acquire_mode,
            "topics": self._topic(listed, acks),
            "forgotten_topics_data": [
                {"topic_id": self.member.topic_ids[t], "partitions": sorted(ps)}
                for t, ps in _group(forgotten).items()
                if t in self.member.topic_ids
            ],
        }
        return body, listed, forgotten

    # -- reading answers ---------------------------------------------------------------

    def read_fetch(self, node: int, resp: Any, outcome: FetchOutcome) -> None:
        """Buffer the records a ShareFetch answer acquired; note ack results and errors."""
        names = self.member.topic_names
        for topic in resp.responses:
            name = names.get(bytes(topic.topic_id))
            if name is None:
                outcome.refresh = True
                continue
            for p in topic.partitions:
                tp = TopicPartition(name, p.partition_index)
                if p.error_code:
                    outcome.refresh |= p.error_code in _REFRESH
                    if p.error_code not in _REFRESH:
                        outcome.errors.append(error_for_code(p.error_code)(f"{tp}: share fetch"))
                    continue
                if p.acquired_records:
                    self.node_of[tp] = node
                    n = span(p)
                    self.raw.extend((tp, piece) for piece in pieces(p, self.config.max_records))
                    self.raw_count += n
                    outcome.records += n

    def _acquire(self, tp: TopicPartition, p: Any) -> int:
        """Buffer the acquired records of one partition; offsets with no record are GAPs."""
        runs, gaps, n = decode_acquired(tp, p, self.key, self.value, self.config.check_crcs)
        if n:
            self.buffer.extend(runs)
            self.buffered += n
        if gaps:
            self.pending.setdefault(tp, {}).update(dict.fromkeys(gaps, GAP))
        return n


def _offsets(order: Any, a: int, b: int) -> Iterable[int]:
    """The offsets of ``order[a:b]``, records of one partition in ascending order: a range
    when they are consecutive (the common case), built in C."""
    first, last = order[a].offset, order[b - 1].offset
    if last - first == b - 1 - a:
        return range(first, last + 1)
    return list(map(_OFFSET, order[a:b]))


def _not_delivered(tp: TopicPartition, offset: int) -> ValueError:
    return ValueError(
        f"{tp} offset {offset} was not delivered by this consumer, or is settled already"
    )


def _group(tps: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


def _failed(tp: TopicPartition, acks: Mapping[int, int], error: KafkaError | None) -> AckOutcome:
    """The outcome for ``acks``: the offsets of records (gaps left out), with ``error``."""
    if GAP in acks.values():
        return AckOutcome(tp, frozenset(o for o, t in acks.items() if t != GAP), error)
    return AckOutcome(tp, frozenset(acks), error)


def _ack_outcomes(
    acks: Mapping[TopicPartition, Mapping[int, int]],
    resp: Any,
    names: Mapping[bytes, str],
    code_of: Callable[[Any], int],
) -> list[AckOutcome]:
    """One outcome per acknowledged partition of an answer (a partition it does not name
    succeeded, as Kafka's client reads it)."""
    errors: dict[TopicPartition, int] = {}
    for topic in resp.responses:
        name = names.get(bytes(topic.topic_id))
        for p in topic.partitions:
            if name is not None:
                errors[TopicPartition(name, p.partition_index)] = code_of(p)
    out = []
    for tp, a in acks.items():
        code = errors.get(tp, 0)
        err = error_for_code(code)(f"{tp}: acknowledgement") if code else None
        outcome = _failed(tp, a, err)
        if outcome.offsets:
            out.append(outcome)
    return out


def _lost(
    session: ShareSession, acks: Mapping[TopicPartition, Mapping[int, int]], error: KafkaError
) -> list[AckOutcome]:
    session.reset()
    return [o for tp, a in acks.items() if (o := _failed(tp, a, error)).offsets]


def share_fetch(
    state: ShareFetchState,
    wanted: Mapping[int, set[TopicPartition]],
    max_wait_ms: int | None = None,
    max_records: int | None = None,
) -> Conversation[FetchOutcome]:
    """One round: a ShareFetch to every broker with partitions to fetch or acknowledgements to
    send (acknowledgements ride along; a broker with only acknowledgements and a renewal among
    them gets a ShareAcknowledge), all in flight at once; ``max_records`` (default the
    config's) is what each may acquire."""
    outcome = FetchOutcome(acks=state.drop_orphans())
    requests: list[Request] = []
    sent: list[
        tuple[
            int,
            ShareSession,
            dict[TopicPartition, dict[int, int]],
            set[TopicPartition],
            set[TopicPartition],
            bool,
        ]
    ] = []
    for node in sorted(set(wanted) | state.ack_nodes()):
        session = state.sessions.setdefault(node, ShareSession())
        acks = state._take_acks(node)
        if session.epoch == 0 and acks:  # a new session cannot carry acknowledgements
            outcome.acks += _lost(session, acks, ShareSessionNotFoundError(f"broker {node}"))
            acks = {}
        renew = any(_RENEW in a.values() for a in acks.values())
        if renew or not wanted.get(node):
            if acks:
                requests.append(_ack_request(state, session, acks, False, renew, node))
                sent.append((node, session, acks, set(), set(), True))
            continue
        body, added, forgotten = state.fetch_body(session, wanted[node], acks, max_records)
        if max_wait_ms is not None:
            body["max_wait_ms"] = max(0, min(body["max_wait_ms"], max_wait_ms))
        requests.append(Request(SHARE_FETCH, body, node=node))
        sent.append((node, session, acks, added, forgotten, False))
    if not requests:
        return outcome
    answers = yield from _on_the_wire(requests, [s[1] for s in sent])
    names = state.member.topic_names
    for (node, session, acks, added, forgotten, ack_only), answer in zip(sent, answers):
        if isinstance(answer, KafkaError):
            outcome.errors.append(answer)
            outcome.acks += _lost(session, acks, answer)
            continue
        if isinstance(answer, BaseException):
            raise answer
        if answer.error_code:
            err = error_for_code(answer.error_code)(f"share session with broker {node}")
            outcome.acks += _lost(session, acks, err)
            if answer.error_code not in _SESSION_LOST:
                outcome.errors.append(err)
            continue
        session.advance()
        session.partitions = (session.partitions | added) - forgotten
        if ack_only:
            outcome.acks += _ack_outcomes(acks, answer, names, lambda p: p.error_code)
            continue
        if answer.acquisition_lock_timeout_ms > 0:
            state.lock_timeout_ms = answer.acquisition_lock_timeout_ms
        outcome.acks += _ack_outcomes(acks, answer, names, lambda p: p.acknowledge_error_code)
        state.read_fetch(node, answer, outcome)
    return outcome


def _on_the_wire(requests: list[Request], sessions: list[ShareSession]) -> Conversation[Any]:
    """Send ``requests`` (one per session) together: each session counts its request in
    flight until the answers are back (or the conversation is dropped), so a request written
    behind it takes the next epoch."""
    for session in sessions:
        session.in_flight += 1
    try:
        return (yield Gather(tuple(requests)))
    finally:
        for session in sessions:
            session.in_flight -= 1


def _ack_request(
    state: ShareFetchState,
    session: ShareSession,
    acks: Mapping[TopicPartition, Mapping[int, int]],
    final: bool,
    renew: bool,
    node: int,
) -> Request:
    topics = state._topic(acks, acks)
    epoch = -1 if final else session.send_epoch()

    def body(version: int) -> dict[str, Any]:
        if renew and version < 2:
            raise UnsupportedVersionError(
                f"renewing an acquisition lock needs ShareAcknowledge v2 (the broker has v{version})"
            )
        return {
            "group_id": state.member.group_id,
            "member_id": state.member.member_id,
            "share_session_epoch": epoch,
            "is_renew_ack": renew,
            "topics": topics,
        }

    return Request(SHARE_ACKNOWLEDGE, body, node=node)


def share_acknowledge(
    state: ShareFetchState, final: bool = False
) -> Conversation[list[AckOutcome]]:
    """Send the pending acknowledgements now (ShareAcknowledge to each broker, all in flight at
    once); ``final`` closes every share session as well (epoch -1), as closing a consumer does."""
    outcomes = state.drop_orphans()
    requests: list[Request] = []
    sent: list[tuple[int, ShareSession, dict[TopicPartition, dict[int, int]]]] = []
    nodes = sorted(state.ack_nodes() | (set(state.sessions) if final else set()))
    for node in nodes:
        session = state.sessions.setdefault(node, ShareSession())
        acks = state._take_acks(node)
        if session.epoch == 0:
            outcomes += _lost(session, acks, ShareSessionNotFoundError(f"broker {node}"))
            continue
        renew = any(_RENEW in a.values() for a in acks.values())
        requests.append(_ack_request(state, session, acks, final, renew, node))
        sent.append((node, session, acks))
    if not requests:
        return outcomes
    answers = yield from _on_the_wire(requests, [s[1] for s in sent])
    names = state.member.topic_names
    for (node, session, acks), answer in zip(sent, answers):
        if isinstance(answer, KafkaError):
            outcomes += _lost(session, acks, answer)
            continue
        if isinstance(answer, BaseException):
            raise answer
        if answer.error_code:
            err = error_for_code(answer.error_code)(f"share session with broker {node}")
            outcomes += _lost(session, acks, err)
            continue
        if final:
            session.reset()
        else:
            session.advance()
        outcomes += _ack_outcomes(acks, answer, names, lambda p: p.error_code)
    if final:
        state.sessions.clear()
    return outcomes
