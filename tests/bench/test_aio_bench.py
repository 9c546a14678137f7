"""`kclient bench aio` runs end to end with a tiny count: both clients, every mode, ratios."""

from __future__ import annotations

import json

from kclient.cli import main
from tests.needs import need_module

need_module("aiokafka")


def test_bench_aio_tiny(tmp_path, capsys):
    out = tmp_path / "aio.json"
    assert main(["bench", "aio", "--messages", "2000", "--repeat", "1", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "kclient.aio / aiokafka" in text
    results = json.loads(out.read_text())
    assert set(results["ratios"]) == {"produce", "consume", "iterate"}
    for key, r in results["best"].items():
        assert r["messages"] >= 2000, key
        assert r["rate"] > 0
