"""kclient bench serdes runs: both sides write the same bytes and read them back, rates and
ratios come out (the figures themselves are for docs/benchmarks.md, not asserted)."""

from kclient.bench import serdes


def test_serdes_bench_runs(tmp_path):
    from kclient.broker import MiniBroker

    with MiniBroker(log_dir=tmp_path / "b", schema_registry=True) as broker:
        rates = serdes.run(broker.schema_registry_url, 300, 1)
    assert 80 < rates["bytes"] < 130
    for op in ("serialize", "deserialize"):
        assert rates[f"kclient_{op}"] > 0 and rates[f"confluent_{op}"] > 0
        assert rates[f"{op}_ratio"] > 0
