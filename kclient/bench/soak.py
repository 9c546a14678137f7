"""Bounded soak of the mini-broker and the clients under faults (``kclient bench soak``).

One mini-broker process registered in a ZooKeeper, a topic of 4 partitions, three producer
processes (sync acks=1, async acks=1, async idempotent acks=all) and two consumer groups of two
processes each (ZooKeeper ConsumerConnector; broker-coordinated group connector).  Meanwhile:

* the broker is killed with -9 and restarted every ``--kill-every`` seconds (default 60);
* a group consumer is killed with -9 and restarted (at 35% of the run), then a ZooKeeper
  consumer (at 55%);
* a ZooKeeper consumer's session is forced to expire (at 75%): a second client attaches to the
  same session id and password and closes it.

Every minute (``--sample-every``) the RSS of every process and the load average are sampled.
At the end the producers close, the groups drain, and the whole log is read back: ``lost``
(acknowledged but not in the log) must be 0; duplicates (in the log and per group) and the
produce latency percentiles are reported.  Prints a summary, writes JSON with ``--json``;
exit status 1 when anything acknowledged was lost.  Not for CI (minutes of wall time).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kclient.bench.soak_ledger import audit, percentile, read_events, rss_mb

TOPIC = "soak"
PRODUCERS = (("p-sync", "sync"), ("p-async", "async"), ("p-idem", "idempotent"))
CONSUMERS = (
    ("zk0", "zk", "soak-zk"),
    ("zk1", "zk", "soak-zk"),
    ("gc0", "group", "soak-group"),
    ("gc1", "group", "soak-group"),
)


def _say(line: str) -> None:
    print(line, flush=True)


def _spawn(argv: list[str], out: Path) -> subprocess.Popen:
    """A child in its own process group (killed as a group), stdout/stderr to ``out``."""
    from kclient.testing.servers import die_with_parent

    with open(out, "ab") as f:
        return subprocess.Popen(
            die_with_parent(argv), stdout=f, stderr=subprocess.STDOUT, start_new_session=True
        )


def _kill9(proc: subprocess.Popen) -> None:
    """kill -9 the child's process group and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)


class Soak:
    """The processes of one soak run and what happened to them."""

    def __init__(self, workdir: Path, rate: float, log: Any = _say) -> None:
        self.workdir, self.rate, self.say = workdir, rate, log
        self.start = time.monotonic()
        self.events: list[dict[str, Any]] = []
        self.samples: list[dict[str, Any]] = []
        self.broker: subprocess.Popen | None = None
        self.workers: dict[str, subprocess.Popen] = {}
        self.zk: Any = None
        self.port = 0

    # -- processes ----------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def elapsed(self) -> float:
        return round(time.monotonic() - self.start, 1)

    def note(self, what: str, **extra: Any) -> None:
        """Record an event (and say it)."""
        self.events.append({"t": self.elapsed(), "event": what, **extra})
        self.say(f"[{self.elapsed():7.1f}s] {what} {extra if extra else ''}")

    def start_broker(self) -> None:
        from kclient.testing import wait_for_port

        argv = [
            sys.executable,
            "-m",
            "kclient.broker",
            "--log-dir",
            str(self.workdir / "logs"),
            "--port",
            str(self.port),
            "--zookeeper",
            self.zk.connect,
            "--config",
            "group.initial.rebalance.delay.ms=0",
        ]
        self.broker = _spawn(argv, self.workdir / "broker.out")
        wait_for_port(self.port, timeout=60, proc=self.broker)

    def restart_broker(self) -> None:
        """kill -9 the broker and start it again on the same port and log directory."""
        assert self.broker is not None
        _kill9(self.broker)
        t = time.monotonic()
        self.start_broker()
        self.note("broker killed -9 and restarted", restart_s=round(time.monotonic() - t, 2))

    def start_worker(self, name: str) -> None:
        out = self.workdir / f"{name}.events"
        args: list[str]
        if name.startswith("p-"):
            mode = dict(PRODUCERS)[name]
            args = ["producer", name, mode, self.bootstrap, TOPIC, str(self.rate), str(out)]
        else:
            kind, group = next((k, g) for n, k, g in CONSUMERS if n == name)
            connect = self.zk.connect if kind == "zk" else self.bootstrap
            args = ["consumer", name, kind, group, connect, TOPIC, str(out)]
        argv = [sys.executable, "-m", "kclient.bench.soak_workers", *args]
        self.workers[name] = _spawn(argv, self.workdir / f"{name}.out")

    def restart_worker(self, name: str) -> None:
        _kill9(self.workers[name])
        self.start_worker(name)
        self.note(f"consumer {name} killed -9 and restarted")

    def expire_session(self, name: str) -> None:
        """Force the ZooKeeper session of consumer ``name`` to expire (the 'expire' trick)."""
        from kazoo.client import KazooClient

        status = json.loads((self.workdir / f"{name}.status").read_text())
        ghost = KazooClient(
            hosts=self.zk.connect, client_id=(status["session"], bytes.fromhex(status["passwd"]))
        )
        ghost.start(timeout=30)
        ghost.stop()
        ghost.close()
        deadline = time.monotonic() + 60
        new = status["session"]
        while new in (None, status["session"]) and time.monotonic() < deadline:
            time.sleep(0.5)  # None: the connector is between sessions
            new = json.loads((self.workdir / f"{name}.status").read_text()).get("session")
        self.note(
            f"consumer {name}: ZooKeeper session expired",
            old=hex(status["session"]),
            new=hex(new) if new else None,
            renewed=new not in (None, status["session"]),
        )

    def sample(self) -> None:
        """RSS (MB) of every process and the load average, now."""
        rss = {"broker": rss_mb(self.broker.pid) if self.broker else None}
        rss.update({name: rss_mb(p.pid) for name, p in self.workers.items()})
        self.samples.append(
            {
                "t": self.elapsed(),
                "load": os.getloadavg()[0],
                "rss_mb": {k: round(v, 1) if v else None for k, v in rss.items()},
            }
        )
        self.say(
            f"[{self.elapsed():7.1f}s] sample load {os.getloadavg()[0]:.2f} rss "
            + " ".join(f"{k}={v:.0f}" for k, v in rss.items() if v)
        )

    def stop_workers(self, names: list[str], timeout: float) -> None:
        for name in names:
            self.workers[name].send_signal(signal.SIGTERM)
        for name in names:
            try:
                self.workers[name].wait(timeout)
            except subprocess.TimeoutExpired:
                self.note(f"{name} did not stop within {timeout} s: killed")
                _kill9(self.workers[name])

    def shutdown(self) -> None:
        for proc in self.workers.values():
            if proc.poll() is None:
                _kill9(proc)
        if self.broker is not None and self.broker.poll() is None:
            self.broker.send_signal(signal.SIGTERM)
            try:
                self.broker.wait(30)
            except subprocess.TimeoutExpired:
                _kill9(self.broker)


def _schedule(duration: float, kill_every: float) -> list[tuple[float, str, str]]:
    """(time, action, target) of every fault, in time order."""
    plan = [(t, "broker", "") for t in _every(kill_every, duration)]
    plan += [
        (0.35 * duration, "kill", "gc0"),
        (0.55 * duration, "kill", "zk1"),
        (0.75 * duration, "expire", "zk0"),
    ]
    return sorted(plan)


def _every(step: float, end: float) -> list[float]:
    times, t = [], step
    while t < end - 1:
        times.append(t)
        t += step
    return times


def _read_log(bootstrap: str) -> list[str]:
    """Every id in the topic's log, partition by partition in offset order."""
    from kclient.simple import SimpleConsumer

    host, port = bootstrap.rsplit(":", 1)
    ids: list[str] = []
    with SimpleConsumer(host, int(port), so_timeout=30000) as c:
        for partition in range(4):
            ids += [
                (m.message.value or b"").decode()
                for m in c.iter_messages(TOPIC, partition, 0, max_size=1 << 20)
            ]
    return ids


def _warm_up(soak: Soak, timeout: float) -> None:
    """Wait until every producer has an acknowledgement and every consumer a message, so
    that the run (and the first RSS sample) starts with every client working."""
    deadline = time.monotonic() + timeout
    pending = {name for name, _ in PRODUCERS} | {name for name, _, _ in CONSUMERS}
    while pending and time.monotonic() < deadline:
        for name in list(pending):
            events = read_events([soak.workdir / f"{name}.events"])
            if events.acked or events.consumed:
                pending.discard(name)
        time.sleep(0.5)
    if pending:
        raise RuntimeError(
            f"soak: {sorted(pending)} did not start within {timeout} s; see {soak.workdir}"
        )


def _rss_growth(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Per process: first and last RSS sample (MB) and the largest; restarted processes and
    the broker start again at each restart, so their last sample is since the restart."""
    growth: dict[str, Any] = {}
    names = {n for s in samples for n in s["rss_mb"]}
    for name in sorted(names):
        values = [s["rss_mb"].get(name) for s in samples]
        seen = [v for v in values if v and v > 5]  # a process just exec'ing: not yet
        if seen:
            growth[name] = {"first": seen[0], "last": seen[-1], "max": max(seen)}
    return growth


def _drain(soak: Soak, acked: set[str], timeout: float) -> None:
    """Wait until both groups delivered every acked id, or no progress for ``timeout``."""
    groups = {g for _, _, g in CONSUMERS}
    last, since = -1, time.monotonic()
    while time.monotonic() - since < timeout:
        missing = 0
        for group in groups:
            names = [n for n, _, g in CONSUMERS if g == group]
            got = set(read_events(soak.workdir / f"{n}.events" for n in names).consumed)
            missing += len(acked - got)
        if missing == 0:
            return
        if missing != last:
            last, since = missing, time.monotonic()
        time.sleep(2)
    soak.note("drain stopped making progress", missing=last)


def run(
    minutes: float,
    kill_every: float,
    sample_every: float,
    rate: float,
    workdir: Path,
    log: Any = _say,
) -> dict[str, Any]:
    """One soak run (see the module docstring); the report as a dict."""
    from kclient.cluster import Cluster
    from kclient.testing import ZooKeeperServer, free_port

    soak = Soak(workdir, rate, log)
    load_before = os.getloadavg()
    with ZooKeeperServer() as zk:
        soak.zk, soak.port = zk, free_port()
        try:
            soak.start_broker()
            with Cluster(soak.bootstrap) as cluster:
                cluster.create_topic(TOPIC, partitions=4)
            for name, _, _ in CONSUMERS:
                soak.start_worker(name)
            for name, _ in PRODUCERS:
                soak.start_worker(name)
            _warm_up(soak, timeout=120)
            soak.start = time.monotonic()
            soak.note("started", bootstrap=soak.bootstrap, zookeeper=zk.connect)
            duration = minutes * 60
            plan = _schedule(duration, kill_every)
            samples = _every(sample_every, duration + 2)
            soak.sample()
            while soak.elapsed() < duration:
                now = soak.elapsed()
                while plan and plan[0][0] <= now:
                    _, action, target = plan.pop(0)
                    if action == "broker":
                        soak.restart_broker()
                    elif action == "kill":
                        soak.restart_worker(target)
                    else:
                        soak.expire_session(target)
                while samples and samples[0] <= now:
                    samples.pop(0)
                    soak.sample()
                time.sleep(0.2)
            soak.sample()
            soak.stop_workers([n for n, _ in PRODUCERS], timeout=60)
            soak.note("producers closed")
            produced = read_events(workdir / f"{n}.events" for n, _ in PRODUCERS)
            _drain(soak, set(produced.acked), timeout=60)
            soak.note("groups drained")
            stored = _read_log(soak.bootstrap)
            soak.stop_workers([n for n, _, _ in CONSUMERS], timeout=60)
        finally:
            soak.shutdown()
    return _report(soak, produced, stored, load_before, minutes, kill_every, rate)


def _report(
    soak: Soak,
    produced: Any,
    stored: list[str],
    load_before: tuple,
    minutes: float,
    kill_every: float,
    rate: float,
) -> dict[str, Any]:
    groups = {g for _, _, g in CONSUMERS}
    delivered = {
        g: read_events(soak.workdir / f"{n}.events" for n, _, gg in CONSUMERS if gg == g).consumed
        for g in sorted(groups)
    }
    result = audit(produced.acked, stored, delivered)
    latency: dict[str, Any] = {}
    for name, mode in PRODUCERS:
        mine = [v for k, v in produced.acked.items() if k.rsplit("-", 1)[0] == name]
        failed = sum(1 for k in produced.failed if k.rsplit("-", 1)[0] == name)
        latency[name] = {
            "mode": mode,
            "acked": len(mine),
            "failed": failed,
            "p50_ms": percentile(mine, 50),
            "p99_ms": percentile(mine, 99),
            "max_ms": max(mine) if mine else None,
        }
    all_lat = list(produced.acked.values())
    return {
        "minutes": minutes,
        "kill_every_s": kill_every,
        "rate_per_producer": rate,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        **result,
        "failed": len(produced.failed),
        "latency": {
            "p50_ms": percentile(all_lat, 50),
            "p99_ms": percentile(all_lat, 99),
            "by_producer": latency,
        },
        "rss_mb": _rss_growth(soak.samples),
        "events": soak.events,
        "samples": soak.samples,
    }


def summary(report: dict[str, Any]) -> str:
    """The human-readable summary of a report."""
    lines = [
        f"soak: {report['minutes']} min, broker kill -9 every {report['kill_every_s']} s, "
        f"load {report['load_before'][0]} -> {report['load_after'][0]}",
        f"acked {report['acked']}  failed {report['failed']}  in log {report['stored']}  "
        f"LOST {report['lost']}  log duplicates {report['log_duplicates']} "
        f"{report['log_duplicates_by_producer']}",
    ]
    for group, g in report["groups"].items():
        lines.append(
            f"group {group}: delivered {g['delivered']} ({g['unique']} unique), "
            f"missing {g['missing']}, duplicates {g['duplicates']}"
        )
    lat = report["latency"]
    lines.append(f"produce latency p50 {lat['p50_ms']:.1f} ms  p99 {lat['p99_ms']:.1f} ms")
    for name, p in lat["by_producer"].items():
        if p["acked"]:
            lines.append(
                f"  {name} ({p['mode']}): acked {p['acked']} failed {p['failed']} "
                f"p50 {p['p50_ms']:.1f} p99 {p['p99_ms']:.1f} max {p['max_ms']:.0f} ms"
            )
    lines.append(
        "RSS MB first -> last (max): "
        + ", ".join(
            f"{n} {g['first']:.0f} -> {g['last']:.0f} ({g['max']:.0f})"
            for n, g in report["rss_mb"].items()
        )
    )
    names = list(report["samples"][0]["rss_mb"]) if report["samples"] else []
    lines.append("RSS MB per sample (t s: " + " ".join(names) + ")")
    for s in report["samples"]:
        lines.append(
            f"  {s['t']:6.0f}: "
            + " ".join(f"{s['rss_mb'].get(n) or '-'}" for n in names)
            + f"  load {s['load']:.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="kclient bench soak",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--kill-every", type=float, default=60.0, help="broker kill -9 period (s)")
    p.add_argument("--sample-every", type=float, default=60.0, help="RSS sampling period (s)")
    p.add_argument("--rate", type=float, default=50.0, help="messages per second per producer")
    p.add_argument("--json", metavar="PATH", help="write the report as JSON")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    args = p.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="kclient-soak-"))
    try:
        report = run(args.minutes, args.kill_every, args.sample_every, args.rate, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"work directory: {workdir}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    print(summary(report))
    return 1 if report["lost"] else 0


if __name__ == "__main__":
    sys.exit(main())
