"""Transactions in the partition log: markers, last stable offset, the read bound, and the
aborted-transaction index (``.txnindex``, Kafka's 34-byte entries) kept across recovery."""

from __future__ import annotations

import struct

from kclient.broker.log import Log, LogConfig
from kclient.broker.log.log import CLEAN_SHUTDOWN
from kclient.broker.log.txn_index import AbortedTxn
from kclient.protocol.records import RecordsReader, build_batch

ENTRY = struct.Struct(">hqqqq")


def txn_batch(values, pid, seq, epoch=0):
    return build_batch(
        values, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True
    )


def offsets_read(log, offset, max_offset=None):
    region = log.read(offset, 1 << 20, max_offset)
    data = region.read() if hasattr(region, "read") else bytes(region or b"")
    return [(b.base_offset, b.is_control) for b in RecordsReader(data).batches()]


def build(tmp_path, config=None):
    """Two producers interleaved: pid 7 aborted (0-1, marker 4), pid 8 committed (2, marker 5),
    then pid 7 again, still open at 6."""
    log = Log(tmp_path / "t-0", config or LogConfig())
    log.append(txn_batch([b"a0", b"a1"], 7, 0), magic=2)  # 0-1
    log.append(txn_batch([b"b0"], 8, 0), magic=2)  # 2
    log.append(build_batch([b"plain"]), magic=2)  # 3
    assert log.last_stable_offset == 0
    assert log.append_marker(7, 0, commit=False) == 4
    assert log.last_stable_offset == 2  # pid 8 still open
    assert log.append_marker(8, 0, commit=True) == 5
    assert log.last_stable_offset == 6
    log.append(txn_batch([b"a2"], 7, 2), magic=2)  # 6, open
    return log


def test_markers_lso_and_the_read_bound(tmp_path):
    log = build(tmp_path)
    assert (log.last_stable_offset, log.log_end_offset) == (6, 7)
    assert offsets_read(log, 0, log.last_stable_offset) == [
        (0, False),
        (2, False),
        (3, False),
        (4, True),
        (5, True),
    ]
    assert offsets_read(log, 6, 6) == []
    assert offsets_read(log, 0)[-1] == (6, False)  # read_uncommitted: all of it
    assert log.aborted_transactions(0, 6) == [AbortedTxn(7, 0, 4, 2)]
    assert log.aborted_transactions(5, 6) == []  # past the aborted marker
    log.close()


def test_txnindex_file_is_kafkas_format(tmp_path):
    log = build(tmp_path)
    data = (tmp_path / "t-0" / "00000000000000000000.txnindex").read_bytes()
    assert len(data) == 34 and ENTRY.unpack(data) == (0, 7, 0, 4, 2)
    log.close()


def test_aborted_entry_lands_in_the_segment_of_its_marker(tmp_path):
    log = build(tmp_path, LogConfig(segment_bytes=200))
    assert len(log.segments) > 2
    assert log.append_marker(7, 0, commit=False) == 7
    holders = [s.base_offset for s in log.segments if s.txn_index.entries]
    assert holders == [s.base_offset for s in log.segments if s.base_offset <= 4][-1:] + [
        log.segments[-1].base_offset
    ]
    assert log.aborted_transactions(5, 8) == [AbortedTxn(7, 6, 7, 8)]
    assert log.aborted_transactions(0, 8) == [AbortedTxn(7, 0, 4, 2), AbortedTxn(7, 6, 7, 8)]
    log.close()


def test_state_and_index_survive_clean_restart(tmp_path):
    build(tmp_path).close()
    log = Log(tmp_path / "t-0", LogConfig())
    assert log.last_stable_offset == 6
    assert log.aborted_transactions(0, 7) == [AbortedTxn(7, 0, 4, 2)]
    log.close()


def test_txnindex_is_rebuilt_by_recovery(tmp_path):
    build(tmp_path).close()
    directory = tmp_path / "t-0"
    (directory / CLEAN_SHUTDOWN).unlink()
    for path in directory.glob("*.snapshot"):
        path.unlink()
    index = directory / "00000000000000000000.txnindex"
    index.write_bytes(ENTRY.pack(0, 99, 0, 1, 1) + b"\x00\x00torn")  # wrong and torn
    log = Log(directory, LogConfig())
    assert log.last_stable_offset == 6  # replayed from the batches
    assert log.aborted_transactions(0, 7) == [AbortedTxn(7, 0, 4, 2)]
    assert ENTRY.unpack(index.read_bytes()) == (0, 7, 0, 4, 2)
    log.close()


def test_a_torn_marker_reopens_the_transaction(tmp_path):
    log = build(tmp_path)
    log.close()
    directory = tmp_path / "t-0"
    (directory / CLEAN_SHUTDOWN).unlink()
    for path in directory.glob("*.snapshot"):
        path.unlink()
    seg = directory / "00000000000000000000.log"
    data = seg.read_bytes()
    # cut inside the commit marker of pid 8 (offset 5): it and what follows are gone
    positions = list(_positions(data))
    assert [b.base_offset for b in RecordsReader(data).batches()] == [0, 2, 3, 4, 5, 6]
    seg.write_bytes(data[: positions[4] + 10])
    log = Log(directory, LogConfig())
    assert log.log_end_offset == 5 and log.last_stable_offset == 2  # pid 8 open again
    assert log.aborted_transactions(0, 5) == [AbortedTxn(7, 0, 4, 2)]
    log.close()


def _positions(data):
    pos = 0
    while pos + 12 <= len(data):
        yield pos
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
