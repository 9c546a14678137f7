"""``kclient dump-log`` on mini-broker segments: batches and records as Kafka's DumpLogSegments
prints them (checked line for line against the tool when Kafka's jars are here), CRC and index
checks, and the first corrupt position."""

import os
import shutil

import pytest

from kclient.testing import kafka_problem
from tests.needs import requires

SEGMENT = "00000000000000000000"


@pytest.fixture
def segment(cli, mini_broker, tmp_path):
    """A copy of a segment (and its index) with batches in every codec, headers and nulls."""
    cli("topics", "create", "d", "-p", "1", "--config", "index.interval.bytes=1", check=0)
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        cli(
            "produce",
            "d",
            "-K",
            ":",
            "-H",
            "h=1",
            "--codec",
            codec,
            input=b"".join(b"k%d:%s-value-%d\n" % (i, codec.encode(), i) for i in range(3)),
            check=0,
        )
    cli("produce", "d", input=os.urandom(64).hex().encode() + b"\n", check=0)
    mini_broker.stop()
    dst = tmp_path / "copy"
    shutil.copytree(mini_broker.log_dir / "d-0", dst)
    return dst / f"{SEGMENT}.log"


def _batches(text):
    return [
        line
        for line in text.splitlines()
        if line.startswith(("baseOffset", "| offset", "offset: "))
    ]


def test_batches_records_and_index(cli, segment):
    out = cli.out("dump-log", segment, "--deep", "--print-data")
    lines = _batches(out)
    heads = [line for line in lines if line.startswith("baseOffset")]
    assert len(heads) == 6 and all(h.endswith("isvalid: true") for h in heads)
    assert [h.split("compresscodec: ")[1].split()[0] for h in heads] == [
        "none",
        "gzip",
        "snappy",
        "lz4",
        "zstd",
        "none",
    ]
    assert heads[1].startswith("baseOffset: 3 lastOffset: 5 count: 3 ")
    assert (
        "| offset: 4 CreateTime: " in out and "headerKeys: [h] key: k1 payload: gzip-value-1" in out
    )
    assert "00000000000000000000.index: 5 entries ok" in out
    idx = cli.out("dump-log", segment.with_suffix(".index"))
    assert "offset: 5 position: " in idx


@requires(kafka_problem("4"))
def test_agrees_with_kafkas_dump_log_segments(cli, segment):
    from kclient.testing.kafka_dist import run_kafka_tool

    theirs = run_kafka_tool(
        "4", "dump-log", "--files", str(segment), "--deep-iteration", "--print-data-log"
    ).stdout.decode()
    ours = cli.out("dump-log", segment, "--deep", "--print-data")
    assert _batches(ours) == _batches(theirs) and len(_batches(ours)) == 6 + 16


def test_reports_the_first_corrupt_position(cli, segment):
    out = cli.out("dump-log", segment)
    third = [int(line.split("position: ")[1].split()[0]) for line in _batches(out)][2]
    data = bytearray(segment.read_bytes())
    data[third + 70] ^= 0xFF  # inside the third batch's records
    segment.write_bytes(bytes(data))
    done = cli("dump-log", segment, check=1)
    out = done.stdout.decode()
    assert _batches(out)[2].endswith("isvalid: false") and len(_batches(out)) == 3
    assert f"first corrupt position {third}: CRC mismatch" in out
    segment.write_bytes(bytes(data[: third + 30]))
    out = cli("dump-log", segment, check=1).stdout.decode()
    assert f"first corrupt position {third}: partial entry (30 trailing bytes)" in out
    assert len(_batches(out)) == 2


def test_a_bad_index_entry_is_reported(cli, segment):
    index = segment.with_suffix(".index")
    raw = bytearray(index.read_bytes())
    raw[4:8] = (int.from_bytes(raw[4:8], "big") + 1).to_bytes(4, "big")  # 1st position + 1
    index.write_bytes(bytes(raw))
    out = cli("dump-log", segment, check=1).stdout.decode()
    assert "entry 0: index offset 5 at position" in out and "no batch starts there" in out
    assert b"not a .log" in cli("dump-log", segment.with_suffix(".txt"), check=1).stdout


@requires(kafka_problem("4"))
@pytest.mark.parametrize("version", ["0.8.2", "0.10.0"])
def test_agrees_with_dump_log_segments_on_message_formats_v0_v1(cli, mini_broker, version):
    from kclient.testing.kafka_dist import run_kafka_tool

    cli(
        "topics",
        "create",
        "old",
        "-p",
        "1",
        "--config",
        f"message.format.version={version}",
        check=0,
    )
    cli("produce", "old", "-K", ":", input=b"a:1\nb:\n", check=0)
    cli("produce", "old", "-K", ":", "--codec", "gzip", input=b"c:3\nd:4\n", check=0)
    segment = mini_broker.log_dir / "old-0" / f"{SEGMENT}.log"
    ours = cli.out("dump-log", segment, "--deep", "--print-data")
    theirs = run_kafka_tool(
        "4", "dump-log", "--files", str(segment), "--deep-iteration", "--print-data-log"
    ).stdout.decode()
    assert _batches(ours) == _batches(theirs) and len(_batches(ours)) == 3 + 4


def test_time_index_order_is_checked(cli, segment):
    import struct

    timeindex = segment.with_suffix(".timeindex")
    entries = [(1000, 0), (2000, 5), (0, 0), (0, 0)]  # Kafka preallocates zero entries
    timeindex.write_bytes(b"".join(struct.pack(">qi", *e) for e in entries))
    assert "00000000000000000000.timeindex: 2 entries ok" in cli.out("dump-log", segment)
    assert "timestamp: 2000 offset: 5" in cli.out("dump-log", timeindex)
    timeindex.write_bytes(struct.pack(">qi", 2000, 0) + struct.pack(">qi", 1000, 5))
    out = cli("dump-log", segment, check=1).stdout.decode()
    assert "entry 1 (timestamp 1000, offset 5) out of order" in out
    timeindex.write_bytes(b"\x00" * 13)
    assert "13 bytes, not a multiple of 12" in cli("dump-log", segment, check=1).stdout.decode()


def test_the_mini_brokers_own_time_index_is_validated(cli, segment):
    """The mini-broker writes a Kafka-format .timeindex (an entry per batch here, as
    index.interval.bytes=1); dump-log lists and checks it, and reports it when broken."""
    import struct

    timeindex = segment.with_suffix(".timeindex")
    entries = list(struct.iter_unpack(">qi", timeindex.read_bytes()))
    assert len(entries) >= 2 and [t for t, _ in entries] == sorted({t for t, _ in entries})
    assert f"{SEGMENT}.timeindex: {len(entries)} entries ok" in cli.out("dump-log", segment)
    listed = cli.out("dump-log", timeindex)
    assert all(f"timestamp: {t} offset: {o}" in listed for t, o in entries)
    timeindex.write_bytes(b"".join(struct.pack(">qi", *e) for e in reversed(entries)))
    out = cli("dump-log", segment, check=1).stdout.decode()
    assert f"entry 1 (timestamp {entries[-2][0]}, offset {entries[-2][1]}) out of order" in out
