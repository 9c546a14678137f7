"""`kclient bench consumer` runs end to end with a tiny count: every reader over two partitions,
each reading every record, ratios against its own peers, peak RSS reported."""

from __future__ import annotations

import json

from kclient.bench.consumer import CLIENTS, main
from tests.needs import need_module

need_module("aiokafka")
need_module("confluent_kafka")


def test_bench_consumer_tiny(capsys):
    assert (
        main(
            [
                "--broker",
                "mini",
                "--small",
                "600",
                "--large",
                "0",
                "--repeat",
                "1",
                "--partitions",
                "2",
                "--json",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    rows = json.loads(lines[-1])
    assert sorted(r["client"] for r in rows) == sorted(CLIENTS)
    for r in rows:
        assert r["partitions"] == 2 and r["count"] == 600 and r["rate"] > 0, r
        assert 10_000 < r["max_rss_kb"] < 2_000_000, r  # this reader's own peak
    table = "\n".join(lines[:-1])
    aio = next(line for line in table.splitlines() if " kclient-aio " in line)
    assert aio.split()[8].endswith("x") and aio.split()[9].endswith("x")  # vs aiokafka, aio
