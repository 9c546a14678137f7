"""The share-fetch core's pure parts: acknowledgement batches, what a ShareFetch asks in a
share session, and reading acquired records (delivery counts, gaps) from real record batches."""

from __future__ import annotations

import pytest

from kclient.core.share_fetch import (
    GAP,
    AckOutcome,
    FetchOutcome,
    ShareFetchConfig,
    ShareFetchState,
    ShareSession,
    ack_batches,
    share_acknowledge,
    share_fetch,
)
from kclient.core.share_group import ShareMemberState
from kclient.errors import CorruptRecordError, InvalidShareSessionEpochError
from kclient.protocol.records.v2_build import build_batch
from kclient.protocol.schema import Struct
from kclient.structs import AcknowledgeType, TopicPartition

TID = bytes(range(16))
T0, T1 = TopicPartition("jobs", 0), TopicPartition("jobs", 1)


def _state(**config):
    member = ShareMemberState("g")
    member.topic_ids["jobs"] = TID
    member.topic_names[TID] = "jobs"
    return ShareFetchState(member, ShareFetchConfig(**config))


def test_ack_batches_coalesce_runs_and_keep_mixed_types_per_offset():
    assert ack_batches({5: 1, 6: 1, 7: 1, 9: 3}) == [
        {"first_offset": 5, "last_offset": 7, "acknowledge_types": [1]},
        {"first_offset": 9, "last_offset": 9, "acknowledge_types": [3]},
    ]
    assert ack_batches({0: 1, 1: 2, 2: 0}) == [
        {"first_offset": 0, "last_offset": 2, "acknowledge_types": [1, 2, 0]}
    ]
    assert ack_batches({}) == []
    # one run of one type (unordered keys, as a dict filled out of order holds them)
    assert ack_batches({12: 2, 10: 2, 11: 2}) == [
        {"first_offset": 10, "last_offset": 12, "acknowledge_types": [2]}
    ]
    assert ack_batches({3: 0}) == [{"first_offset": 3, "last_offset": 3, "acknowledge_types": [0]}]


def test_a_new_session_lists_every_partition_later_ones_only_changes():
    state = _state()
    session = ShareSession()
    body, added, forgotten = state.fetch_body(session, {T0, T1}, {})
    assert body["share_session_epoch"] == 0 and added == {T0, T1} and not forgotten
    assert [p["partition_index"] for p in body["topics"][0]["partitions"]] == [0, 1]
    session.advance()
    session.partitions = {T0, T1}
    body, added, forgotten = state.fetch_body(session, {T0}, {T0: {4: 1}})
    assert body["share_session_epoch"] == 1
    assert body["topics"] == [
        {
            "topic_id": TID,
            "partitions": [
                {
                    "partition_index": 0,
                    "acknowledgement_batches": [
                        {"first_offset": 4, "last_offset": 4, "acknowledge_types": [1]}
                    ],
                }
            ],
        }
    ]
    assert body["forgotten_topics_data"] == [{"topic_id": TID, "partitions": [1]}]


def _answer(records: bytes, acquired):
    part = Struct(
        partition_index=0,
        error_code=0,
        acknowledge_error_code=0,
        records=records,
        acquired_records=[
            Struct(first_offset=a, last_offset=b, delivery_count=c) for a, b, c in acquired
        ],
    )
    return Struct(responses=[Struct(topic_id=TID, partitions=[part])])


def test_only_acquired_records_are_delivered_with_their_counts_and_gaps_are_acknowledged():
    batch = build_batch([b"a", b"b", b"c", b"d"], base_offset=10, offset_deltas=[0, 1, 3, 4])
    state = _state()
    outcome = FetchOutcome()
    # offsets 10, 11, 13, 14 exist; 12 is a compacted gap; 14 was not acquired
    state.read_fetch(3, _answer(batch, [(10, 10, 1), (11, 13, 2)]), outcome)
    assert outcome.records == 4 and state.held() == 4  # offsets acquired, decoded when taken
    got = state.take(10)
    assert [(r.offset, r.value, r.delivery_count) for r in got] == [
        (10, b"a", 1),
        (11, b"b", 2),
        (13, b"c", 2),
    ]
    assert state.pending == {T0: {12: GAP}} and state.node_of[T0] == 3
    state.acknowledge(T0, 11, AcknowledgeType.RENEW)
    assert state.unsettled() == 3  # a renewed record still needs settling
    state.acknowledge(T0, 11, AcknowledgeType.REJECT)
    with pytest.raises(ValueError, match="not delivered"):
        state.acknowledge(T0, 11, AcknowledgeType.ACCEPT)
    state.settle_all(int(AcknowledgeType.ACCEPT))
    assert state.pending == {T0: {12: GAP, 11: 3, 10: 1, 13: 1}} and state.unsettled() == 0


def test_fetching_ahead_is_bounded_and_closing_leaves_undelivered_records_unacknowledged():
    batch = build_batch([b"a", b"b", b"c", b"d", b"e"], base_offset=0)
    state = _state(acquire_mode=1)  # record_limit: a poll may split a record batch
    state.read_fetch(3, _answer(batch, [(0, 4, 1)]), FetchOutcome())
    assert not state.buffer and state.held() == 5  # not decoded before a poll takes them
    assert not state.fetch_ahead(2)  # a poll takes 2, 3 would stay: more than a poll's worth
    assert [r.offset for r in state.take(2)] == [0, 1]
    assert state.held() == 3 and state.fetch_ahead(2) == 2000 - 1  # the room left it asks for
    assert [r.headers for r in state.take(1)] == [[]]
    state.settle_all(int(AcknowledgeType.ACCEPT))
    assert state.drop_buffered() == 2  # offsets 3, 4: left to the session's close, not RELEASEd
    assert state.pending == {T0: {0: 1, 1: 1, 2: 1}} and state.held() == 0


def test_acknowledging_after_the_acknowledgements_were_taken_starts_a_new_set():
    """acknowledge() keeps the last partition's sets; taking the acknowledgements for a request
    (or settling all) must not leave it writing into a set already sent."""
    state = _state()
    batch = build_batch([b"a", b"b", b"c", b"d"], base_offset=0)
    state.read_fetch(3, _answer(batch, [(0, 3, 1)]), FetchOutcome())
    got = state.take(4)
    tp = TopicPartition("jobs", 0)  # one object for every call, as the faces pass it
    state.acknowledge(tp, got[0].offset, 1)
    sent = state._take_acks(3)
    assert sent == {T0: {0: 1}}
    state.acknowledge(tp, got[1].offset, 2)
    assert sent == {T0: {0: 1}} and state.pending == {T0: {1: 2}}
    state.acknowledge(tp, got[2].offset, 1)
    state.acknowledge(tp, got[3].offset, 1)  # the partition's last: its delivered set goes
    assert state.delivered == {} and state.pending == {T0: {1: 2, 2: 1, 3: 1}}
    with pytest.raises(ValueError, match="not delivered"):
        state.acknowledge(tp, got[3].offset, 1)


def test_batch_optimized_polls_hand_out_whole_record_batches():
    """share.acquire.mode batch_optimized (Java's default): a poll ends where a record batch
    ends, so it may hand out more than max.poll.records (Kafka settles whole batches faster);
    record_limit splits them."""
    batches = build_batch([b"a", b"b", b"c"], base_offset=0) + build_batch(
        [b"d", b"e", b"f", b"g"], base_offset=3
    )
    # offset 1 was not acquired (another member holds it): the first batch's run is 0, 2
    acquired = [(0, 0, 1), (2, 6, 1)]
    whole = _state()
    whole.read_fetch(3, _answer(batches, acquired), FetchOutcome())
    assert [r.offset for r in whole.take(1)] == [0, 2]
    assert [r.offset for r in whole.take(2)] == [3, 4, 5, 6]
    assert whole.held() == 0 and whole.unsettled() == 6
    split = _state(acquire_mode=1)
    split.read_fetch(3, _answer(batches, acquired), FetchOutcome())
    assert [[r.offset for r in split.take(3)] for _ in range(3)] == [[0, 2, 3], [4, 5, 6], []]


def _fetched(state, node=3, offsets=(0, 3)):
    """``state`` holding ``offsets`` of T0, delivered by ``node`` in a session at epoch 5."""
    first, last = offsets
    batch = build_batch([b"x"] * (last - first + 1), base_offset=first)
    state.sessions[node] = ShareSession(epoch=5, partitions={T0})
    state.read_fetch(node, _answer(batch, [(first, last, 1)]), FetchOutcome())
    return state.take(100)


def _fetch_answer(error_code=0):
    return Struct(
        error_code=error_code, acquisition_lock_timeout_ms=30000, responses=[], node_endpoints=[]
    )


def _ack_answer(error_code=0):
    return Struct(error_code=error_code, responses=[], node_endpoints=[])


def _epoch(request) -> int:
    body = request.body(1) if callable(request.body) else request.body
    return body["share_session_epoch"]


def test_acknowledgements_sent_behind_a_fetch_in_flight_take_the_next_epoch():
    """commit_sync writes its ShareAcknowledge behind a fetch sent ahead and not answered yet:
    the session's requests on the wire count, so its epoch is the fetch's plus one, and the
    session ends two steps on once both are answered (Kafka answers them in order)."""
    state = _state()
    got = _fetched(state)
    fetch = share_fetch(state, {3: {T0}}, 0, 100)
    (request,) = fetch.send(None).requests
    assert _epoch(request) == 5 and state.sessions[3].in_flight == 1
    for r in got:
        state.acknowledge(T0, r.offset, int(AcknowledgeType.ACCEPT))
    ack = share_acknowledge(state)
    (behind,) = ack.send(None).requests
    assert _epoch(behind) == 6 and state.sessions[3].in_flight == 2
    with pytest.raises(StopIteration) as done:
        fetch.send([_fetch_answer()])
    assert done.value.value.errors == [] and state.sessions[3].epoch == 6
    with pytest.raises(StopIteration) as done:
        ack.send([_ack_answer()])
    assert done.value.value == [AckOutcome(T0, frozenset(range(4)), None)]
    assert state.sessions[3].epoch == 7 and state.sessions[3].in_flight == 0
    # a conversation dropped before its answers (an interrupt) no longer counts
    dropped = share_fetch(state, {3: {T0}}, 0, 100)
    dropped.send(None)
    dropped.close()
    assert state.sessions[3].in_flight == 0 and state.sessions[3].send_epoch() == 7


def test_acknowledgements_behind_a_fetch_that_lost_the_session_fail_and_are_not_dropped():
    """The fetch ahead finds its session gone: the acknowledgements written behind it are
    answered with an error too, and commit_sync reports them failed (the records come back
    after their lock), never as applied; the next fetch opens a new session."""
    state = _state()
    got = _fetched(state)
    fetch = share_fetch(state, {3: {T0}}, 0, 100)
    fetch.send(None)
    for r in got:
        state.acknowledge(T0, r.offset, int(AcknowledgeType.ACCEPT))
    ack = share_acknowledge(state)
    ack.send(None)
    lost = InvalidShareSessionEpochError.errno
    with pytest.raises(StopIteration):
        fetch.send([_fetch_answer(lost)])
    assert state.sessions[3].epoch == 0
    with pytest.raises(StopIteration) as done:
        ack.send([_ack_answer(lost)])
    (outcome,) = done.value.value
    assert outcome.offsets == frozenset(range(4))
    assert isinstance(outcome.error, InvalidShareSessionEpochError)
    assert state.sessions[3].epoch == 0 and state.sessions[3].in_flight == 0
    assert not state.has_pending()


def test_an_answer_that_does_not_decode_is_left_by_decoding_ahead_and_raised_by_the_poll():
    bad = bytearray(build_batch([b"a", b"b"], base_offset=10))
    bad[-1] ^= 0xFF  # the batch's CRC no longer matches
    state = _state()
    state.read_fetch(3, _answer(bytes(bad), [(10, 11, 1)]), FetchOutcome())
    assert state.decode(10, ahead=True) is False  # left for the poll that takes it
    assert len(state.raw) == 1 and state.raw_count == 2
    with pytest.raises(CorruptRecordError, match="CRC"):
        state.take(10)
    assert len(state.raw) == 0 and state.raw_count == 0  # raised once, not again
    assert state.take(10) == []


def test_records_accepted_in_order_are_counted_and_applied_a_run_at_a_time():
    """take(in_order=True): accepting the next record in delivery order is a count; the counted
    records land in the maps (once, as ACCEPT) when they are read, the caller's list may change,
    and a record settled out of that order (or renewed) ends the counting for the poll."""
    batches = build_batch([b"a", b"b", b"c"], base_offset=0) + build_batch(
        [b"d", b"e"], base_offset=3
    )
    state = _state()
    state.read_fetch(3, _answer(batches, [(0, 4, 1)]), FetchOutcome())
    got = state.take(10, in_order=True)
    assert [r.offset for r in got] == [0, 1, 2, 3, 4] and state.in_order == got
    state.acked = 2  # what a face's fast path does for got[0], got[1]
    got.clear()  # the caller's list is its own
    assert state.pending == {T0: {0: 1, 1: 1}} and state.delivered == {T0: {2, 3, 4}}
    order = state.in_order
    state.acknowledge(T0, 2, int(AcknowledgeType.RELEASE), order[2])  # the next: counting goes on
    assert state.acked == 3 and state.in_order
    state.acked = 4  # offset 3 counted
    with pytest.raises(ValueError, match="not delivered"):
        state.acknowledge(T0, 1, 1, order[1])  # counted already: and the counting ends
    assert state.in_order == () and state.pending == {T0: {0: 1, 1: 1, 2: 2, 3: 1}}
    state.acknowledge(T0, 4, int(AcknowledgeType.RENEW), order[4])
    assert state.delivered == {T0: {4}}
    state.acknowledge(T0, 4, int(AcknowledgeType.REJECT))
    assert state.unsettled() == 0 and state._take_acks(3) == {T0: {0: 1, 1: 1, 2: 2, 3: 1, 4: 3}}
    # a renewal of the next record ends the counting as well (it is to be settled again)
    state.read_fetch(
        3, _answer(build_batch([b"f", b"g"], base_offset=5), [(5, 6, 1)]), FetchOutcome()
    )
    got = state.take(10, in_order=True)
    state.acknowledge(T0, 5, int(AcknowledgeType.RENEW), got[0])
    assert state.in_order == () and state.delivered == {T0: {5, 6}}
    state.settle_all(1)
    # without in_order (implicit mode, or a caller that settles by offset) nothing is counted
    state.read_fetch(3, _answer(build_batch([b"h"], base_offset=7), [(7, 7, 1)]), FetchOutcome())
    assert state.take(10) and state.in_order == ()


def test_records_not_counted_stay_delivered_into_the_next_poll():
    """Records counted in order stay out of the delivered sets while counted; the ones a poll
    left unsettled are delivered still after the next take (and counted as unsettled), and
    each is settled once."""
    state = _state()
    state.read_fetch(
        3, _answer(build_batch([b"a", b"b", b"c"], base_offset=0), [(0, 2, 1)]), FetchOutcome()
    )
    got = state.take(10, in_order=True)
    state.acked = 1  # got[0] counted
    assert state.unsettled() == 2 and state.delivered == {T0: {1, 2}}
    state.read_fetch(3, _answer(build_batch([b"d"], base_offset=3), [(3, 3, 1)]), FetchOutcome())
    nxt = state.take(10, in_order=True)
    assert [r.offset for r in nxt] == [3] and state.unsettled() == 3
    assert state.delivered == {T0: {1, 2, 3}}
    state.acknowledge(T0, 3, 1, nxt[0])  # the next in order: counted
    state.acknowledge(T0, 1, 3, got[1])  # the last poll's: by offset
    assert state.pending == {T0: {0: 1, 3: 1, 1: 3}} and state.delivered == {T0: {2}}
    for tp, offset, record in ((T0, 3, nxt[0]), (T0, 0, got[0])):
        with pytest.raises(ValueError, match="not delivered"):
            state.acknowledge(tp, offset, 1, record)
    assert state.unsettled() == 1


def test_an_answer_is_decoded_in_pieces_of_whole_batches_as_polls_need_them():
    """A partition's answer is cut into pieces of whole record batches of about a poll's worth
    (``max_records``), the acquired ranges with them: a poll decodes only what it hands out,
    and the records, delivery counts and gaps are those of decoding the answer whole."""
    batches = (
        build_batch([b"a", b"b", b"c"], base_offset=0)
        + build_batch([b"d", b"e", b"f"], base_offset=3, offset_deltas=[0, 1, 3])  # 5: a gap
        + build_batch([b"g", b"h"], base_offset=7)
    )
    acquired = [(0, 1, 1), (3, 9, 2)]  # 2 is not acquired; 9 is past the last batch: a gap

    def drained(state, first):
        state.read_fetch(3, _answer(batches, acquired), FetchOutcome())
        assert state.held() == 9
        got = state.take(first)
        got += state.take(10)
        return [(r.offset, r.value, r.delivery_count) for r in got], state.pending

    whole = drained(_state(max_records=100), 10)
    cut = _state(max_records=2)
    cut.read_fetch(3, _answer(batches, acquired), FetchOutcome())
    assert len(cut.raw) == 3 and cut.raw_count == 9
    assert [r.offset for r in cut.take(2)] == [0, 1] and len(cut.raw) == 2  # one piece decoded
    assert cut.held() == 7
    assert [r.offset for r in cut.take(10)] == [3, 4, 6, 7, 8]
    assert whole == drained(_state(max_records=2), 2)
    assert whole[1] == {T0: {5: GAP, 9: GAP}}
    # a batch that fails to decode fails its own piece only, at the poll that takes it
    bad = bytearray(batches)
    bad[-1] ^= 0xFF
    state = _state(max_records=2)
    state.read_fetch(3, _answer(bytes(bad), acquired), FetchOutcome())
    assert [r.offset for r in state.take(2)] + [r.offset for r in state.take(2)] == [0, 1, 3, 4, 6]
    with pytest.raises(CorruptRecordError, match="CRC"):
        state.take(2)
    assert state.held() == 0
