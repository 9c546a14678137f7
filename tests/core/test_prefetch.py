"""The prefetch queue of kclient.core.prefetch: answers queued per partition and handed out in
slices, positions advanced, and what seek / reset / corruption / the bounds do to the queue.
Pure state, no broker: the answers are real record batches wrapped as a fetch would."""

from __future__ import annotations

from kclient.core.consumer_records import build_records
from kclient.core.message_set import ByteBufferMessageSet
from kclient.core.prefetch import DATA, NOTHING, REFRESH, RESET, PartitionState, take, take_answer
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
