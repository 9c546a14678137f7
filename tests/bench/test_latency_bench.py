"""`kclient bench latency` end to end with a tiny count: both clients, both measures, on the
mini-broker; every message timed, p50 <= p99, and the report's ratios against confluent-kafka."""

from __future__ import annotations

import argparse
import os
import time

import pytest

from kclient.bench import latency
from kclient.bench.latency import main, percentile
from tests.needs import missing, need_c, need_module, not_applicable

need_module("confluent_kafka")


def test_percentile_is_the_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 99), percentile([7.0], 99)) == (
        50.0,
        99.0,
        7.0,
    )


def test_bench_latency_tiny(capsys):
    args = ["--broker", "mini", "--messages", "20", "--warmup", "5", "--repeat", "1"]
    assert main([*args, "--broker-warmup", "10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines[1:5]]  # (then the interleaved rows)
    assert [(r[0], " ".join(r[1:-7]), r[-7]) for r in rows] == [
        ("mini", "sync send", "kclient"),
        ("mini", "sync send", "confluent"),
        ("mini", "end-to-end", "kclient"),
        ("mini", "end-to-end", "confluent"),
    ]
    for r in rows:
        p50, p99, cpu = float(r[-6]), float(r[-5]), float(r[-3])
        assert 0 < p50 <= p99, r
        assert 0 < cpu, r  # the worker's CPU per timed message
        assert r[-2].endswith("x") and r[-1].endswith("x"), r
    assert rows[1][-2:] == rows[3][-2:] == ["1.00x", "1.00x"]
    assert "20 messages of 100 B after 5 untimed; broker warmed by 10 untimed" in lines[-1]


def test_bench_latency_refuses_a_negative_broker_warmup():
    with pytest.raises(SystemExit, match="--broker-warmup"):
        main(["--broker", "mini", "--broker-warmup", "-1"])
    with pytest.raises(SystemExit, match="--broker-warm-seconds"):
        main(["--broker", "mini", "--broker-warm-seconds", "-1"])


def test_warm_up_repeats_every_client_until_the_time_is_up(monkeypatch):
    runs = []
    monkeypatch.setattr(latency, "run_worker", lambda c, m, b, t, a, n: runs.append((c, n)))
    args = argparse.Namespace(broker_warmup=7)
    assert latency.warm_up(["kclient", "confluent"], "sync", "b:1", "t", args, 0.0) == 1
    assert runs == [("kclient", 7), ("confluent", 7)]  # one round at least
    runs.clear()
    clock = iter([0.0, 0.5, 1.5, 2.5])  # the deadline, then after each round
    monkeypatch.setattr(latency.time, "monotonic", lambda: next(clock))
    assert latency.warm_up(["kclient", "confluent"], "e2e", "b:1", "t", args, 2.0) == 3
    assert runs == [("kclient", 7), ("confluent", 7)] * 3
    assert (
        latency.warm_up(["kclient"], "e2e", "b:1", "t", argparse.Namespace(broker_warmup=0), 9) == 0
    )


def test_the_python_floor_sends_only(capsys):
    args = ["--broker", "mini", "--messages", "20", "--warmup", "5", "--repeat", "1"]
    assert main([*args, "--broker-warmup", "0", "--clients", "kclient,python-floor"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:4]]
    assert [(" ".join(r[1:-7]), r[-7]) for r in rows] == [
        ("sync send", "kclient"),
        ("sync send", "python-floor"),
        ("end-to-end", "kclient"),  # the floor has no consumer
    ]
    assert all(0 < float(r[-6]) <= float(r[-5]) for r in rows)
    with pytest.raises(SystemExit, match="python-floor"):
        main([*args, "--clients", "kclient,nobody"])  # the choices are named


def test_interleaved_times_every_client_in_one_worker(capsys, monkeypatch):
    workers = []
    real = latency.run_worker

    def spy(client, measure, bootstrap, topic, args, messages=None):
        rows = real(client, measure, bootstrap, topic, args, messages)
        workers.append((client, measure, topic.count(","), [r["client"] for r in rows]))
        return rows

    monkeypatch.setattr(latency, "run_worker", spy)
    args = ["--broker", "mini", "--messages", "20", "--warmup", "5", "--repeat", "2"]
    assert main([*args, "--broker-warmup", "0"]) == 0
    mixed = [w for w in workers if w[1] == "interleaved"]
    assert mixed == [  # one worker per run, both clients in it, the first one rotating
        ("kclient,confluent", "interleaved", 1, ["kclient", "confluent"]),
        ("confluent,kclient", "interleaved", 1, ["confluent", "kclient"]),
    ]
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:7]]
    assert [(" ".join(r[1:-7]), r[-7]) for r in rows[4:]] == [
        ("e2e interleaved", "kclient"),
        ("e2e interleaved", "confluent"),
    ]
    assert all(0 < float(r[-6]) <= float(r[-5]) for r in rows[4:])
    assert [r[-3] for r in rows[4:]] == ["-", "-"]  # one process for both: no CPU of each
    assert rows[5][-2:] == ["1.00x", "1.00x"]


def test_interleaved_latencies_take_turns(monkeypatch):
    sent = []

    def sender(name):
        def make(bootstrap):
            return (lambda topic, value: (sent.append(name), box[name].append(1))), (lambda: None)

        return make

    box: dict[str, list[int]] = {"a": [], "b": []}

    def poller(name):
        def make(bootstrap, topic, start):
            def poll():
                got = len(box[name])
                box[name].clear()
                if not got:
                    time.sleep(0.001)
                return got

            return poll, (lambda: None)

        return make

    monkeypatch.setitem(latency.SENDERS, "a", sender("a"))
    monkeypatch.setitem(latency.SENDERS, "b", sender("b"))
    monkeypatch.setitem(latency.POLLERS, "a", poller("a"))
    monkeypatch.setitem(latency.POLLERS, "b", poller("b"))
    out, cpu = latency._e2e_latencies(["a", "b"], "x:1", ["ta", "tb"], 3, 1, 10, [0, 0])
    assert {k: len(v) for k, v in out.items()} == {"a": 3, "b": 3}
    assert cpu > 0
    # the first send of each, then 4 rounds, the first client rotating
    assert sent == ["a", "b", "a", "b", "b", "a", "a", "b", "b", "a"]


def test_the_footer_names_missing_c_speedups(monkeypatch):
    from kclient.bench import speedups_note

    monkeypatch.setenv("KCLIENT_PURE_PYTHON", "1")
    assert speedups_note() == (
        "C speed-ups MISSING: _speedups, _walk, _sock (KCLIENT_PURE_PYTHON=1)"
    )
    monkeypatch.delenv("KCLIENT_PURE_PYTHON")
    monkeypatch.setattr("kclient.bench.SPEEDUPS", ("kclient.io._no_such_module",))
    assert speedups_note().startswith("C speed-ups MISSING: _no_such_module (not built")


def test_the_footer_says_the_c_speedups_are_built():
    from kclient.bench import SPEEDUPS, speedups_note
    from kclient.protocol.speedups import load_speedup

    for name in SPEEDUPS:
        need_c(load_speedup(name), name)
    assert speedups_note() == "C speed-ups built"


def test_workers_pinned_to_the_cpus_asked(monkeypatch, capsys):
    cpu = min(os.sched_getaffinity(0))
    rows = []
    real = latency.run_worker

    def spy(client, measure, bootstrap, topic, args, messages=None):
        got = real(client, measure, bootstrap, topic, args, messages)
        rows.extend(got)
        return got

    monkeypatch.setattr(latency, "run_worker", spy)
    args = ["--broker", "mini", "--messages", "20", "--warmup", "5", "--repeat", "1"]
    assert main([*args, "--broker-warmup", "0", "--cpus", str(cpu)]) == 0
    assert len(rows) == 6 and all(r["cpus"] == [cpu] for r in rows)
    assert f"workers pinned to CPU {cpu}" in capsys.readouterr().out.splitlines()[-1]


def test_cpus_refused_by_name():
    with pytest.raises(SystemExit, match="--cpus 'x': CPU numbers"):
        main(["--broker", "mini", "--cpus", "x"])
    with pytest.raises(SystemExit, match="not CPUs this process may run on"):
        main(["--broker", "mini", "--cpus", str(max(os.sched_getaffinity(0)) + 1)])


def _pm_qos_value() -> int:
    with open(latency.CPU_DMA_LATENCY, "rb") as dev:
        return int.from_bytes(dev.read(4), "little", signed=True)


def test_no_idle_holds_the_cpus_awake_for_the_run(monkeypatch, capsys):
    """With --no-idle the PM QoS device reads 0 (the system's request in force) while the
    workers run, and the footer says so; after the run it is let go."""
    try:
        before = _pm_qos_value()
    except OSError as exc:  # (CI and the project's machines run as root on Linux)
        missing(f"{latency.CPU_DMA_LATENCY} not readable here ({exc.strerror}): needs root")
    if before == 0:
        not_applicable("something else already holds the CPUs' idle states off")
    during = []
    real = latency.run_worker

    def spy(client, measure, bootstrap, topic, args, messages=None):
        during.append(_pm_qos_value())
        return real(client, measure, bootstrap, topic, args, messages)

    monkeypatch.setattr(latency, "run_worker", spy)
    args = ["--broker", "mini", "--messages", "20", "--warmup", "5", "--repeat", "1"]
    assert main([*args, "--broker-warmup", "0", "--no-idle"]) == 0
    assert during and set(during) == {0}
    assert "CPU idle states held off (/dev/cpu_dma_latency 0)" in capsys.readouterr().out
    assert _pm_qos_value() == before


def test_no_idle_refused_by_name_without_the_device(monkeypatch):
    monkeypatch.setattr(latency, "CPU_DMA_LATENCY", "/nonexistent/cpu_dma_latency")
    with pytest.raises(SystemExit, match="--no-idle: cannot open /nonexistent/cpu_dma_latency"):
        main(["--broker", "mini", "--no-idle", "--repeat", "1", "--messages", "5"])
