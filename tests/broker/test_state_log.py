"""StateLog: the compacted, self-cleaning log behind the broker's internal state — replay in
order with tombstones, atomic batches, two state logs side by side with their own cleaners."""

from __future__ import annotations

from kclient.broker.state_log import StateLog, read_log


def _replayed(store: StateLog) -> dict:
    state: dict = {}

    def apply(key, value):
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value

    store.open(apply)
    return state


def test_replay_tombstones_and_cleaning_side_by_side(tmp_path):
    config = {"log.cleaner.backoff.ms": "20"}
    offsets = StateLog(tmp_path / "__consumer_offsets-0", config, segment_bytes=1024)
    txns = StateLog(tmp_path / "__transaction_state-0", config, segment_bytes=1024)
    assert _replayed(offsets) == {} and _replayed(txns) == {}
    for i in range(200):
        offsets.append([b"g%d" % (i % 4)], [b"%d" % i])
        txns.append([b"t%d" % (i % 3), b"t-gone"], [b"s%d" % i, None])
    for store in (offsets, txns):
        store.compact()
        assert store.size < 1024, store.size  # 200 batches of ~70-100 bytes written
        assert (store.directory / "cleaner-offset-checkpoint").exists()
    assert [(r.offset, r.key) for r in read_log(offsets.log)][-4:] == [
        (196, b"g0"),
        (197, b"g1"),
        (198, b"g2"),
        (199, b"g3"),
    ]
    offsets.close()
    txns.close()
    again = StateLog(tmp_path / "__transaction_state-0", config, segment_bytes=1024)
    assert _replayed(again) == {b"t0": b"s198", b"t1": b"s199", b"t2": b"s197"}
    again.close()


def test_disabled_cleaner_and_unopened_append(tmp_path):
    store = StateLog(tmp_path / "s-0", {"log.cleaner.enable": "false"}, segment_bytes=1024)
    assert store.cleaner is None
    try:
        store.append([b"k"], [b"v"])
    except RuntimeError as exc:
        assert "not open" in str(exc)
    else:
        raise AssertionError("append before open must fail")
