"""``kclient bench ... --json PATH`` results and ``kclient bench charts``: a real (tiny) run on
the mini-broker is written, read back and drawn; the committed charts are small and current."""

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kclient.bench.charts import render_all
from kclient.bench.results import read_results, row, write_results
from tests.needs import need_module

need_module("matplotlib")
ROOT = Path(__file__).resolve().parents[2]
IMG = ROOT / "docs" / "img"


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_stream_bench_writes_results_that_chart(tmp_path):
    out = tmp_path / "stream.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kclient.cli",
            "bench",
            "stream",
            "--messages",
            "2000",
            "--partitions",
            "1",
            "--repeat",
            "1",
            "--clients",
            "kclient,confluent",
            "--json",
            str(out),
        ],
        check=True,
        timeout=240,
        capture_output=True,
    )
    doc = read_results(out)
    assert doc["benchmark"] == "stream" and doc["kclient"] == "kclient"
    assert doc["command"].startswith("kclient bench stream --messages 2000")
    assert {r["client"] for r in doc["results"]} == {"kclient", "confluent"}
    assert all(r["broker"] == "mini" and r["rate"] > 0 for r in doc["results"])
    [png] = render_all([out], tmp_path / "img")
    assert png.name == "bench-stream.png" and 0 < png.stat().st_size < 100_000
    assert _png_size(png)[0] >= 500


def test_one_png_per_broker_and_a_ratio_for_each_peer(tmp_path):
    rows = [
        row(b, c, client, rate)
        for b in ("mini", "tansu")
        for c in ("100 B", "10 KB")
        for client, rate in (("kclient", 300.0), ("kclient-list", 400.0), ("peer", 100.0))
    ]
    path = write_results(tmp_path / "p.json", "producer", "kclient", rows, ["--x"])
    assert json.loads(path.read_text())["command"] == "kclient bench producer --x"
    pngs = render_all([path], tmp_path)
    assert sorted(p.name for p in pngs) == ["bench-producer-mini.png", "bench-producer-tansu.png"]
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="not a kclient bench results file"):
        read_results(bad)


def test_committed_charts_match_their_results_and_stay_small():
    results = sorted((IMG / "results").glob("*.json"))
    assert {p.stem for p in results} >= {"producer", "consumer", "stream", "broker"}
    for path in results:
        doc = read_results(path)
        png = IMG / f"bench-{doc['benchmark']}.png"
        assert png.exists() and png.stat().st_size < 100_000, png
        assert f"({png.relative_to(ROOT / 'docs')})" in (ROOT / "docs/benchmarks.md").read_text()
