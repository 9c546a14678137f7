"""Transaction markers (control batches): built as Kafka lays them out, read back by kclient and
by kafka-python, and hidden from ordinary record iteration."""

import struct

import pytest

from kclient.protocol.records import (
    ABORT,
    COMMIT,
    ControlKey,
    EndTxnMarker,
    RecordsReader,
    build_batch,
    build_marker_batch,
    encode_control_key,
    encode_end_txn_marker,
    parse_control_key,
    parse_end_txn_marker,
)
from tests.needs import need_module


def test_key_and_value_bytes_are_kafkas_layout():
    assert encode_control_key(COMMIT) == b"\x00\x00\x00\x01"
    assert encode_control_key(ABORT) == b"\x00\x00\x00\x00"
    assert encode_end_txn_marker(7) == struct.pack(">hi", 0, 7)


@pytest.mark.parametrize("committed", [True, False])
def test_marker_batch_round_trips(committed):
    raw = build_marker_batch(4242, 3, committed, 17, base_offset=90, timestamp=1_700_000_000_000)
    [batch] = RecordsReader(raw).batches()
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4242, 3, -1)
    assert (batch.base_offset, batch.last_offset, batch.record_count) == (90, 90, 1)
    [rec] = batch.records
    assert parse_control_key(rec.key) == ControlKey(0, COMMIT if committed else ABORT)
    assert parse_end_txn_marker(rec.key, rec.value) == EndTxnMarker(committed, 17)


def test_markers_are_skipped_by_default_record_iteration():
    data = build_batch(
        [b"a", b"b"],
        base_offset=0,
        producer_id=5,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    marker = build_marker_batch(5, 0, True, 0, base_offset=2)
    assert [r.value for r in RecordsReader(data + marker)] == [b"a", b"b"]
    assert [r.offset for r in RecordsReader(data + marker).records(skip_control=False)] == [0, 1, 2]


@pytest.mark.parametrize(
    "key,value",
    [
        (b"\x00", encode_end_txn_marker(0)),  # short key
        (None, encode_end_txn_marker(0)),  # no key
        (encode_control_key(2), encode_end_txn_marker(0)),  # LEADER_CHANGE, not a marker
        (encode_control_key(COMMIT), b"\x00\x00"),  # short value
    ],
)
def test_malformed_markers_are_refused(key, value):
    with pytest.raises(ValueError):
        parse_end_txn_marker(key, value)


def test_kafka_python_reads_our_marker():
    default_records = need_module("kafka.record.default_records")
    raw = build_marker_batch(99, 1, False, 3, base_offset=10)
    batch = default_records.DefaultRecordBatch(raw)
    assert batch.is_control_batch and batch.is_transactional
    [rec] = list(batch)
    assert rec.abort and not rec.commit and rec.offset == 10
    assert rec.value == encode_end_txn_marker(3)


def _txn(pid, values, base, epoch=0):
    return build_batch(
        values,
        base_offset=base,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=base,
        is_transactional=True,
    )


def _values_of(buf, spans):
    from kclient.protocol.records import decode_entries

    return [r.value for r in decode_entries(buf, spans)]


def test_committed_entries_drop_aborted_transactions_up_to_their_abort_marker():
    from kclient.protocol.records import committed_entries, scan_entries

    # pid 1 aborts [a0 a1], pid 2 commits [b0] interleaved, pid 1 then commits [a2],
    # a non-transactional batch from pid 1's id space is kept regardless
    buf = b"".join(
        [
            _txn(1, [b"a0"], 0),
            _txn(2, [b"b0"], 1),
            _txn(1, [b"a1"], 2),
            build_marker_batch(1, 0, False, 0, base_offset=3),
            build_batch([b"plain"], base_offset=4, producer_id=1),
            build_marker_batch(2, 0, True, 0, base_offset=5),
            _txn(1, [b"a2"], 6),
            build_marker_batch(1, 0, True, 0, base_offset=7),
        ]
    )
    spans = scan_entries(buf).entries
    kept = committed_entries(buf, spans, [(1, 0)])
    assert _values_of(buf, kept) == [b"b0", b"plain", b"a2"]
    assert len(kept) == len(spans) - 2  # markers stay (they move offsets)
    assert _values_of(buf, committed_entries(buf, spans, [])) == [
        b"a0",
        b"b0",
        b"a1",
        b"plain",
        b"a2",
    ]


def test_an_aborted_transaction_starting_later_in_the_buffer_drops_only_its_own_batches():
    from kclient.protocol.records import committed_entries, scan_entries

    buf = b"".join(
        [
            _txn(1, [b"c0", b"c1"], 0),
            build_marker_batch(1, 0, True, 0, base_offset=2),
            _txn(1, [b"x0"], 3),
            build_marker_batch(1, 0, False, 0, base_offset=4),
        ]
    )
    spans = scan_entries(buf).entries
    assert _values_of(buf, committed_entries(buf, spans, [(1, 3)])) == [b"c0", b"c1"]
