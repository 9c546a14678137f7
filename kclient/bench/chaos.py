"""kclient bench chaos: producers and consumers against a 3-node cluster that is being broken,
and a check of the history (issue 25).

Clients (kclient.bench.chaos_workers), all on one topic of 3 partitions: an idempotent
``Producer`` (acks=all), an idempotent ``AIOProducer``, a transactional ``Producer`` (every fourth
transaction aborted), two ``kclient.Consumer`` members of one group and an ``AIOConsumer`` in
another, both read_committed (classic group protocol). Faults (kclient.testing.chaos_cluster),
one every ``--fault-every`` seconds, in turn: a partition leader killed -9 and restarted, a
broker paused (SIGSTOP ... SIGCONT on Kafka), every client connection cut by the proxies, the
whole cluster restarted. Then the producers close, the cluster heals, the log is read back with
read_committed and the consumers drain; the history check (kclient.bench.chaos_history) says
whether anything acknowledged was lost, anything committed is there twice, anything aborted
was seen, or any order broke. Exit status 1 if so, or if a client hung or crashed.

    kclient bench chaos --minutes 3 --cluster kafka
    kclient bench chaos --minutes 3 --cluster mini --json chaos.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .chaos_history import History, decode, failures
from .chaos_workers import (
    AIOGroupConsumer,
    AIOIdempotentProducer,
    GroupConsumer,
    IdempotentProducer,
    TransactionalProducer,
    Worker,
    read_log,
    transactions_settled,
)

__all__ = ["run", "summary", "main"]

TOPIC, PARTITIONS = "chaos", 3
FAULTS = ("kill_leader", "pause", "cut", "restart_all")


def run(
    cluster: str = "mini",
    seconds: float = 180.0,
    fault_every: float = 15.0,
    pause: float | None = None,
    workdir: Path | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """One chaos run against ``cluster`` ("kafka" or "mini"); returns the report."""
    from kclient.testing.chaos_cluster import chaos_cluster

    started = time.monotonic()
    with chaos_cluster(cluster, workdir) as target:
        target.create_topic(TOPIC, PARTITIONS)
        log(
            f"chaos: {cluster} cluster up in {time.monotonic() - started:.0f} s "
            f"({target.bootstrap})"
        )
        history = History()
        t0 = time.monotonic()
        producers, consumers = _workers(history, target.bootstrap)
        for w in producers + consumers:
            w.start()
        _wait(lambda: len(history.acked) >= 20 and history.deliveries, 60, "first acks")
        pause = pause if pause is not None else (6.0 if cluster == "kafka" else 3.0)
        n = 0
        while time.monotonic() - t0 < seconds:
            if _sleep_until(t0 + (n + 1) * fault_every, t0 + seconds):
                break
            what = _fault(target, FAULTS[n % len(FAULTS)], n, pause)
            history.event(time.monotonic() - t0, what)
            log(f"chaos: {time.monotonic() - t0:5.1f} s  {what}")
            n += 1
        hung = _finish(producers, 120)
        target.heal()
        # a transaction its producer left open ends when the coordinator aborts it
        # (transaction.timeout.ms, 20 s): read_committed reads stop before it until then
        _wait(
            lambda: transactions_settled(target.bootstrap, TOPIC, PARTITIONS),
            60,
            "no transaction open",
        )
        entries = read_log(target.bootstrap, TOPIC, PARTITIONS)
        offsets = {(p, o) for p, o, _ in entries}
        groups = {w.group for w in consumers if isinstance(w, (GroupConsumer, AIOGroupConsumer))}
        _wait(
            lambda: all(
                offsets <= {(d.partition, d.offset) for d in history.deliveries if d.group == g}
                for g in groups
            ),
            90,
            "groups drained",
        )
        hung += _finish(consumers, 60)
        verdict = history.check(entries)
        if verdict["lost"]:  # behind a transaction left open (the last stable offset)?
            dirty = {
                decode(v)
                for _, _, v in read_log(
                    target.bootstrap, TOPIC, PARTITIONS, isolation="read_uncommitted"
                )
            }
            verdict["lost_but_uncommitted_log_has"] = sum(r in dirty for r in verdict["lost"])
    verdict.update(
        cluster=cluster,
        seconds=round(time.monotonic() - t0, 1),
        faults=n,
        hung=hung,
        crashed=[w.label for w in producers + consumers if w.crash],
        acked=len(history.acked),
        load=os.getloadavg()[0],
    )
    verdict["failures"] = (
        failures(verdict)
        + [f"{w} did not finish" for w in hung]
        + [f"{w} crashed" for w in verdict["crashed"]]
    )
    return verdict


def _workers(history: History, bootstrap: str) -> tuple[list[Worker], list[Worker]]:
    args = (history, bootstrap, TOPIC, PARTITIONS)
    producers: list[Worker] = [
        IdempotentProducer("p-idem", *args),
        AIOIdempotentProducer("p-aio", *args),
        TransactionalProducer("p-txn", *args),
    ]
    consumers: list[Worker] = [
        GroupConsumer("c-sync-0", *args),
        GroupConsumer("c-sync-1", *args),
        AIOGroupConsumer("c-aio", *args),
    ]
    return producers, consumers


def _fault(target: Any, kind: str, n: int, pause: float) -> str:
    """Carry out fault ``kind`` (the ``n``-th), naming what was done."""
    if kind == "kill_leader":
        return target.kill_and_restart(_leader(target, n % PARTITIONS))
    if kind == "pause":
        return target.pause(_leader(target, (n + 1) % PARTITIONS), pause)
    if kind == "cut":
        return target.cut()
    return target.restart_all()


def _leader(target: Any, partition: int) -> int:
    """The node leading ``partition`` now; when none does (an election under way) or metadata
    cannot be had, a node chosen by the partition number."""
    nodes = target.node_ids()
    try:
        leader = target.leader(TOPIC, partition)
    except Exception:  # noqa: BLE001 - any node will do for a fault
        leader = -1
    return leader if leader in nodes else nodes[partition % len(nodes)]


def _sleep_until(when: float, end: float) -> bool:
    """Sleep until ``when``; True when ``end`` comes first (no fault left to run)."""
    if when >= end:
        time.sleep(max(0.0, end - time.monotonic()))
        return True
    time.sleep(max(0.0, when - time.monotonic()))
    return False


def _wait(predicate: Callable[[], object], timeout: float, what: str) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    print(f"chaos: gave up waiting for {what} after {timeout:.0f} s", file=sys.stderr)
    return False


def _finish(workers: list[Worker], timeout: float) -> list[str]:
    """Stop ``workers`` and wait for them; the names of those still running after ``timeout``."""
    for w in workers:
        w.stopping.set()
    deadline = time.monotonic() + timeout
    for w in workers:
        w.join(max(0.1, deadline - time.monotonic()))
    return [w.label for w in workers if w.is_alive()]


def summary(report: dict[str, Any]) -> str:
    """The report in a few lines."""
    groups = "; ".join(
        f"{g}: delivered {v['delivered']}, missing {v['missing']}, redelivered {v['redelivered']}"
        for g, v in report["groups"].items()
    )
    lines = [
        f"cluster {report['cluster']}: {report['seconds']} s, {report['faults']} faults, load "
        f"{report['load']:.2f}",
        f"acknowledged {report['acked']} (promised in all {report['promised']}), failed sends "
        f"{report['failed_sends']}; transactions: records committed {report['committed']}, "
        f"aborted {report['aborted']}, in doubt {report['in_doubt']}",
        f"log {report['log_records']} records; lost {len(report['lost'])}, misplaced "
        f"{len(report['misplaced'])}, duplicates {len(report['duplicates'])}, aborted visible "
        f"{len(report['aborted_visible'])}, out of order {len(report['log_order'])} (log) / "
        f"{len(report['delivery_order'])} (deliveries), phantoms {len(report['phantoms'])}",
        f"groups: {groups}",
        f"client errors: {report['errors']}",
        "faults: " + "; ".join(report["events"]),
        "verdict: "
        + ("PASS" if not report["failures"] else "FAIL: " + "; ".join(report["failures"])),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="kclient bench chaos",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--minutes", type=float, default=3.0, help="minutes of faults per cluster")
    p.add_argument("--cluster", choices=("kafka", "mini", "both"), default="both")
    p.add_argument("--fault-every", type=float, default=15.0, help="seconds between faults")
    p.add_argument("--json", metavar="PATH", help="write the reports as JSON")
    args = p.parse_args(argv)
    reports = []
    for kind in ("kafka", "mini") if args.cluster == "both" else (args.cluster,):
        report = run(kind, args.minutes * 60, args.fault_every)
        print(summary(report), flush=True)
        reports.append(report)
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=1, default=str))
    return 1 if any(r["failures"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
