"""The prefetch queue of kclient.core.prefetch: answers queued per partition and handed out in
slices, positions advanced, and what seek / reset / corruption / the bounds do to the queue.
Pure state, no broker: the answers are real record batches wrapped as a fetch would."""

from __future__ import annotations

from kclient.core.consumer_records import build_records
from kclient.core.message_set import ByteBufferMessageSet
from kclient.core.prefetch import (
    DATA,
    NOTHING,
    REFRESH,
    RESET,
    PartitionState,
    fetch_ahead,
    take,
    take_answer,
    take_whole,
)
from kclient.errors import CorruptRecordError, NotLeaderForPartitionError, OffsetOutOfRangeError
from kclient.protocol.records import build_batch
from kclient.structs import TopicPartition

TP = TopicPartition("t", 0)


def answer(first: int, values, hw=100, error=None, raw=None):
    buf = raw if raw is not None else build_batch(values, base_offset=first)
    return ByteBufferMessageSet(buf, first, topic="t", partition=0, high_watermark=hw, error=error)


def state(at=0):
    st = PartitionState(TP)
    st.reset_to(at)
    return st


def test_answers_queue_and_come_out_in_slices_advancing_the_position():
    st = state(0)
    assert take_answer(st, 0, st.epoch, answer(0, [b"a", b"b", b"c"])) == DATA
    assert st.fetch_offset == 3 and st.position == 0 and st.buffered == 3
    assert take_answer(st, 3, st.epoch, answer(3, [b"d", b"e"])) == DATA
    assert st.fetch_offset == 5 and len(st.chunks) == 2 and st.high_watermark == 100
    got = [(c.offsets[i:j], i, j) for c, i, j in take(st, 2)]
    assert got == [([0, 1], 0, 2)] and st.position == 2 and st.buffered == 3
    recs = [r for c, i, j in take(st, 10) for r in build_records(TP, c, i, j, None, None)]
    assert [(r.offset, r.value) for r in recs] == [(2, b"c"), (3, b"d"), (4, b"e")]
    assert st.position == 5 and st.buffered == 0 and st.bytes == 0 and not st.chunks


def _state_of(st):
    return (st.position, st.fetch_offset, st.buffered, st.bytes, len(st.chunks))


def test_taking_one_whole_chunk_leaves_the_state_take_leaves():
    one, two = state(0), state(0)
    for st in (one, two):
        take_answer(st, 0, st.epoch, answer(0, [b"a", b"b", b"c"]))
    cols = take_whole(one, 3)
    ((other, i, j),) = take(two, 3)
    assert (cols.offsets, cols.values, i, j) == (other.offsets, other.values, 0, 3)
    assert _state_of(one) == _state_of(two) == (3, 3, 0, 0, 0)


def test_taking_whole_declines_two_chunks_a_started_one_and_one_over_the_limit():
    st = state(0)
    take_answer(st, 0, st.epoch, answer(0, [b"a", b"b", b"c"]))
    before = _state_of(st)
    assert take_whole(st, 2) is None and _state_of(st) == before  # over the limit
    list(take(st, 1))
    before = _state_of(st)
    assert take_whole(st, 10) is None and _state_of(st) == before  # one taken already
    take_answer(st, 3, st.epoch, answer(3, [b"d"]))
    before = _state_of(st)
    assert take_whole(st, 10) is None and _state_of(st) == before  # two chunks


def test_a_seek_drops_the_queue_and_answers_to_requests_sent_before_it():
    st = state(0)
    asked_at = st.epoch
    take_answer(st, 0, st.epoch, answer(0, [b"a", b"b"]))
    st.reset_to(40)  # seek
    assert not st.chunks and st.buffered == 0 and st.bytes == 0
    assert (st.position, st.fetch_offset) == (40, 40)
    # the answer to a request from before the seek arrives late: dropped
    assert take_answer(st, 2, asked_at, answer(2, [b"c"])) == NOTHING
    assert take_answer(st, 40, asked_at, answer(40, [b"x"])) == NOTHING
    assert take_answer(st, 40, st.epoch, answer(40, [b"x"])) == DATA
    assert [c.values for c, _, _ in take(st, 5)] == [[b"x"]]


def test_the_queue_bounds_stop_fetching_and_pause_keeps_what_is_queued():
    st = state(0)
    take_answer(st, 0, st.epoch, answer(0, [b"v" * 100] * 5))
    assert st.bytes > 500
    assert st.fetchable(2, 10_000) and not st.fetchable(1, 10_000)  # chunks
    assert not st.fetchable(2, 500)  # bytes
    st.paused = True
    assert not st.fetchable(2, 10_000) and st.buffered == 5  # queue kept
    st.paused = False
    list(take(st, 5))
    assert st.fetchable(1, 500)


def test_out_of_range_asks_for_a_reset_and_other_errors_a_refresh():
    st = state(7)
    oor = answer(7, [], error=OffsetOutOfRangeError("t-0 at offset 7"), raw=b"")
    before = st.epoch
    assert take_answer(st, 7, st.epoch, oor) == RESET
    assert st.fetch_offset == -1 and st.epoch == before + 1 and not st.fetchable(2, 1 << 20)
    st = state(7)
    moved = answer(7, [], error=NotLeaderForPartitionError("t-0 at offset 7"), raw=b"")
    assert take_answer(st, 7, st.epoch, moved) == REFRESH and st.fetch_offset == 7


def test_good_records_before_a_corrupt_entry_come_first_then_its_error():
    good = build_batch([b"a", b"b"], base_offset=0)
    bad = bytearray(build_batch([b"c"], base_offset=2))
    bad[-1] ^= 0xFF  # the CRC no longer matches
    st = state(0)
    assert take_answer(st, 0, st.epoch, answer(0, None, raw=good + bytes(bad))) == DATA
    assert [c.values for c, _, _ in take(st, 10)] == [[b"a", b"b"]]
    assert st.fetch_offset == 2 and st.error is None
    assert take_answer(st, 2, st.epoch, answer(2, None, raw=bytes(bad))) == DATA
    assert isinstance(st.error, CorruptRecordError) and st.error.offset == 2
    assert not st.fetchable(2, 1 << 20)


def test_records_without_headers_share_one_empty_list_that_refuses_changes():
    import pytest

    st = state(0)
    take_answer(st, 0, st.epoch, answer(0, [b"a", b"b"]))
    ((cols, i, j),) = take(st, 5)
    a, b = build_records(TP, cols, i, j, None, None, empty_lists=True)
    assert a.headers == [] and isinstance(a.headers, list) and a.headers is b.headers
    with pytest.raises(TypeError, match="shared"):
        a.headers.append(("k", b"v"))
    assert b.headers == []
    c, _ = build_records(TP, cols, i, j, None, None)
    assert c.headers == ()  # AIOConsumer's: the empty tuple, as aiokafka's


def _ahead(st, offset, epoch, raw, chunks=2, size=1 << 20):
    return fetch_ahead([(st, offset, epoch)], [(raw, 0)], chunks, size)


def test_fetching_ahead_moves_on_from_the_entry_headers_and_decoding_confirms_it():
    raw = build_batch([b"a", b"b"], base_offset=0) + build_batch([b"c"], base_offset=2)
    st = state(0)
    epoch = st.epoch
    assert _ahead(st, 0, epoch, raw + raw[:20]) == [3]  # a partial entry at the end is not read
    assert st.fetch_offset == 3  # the next fetch goes from here while this answer is decoded
    assert take_answer(st, 0, epoch, answer(0, None, raw=raw), 3) == DATA
    assert (st.fetch_offset, st.epoch, st.buffered) == (3, epoch, 3)
    assert take_answer(st, 3, epoch, answer(3, [b"d"])) == DATA  # the answer sent ahead
    assert [r for c, i, j in take(st, 10) for r in c.values[i:j]] == [b"a", b"b", b"c", b"d"]


def test_a_seek_while_fetching_ahead_drops_exactly_both_stale_answers():
    st = state(0)
    epoch = st.epoch
    assert _ahead(st, 0, epoch, build_batch([b"a", b"b"], base_offset=0)) == [2]
    st.reset_to(40)  # seek while the answer waits to be decoded and the next fetch is out
    assert take_answer(st, 0, epoch, answer(0, [b"a", b"b"]), 2) == NOTHING
    assert take_answer(st, 2, epoch, answer(2, [b"c"])) == NOTHING
    assert not st.chunks and (st.position, st.fetch_offset) == (40, 40)
    assert take_answer(st, 40, st.epoch, answer(40, [b"x"])) == DATA
    assert [c.values for c, _, _ in take(st, 5)] == [[b"x"]]


def test_decoding_ending_short_of_the_fetch_sent_ahead_drops_its_answer():
    good = build_batch([b"a", b"b"], base_offset=0)
    bad = bytearray(build_batch([b"c"], base_offset=2))
    bad[-1] ^= 0xFF  # the CRC no longer matches: the headers read past it, decoding does not
    st = state(0)
    epoch = st.epoch
    assert _ahead(st, 0, epoch, good + bytes(bad)) == [3]
    assert take_answer(st, 0, epoch, answer(0, None, raw=good + bytes(bad)), 3) == DATA
    assert st.fetch_offset == 2 and st.epoch == epoch + 1  # fetched again from the bad entry
    assert take_answer(st, 3, epoch, answer(3, [b"d"])) == NOTHING  # skipped offset 2: dropped
    assert [c.values for c, _, _ in take(st, 10)] == [[b"a", b"b"]]


def test_no_fetching_ahead_when_an_answer_must_be_decoded_first():
    raw = build_batch([b"v" * 100] * 3, base_offset=0)
    st = state(0)
    take_answer(st, 0, st.epoch, answer(0, [b"x"]))  # one chunk queued already
    assert _ahead(st, 1, st.epoch, raw, chunks=2) is None  # the queue would be full
    assert _ahead(st, 1, st.epoch, raw, chunks=3, size=len(raw)) is None  # its bytes too
    assert _ahead(st, 1, st.epoch, raw[:40], chunks=3) is None  # no complete entry
    assert fetch_ahead([(st, 1, st.epoch)], [(b"", 3)], 3, 1 << 20) is None  # an error
    assert st.fetch_offset == 1
    other = state(5)  # one partition with nothing new, one left out of the answer
    got = fetch_ahead(
        [(st, 1, st.epoch), (other, 5, other.epoch), (state(9), 9, 0)],
        [(raw, 0), (b"", 0), None],
        3,
        1 << 20,
    )
    assert got == [3, -1, -1] and (st.fetch_offset, other.fetch_offset) == (3, 5)


def test_records_the_collector_need_not_scan_are_untracked():
    import gc

    from kclient.core import consumer_records

    st = state(0)
    take_answer(st, 0, st.epoch, answer(0, [b"a", b"b"]))
    ((cols, i, j),) = take(st, 5)
    flat = build_records(TP, cols, i, j, None, None)
    shared = build_records(TP, cols, i, j, None, None, empty_lists=True)
    decoded = build_records(TP, cols, i, j, None, lambda v: {"v": v})
    untracked = consumer_records._untrack is not None  # the C walker built (not pure Python)
    assert [gc.is_tracked(r) for r in flat + shared] == [not untracked] * 4  # bytes, ints
    assert all(gc.is_tracked(r) for r in decoded)  # a dict value could be in a cycle
    assert [r.value for r in flat] == [b"a", b"b"] == [r.value for r in shared]
