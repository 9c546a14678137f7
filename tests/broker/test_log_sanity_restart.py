"""A real broker restarted over a damaged segment (issue 14, "Segments"): one flipped byte in a
batch's baseOffset (outside the CRC) after a clean shutdown, or in a middle batch after a kill -9.
The restarted broker keeps its log end at the data, serves every acknowledged record before the
damaged batch with its own offset, and names the file and byte position in its log."""

import struct
from pathlib import Path

import pytest

from kclient.protocol.records import scan_entries
from kclient.testing import free_port
from tests.needs import need_module

from .compaction_support import read_confluent
from .test_server_crash import BrokerProcess

confluent_kafka = need_module("confluent_kafka")

TOPIC = "sanity"
COUNT = 60


def produce(bootstrap: str) -> dict[int, bytes]:
    """``COUNT`` acks=all records, one batch each; offset -> value of the acknowledged ones."""
    acked: dict[int, bytes] = {}
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "enable.idempotence": False}
    )

    def report(err, msg):
        assert err is None, err
        acked[msg.offset()] = msg.value()

    for i in range(COUNT):
        producer.produce(TOPIC, value=b"acked-%03d" % i, callback=report)
        producer.flush(15)
    assert len(acked) == COUNT
    return acked


def damage_base_offset(segment: Path, index: int, byte: int, mask: int) -> tuple[int, int]:
    """XOR one byte of the ``index``-th batch's baseOffset; (its position, its offset)."""
    data = bytearray(segment.read_bytes())
    entry = scan_entries(bytes(data)).entries[index]
    data[entry.position + byte] ^= mask
    segment.write_bytes(bytes(data))
    assert struct.unpack_from(">q", data, entry.position)[0] != entry.offset
    return entry.position, entry.offset


@pytest.mark.parametrize(
    "stop, index, byte, mask",
    [
        ("clean", -1, 0, 0x55),  # the case: log end offset ~6.1e18 before
        ("kill9", 29, 7, 0x02),  # a middle batch moved up two offsets (29 -> 31)
    ],
    ids=["clean-last", "kill9-middle"],
)
def test_restart_over_a_flipped_base_offset(tmp_path, stop, index, byte, mask):
    broker = BrokerProcess(tmp_path / "logs", free_port())
    try:
        broker.start()
        acked = produce(broker.bootstrap)
        if stop == "clean":
            assert broker.terminate() == 0
        else:
            broker.kill9()
        segment = sorted((broker.log_dir / f"{TOPIC}-0").glob("*.log"))[-1]
        position, damaged = damage_base_offset(segment, index, byte, mask)
        broker.start()
        got, low, high = read_confluent(broker.bootstrap, TOPIC, "sanity-check")
        assert (low, high) == (0, damaged), "the log ends where the damaged batch began"
        assert [(o, v) for o, _, v in got] == [(o, acked[o]) for o in range(damaged)]
        out = broker.out.read_text(errors="replace")
        assert segment.name in out and f"position {position}" in out
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap})
        after = []
        producer.produce(
            TOPIC, value=b"after", callback=lambda err, msg: after.append((err, msg.offset()))
        )
        producer.flush(15)
        assert after == [(None, damaged)]
        assert broker.terminate() == 0
    except Exception:
        print(broker.out.read_text(errors="replace")[-4000:] if broker.out.exists() else "")
        raise
    finally:
        broker.cleanup()
