"""``kclient perf produce|consume`` against the mini-broker: counts, throughput, latency."""

import re

from kclient.cli.perf import percentile


def test_percentile_is_nearest_rank():
    ms = [float(i) for i in range(1, 101)]
    assert [percentile(ms, p) for p in (50, 95, 99, 100)] == [50.0, 95.0, 99.0, 100.0]
    assert percentile([], 99) == 0.0 and percentile([7.0], 50) == 7.0


def test_perf_produce_then_consume(cli):
    cli("topics", "create", "perf", "-p", "2", check=0)
    done = cli("perf", "produce", "perf", "-n", "5000", "-s", "50", "--codec", "lz4", check=0)
    line = done.stdout.decode().strip()
    m = re.fullmatch(
        r"5000 records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms "
        r"avg latency, ([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, "
        r"([\d.]+) ms 99th, ([\d.]+) ms 99.9th\.",
        line,
    )
    assert m, line
    p50, p95, p99, p999, mx = (float(m.group(i)) for i in (5, 6, 7, 8, 4))
    assert float(m.group(1)) > 0 and 0 < p50 <= p95 <= p99 <= p999 <= mx
    assert b"5000/5000" in done.stderr  # the progress bar's last state
    assert cli.out("offsets", "perf").split() == ["perf:0:2500", "perf:1:2500"]
    out = cli.out("perf", "consume", "perf")
    assert out.startswith("5000 records consumed, 0.25 MB, ")
    assert cli.out("perf", "consume", "perf", "-n", "1200").startswith("1200 records consumed")
