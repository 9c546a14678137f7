"""The ``kclient`` command against real Kafka 4.x: ``dump-log`` agrees with Kafka's
DumpLogSegments on Kafka's own segment, ``groups describe`` with kafka-consumer-groups."""

from tests.conftest import CliRunner
from tests.waiting import wait_until


def _rows(text, group):
    return [line.split() for line in text.splitlines() if line.startswith(group + " ")]


def test_dump_log_agrees_with_dump_log_segments_on_a_kafka_segment(kafka4):
    cli = CliRunner(kafka4.bootstrap)
    cli("topics", "create", "cli-dump", "-p", "1", "--config", "index.interval.bytes=1", check=0)
    for codec in ("none", "gzip", "lz4", "zstd", "snappy"):
        cli(
            "produce",
            "cli-dump",
            "-K",
            ":",
            "-H",
            "h=1",
            "--codec",
            codec,
            input=b"".join(b"k%d:%s-%d\n" % (i, codec.encode(), i) for i in range(4)),
            check=0,
        )
    (segment,) = (kafka4.nodes[0].data / "cli-dump-0").glob("*.log")
    theirs = kafka4.run_tool(
        "dump-log", "--files", str(segment), "--deep-iteration", "--print-data-log"
    ).stdout.decode()
    ours = cli.out("dump-log", segment, "--deep", "--print-data")

    def batches(text):
        return [line for line in text.splitlines() if line.startswith(("baseOffset", "| "))]

    assert batches(ours) == batches(theirs) and len(batches(ours)) == 5 + 20
    assert "00000000000000000000.index: 4 entries ok" in ours  # Kafka's preallocated index
    assert "00000000000000000000.timeindex: " in ours
    for index, prefix in ((".index", "offset: "), (".timeindex", "timestamp: ")):
        path = str(segment.with_suffix(index))
        theirs = kafka4.run_tool("dump-log", "--files", path).stdout.decode()
        ours = cli.out("dump-log", path)

        mine = [line for line in ours.splitlines() if line.startswith(prefix)]
        assert mine and mine == [line for line in theirs.splitlines() if line.startswith(prefix)]


def test_groups_describe_lag_equals_kafka_consumer_groups(kafka4):
    cli = CliRunner(kafka4.bootstrap)
    cli("topics", "create", "cli-lag", "-p", "3", check=0)
    cli("produce", "cli-lag", input=b"".join(b"m%d\n" % i for i in range(60)), check=0)
    cli("consume", "cli-lag", "-G", "cli-lag-g", "-o", "earliest", "-c", "25", check=0)
    cli("produce", "cli-lag", "-p", "2", input=b"x\ny\n", check=0)
    wait_until(
        lambda: (
            sum(int(r[5]) for r in _rows(cli.out("groups", "describe", "cli-lag-g"), "cli-lag-g"))
            == 62 - 25
        ),
        30,
        "the group's lag counting the two new records",
    )
    theirs = kafka4.run_tool(
        "consumer-groups",
        "--bootstrap-server",
        kafka4.bootstrap,
        "--describe",
        "--group",
        "cli-lag-g",
    ).stdout.decode()
    ours = cli.out("groups", "describe", "cli-lag-g")
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG (the member columns are "-")
    assert sorted(r[:6] for r in _rows(ours, "cli-lag-g")) == sorted(
        r[:6] for r in _rows(theirs, "cli-lag-g")
    )
    assert sum(int(r[5]) for r in _rows(ours, "cli-lag-g")) == 62 - 25


def test_every_subcommand_against_kafka(kafka4):
    import base64
    import os

    cli = CliRunner(kafka4.bootstrap)
    cli("topics", "create", "cli-all", "-p", "2", "--config", "retention.ms=3600000", check=0)
    assert b"TopicAlreadyExistsError" in cli("topics", "create", "cli-all", check=1).stderr
    assert "cli-all" in cli.out("topics", "list").split()
    cli("topics", "alter", "cli-all", "-p", "3", "--config", "cleanup.policy=compact", check=0)
    described = cli.out("topics", "describe", "cli-all")
    assert "PartitionCount: 3" in described and "cleanup.policy=compact" in described
    blobs = [os.urandom(n) for n in (1, 50, 3000)] + [b"\n\r\x00"]
    lines = b"".join(base64.b64encode(b"k") + b" " + base64.b64encode(b) + b"\n" for b in blobs)
    cli(
        "produce",
        "cli-all",
        "-p",
        "1",
        "-K",
        " ",
        "--binary",
        "base64",
        "--codec",
        "zstd",
        input=lines,
        check=0,
    )
    out = cli(
        "consume", "cli-all", "-p", "1", "-o", "earliest", "-e", "--binary", "base64", check=0
    ).stdout
    assert [base64.b64decode(line) for line in out.splitlines()] == blobs
    assert cli.out("offsets", "cli-all", "-p", "1").split() == ["cli-all:1:4"]
    assert cli.out(
        "consume", "cli-all", "-G", "cli-all-g", "-o", "earliest", "-c", "2", "-f", "%o\\n"
    ).split() == ["0", "1"]
    plan = cli.out(
        "groups", "reset-offsets", "cli-all-g", "--topic", "cli-all:1", "--to-latest", "--execute"
    )
    assert _rows(plan, "cli-all-g") == [["cli-all-g", "cli-all", "1", "2", "4"]]
    assert "cli-all-g" in cli.out("groups", "list").split()
    cli("groups", "delete", "cli-all-g", check=0)
    cli("topics", "delete", "cli-all", check=0)


def test_perf_produce_and_consume_against_kafka(kafka4):
    import re

    cli = CliRunner(kafka4.bootstrap)
    cli("topics", "create", "cli-perf", "-p", "2", check=0)
    done = cli("perf", "produce", "cli-perf", "-n", "4000", "-s", "64", "--acks", "all", check=0)
    m = re.fullmatch(
        r"4000 records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms "
        r"avg latency, ([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, "
        r"([\d.]+) ms 99th, ([\d.]+) ms 99.9th\.",
        done.stdout.decode().strip(),
    )
    assert m, done.stdout
    p50, p95, p99, mx = (float(m.group(i)) for i in (5, 6, 7, 4))
    assert float(m.group(1)) > 0 and 0 < p50 <= p95 <= p99 <= mx
    assert b"4000/4000" in done.stderr
    assert sorted(cli.out("offsets", "cli-perf").split()) == ["cli-perf:0:2000", "cli-perf:1:2000"]
    assert cli.out("perf", "consume", "cli-perf").startswith("4000 records consumed, 0.26 MB, ")
