"""Share-group benchmark: kclient's ShareConsumer beside confluent-kafka's on Kafka 4.x.

    kclient bench share --bootstrap 127.0.0.1:9092
    kclient bench share --messages 300000      # starts Kafka 4.x (kclient.testing.KafkaServer)

By default 1,000,000 records: a round then drains for one to three seconds on a two-core
machine, where 100,000 or 300,000 drained in well under a second, a time set as much by when
the scheduler runs each member process as by either client (three-member rounds moved by
more than 1.5x between runs minutes apart).

One topic of ``--partitions`` partitions holds ``--messages`` records of ``--value-size``
bytes.  For each client, acknowledgement mode (implicit: every record of a poll accepted at
the next; explicit: ``acknowledge(record)`` each, ``commit_sync`` per poll) and member count
(``--consumers``, each its own Python process), a new share group (``share.auto.offset.reset``
earliest) drains the topic; records/s is the count over the time from the first record any
member got to the last (members stop once their counts add up).  Every member imports its
client, makes its consumer and subscribes before any of them polls (a start barrier), so a
client's import time does not decide which member drains alone, and the barrier opens once
the coordinator has given every member its partitions (ShareGroupDescribe), so that a round
measures draining, not when heartbeats bring assignments; the slowest member's start-up
(process spawn to subscribed) is reported beside the rate.  Every record must be
received exactly once (a duplicate or a missing record fails the run).  Best (or with
``--statistic median`` the median) of ``--repeat`` rounds, the clients' rounds alternating;
ratios kclient / confluent-kafka.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

__all__ = ["main"]

CLIENTS = ("kclient", "confluent")
#: how often a member writes its count: a file write per poll (0.26 ms each on this machine,
#: 10-20% of a one-member round) was the bench's cost, not the client's
_PROGRESS_S = 0.02
MODES = ("implicit", "explicit")


def _worker(
    client: str, bootstrap: str, group: str, topic: str, mode: str, progress_file: str
) -> None:
    """Drain as one member, writing how many records it has into ``progress_file``, until
    ``<progress_file>.stop`` appears; print {count, first, last, keys} as JSON.  The member's
    own bookkeeping stays light, so that the rate is the client's: each poll's (partition,
    offset) pairs kept as they come, the count written at most every ``_PROGRESS_S`` (and
    after a poll that got nothing, so the last count is written once the topic is drained)."""
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": mode}
    explicit = mode == "explicit"
    seen: list[tuple[int, int]] = []
    written = 0.0
    first = last = 0.0
    if client == "kclient":
        from kclient import ShareConsumer

        c: Any = ShareConsumer(conf)
        c.subscribe([topic])

        def batch() -> list[tuple[int, int]]:
            records = c.poll(0.5)
            if explicit:
                ack = c.acknowledge
                for r in records:
                    ack(r)
                if records:
                    c.commit_sync()
            return [(r.partition, r.offset) for r in records]
    else:
        from confluent_kafka import ShareConsumer as CShare

        c = CShare(conf)
        c.subscribe([topic])

        def batch() -> list[tuple[int, int]]:
            out = []
            records = c.poll(0.5)
            for m in records:
                if m.error() is None:
                    out.append((m.partition(), m.offset()))
                    if explicit:
                        c.acknowledge(m)
            if explicit and out:
                c.commit_sync()
            return out

    progress = Path(progress_file)
    ready = progress.with_suffix(".wait")
    ready.write_text(repr(time.time()))
    ready.rename(progress.with_suffix(".ready"))  # whole when it appears
    go = progress.parent / "go"
    while not go.exists():  # the start barrier: every member subscribed
        time.sleep(0.001)
    started = time.monotonic()
    while not progress.with_suffix(".stop").exists() and time.monotonic() - started < 300:
        got = batch()
        now = time.time()
        if got:
            if not first:
                first = now
            last = now
            seen += got
        if not got or now - written >= _PROGRESS_S:
            progress.write_text(str(len(seen)))
            written = now
    c.close()
    print(json.dumps({"count": len(seen), "first": first, "last": last, "keys": seen}))


def _produce(bootstrap: str, topic: str, n: int, size: int, partitions: int) -> None:
    from kclient import Producer, ProducerData
    from kclient.admin import AdminClient

    with AdminClient(bootstrap) as admin:
        admin.create_topic(topic, num_partitions=partitions)
    value = b"x" * size
    with Producer({"metadata.broker.list": bootstrap, "producer.type": "sync"}) as p:
        for start in range(0, n, 2000):
            p.send(
                [
                    ProducerData(topic, value, partition=i % partitions)
                    for i in range(start, min(n, start + 2000))
                ]
            )


def _group(bootstrap: str) -> str:
    from kclient.admin import AdminClient
    from kclient.admin.types import AlterConfigOp, ConfigResource, ConfigResourceType

    group = f"bench-share-{uuid.uuid4().hex[:8]}"
    with AdminClient(bootstrap) as admin:
        admin.incremental_alter_configs(
            {
                ConfigResource(ConfigResourceType.GROUP, group): [
                    AlterConfigOp("share.auto.offset.reset", "earliest")
                ]
            }
        )
    return group


def _settled(bootstrap: str, group: str, members: int, timeout: float = 30.0) -> bool:
    """Wait until the coordinator has given each of the ``members`` its partitions of the
    group's latest assignment (ShareGroupDescribe: every member at the assignment epoch, none
    without partitions): the start barrier's second half, so that a round measures draining,
    not when heartbeats (``group.share.heartbeat.interval.ms`` apart) bring assignments.
    False when that does not happen within ``timeout`` (the round goes on)."""
    from kclient.admin import AdminClient
    from kclient.errors import GroupIdNotFoundError

    deadline = time.monotonic() + timeout
    with AdminClient(bootstrap) as admin:
        while time.monotonic() < deadline:
            try:
                d = admin.describe_share_groups([group])[group]
            except GroupIdNotFoundError:  # no member's heartbeat has reached it yet
                time.sleep(0.02)
                continue
            if len(d.members) == members and all(
                m.assignment and m.member_epoch == d.assignment_epoch == d.group_epoch
                for m in d.members
            ):
                return True
            time.sleep(0.02)
    return False


def _count(path: Path) -> int:
    try:
        return int(path.read_text() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def _round(
    client: str, bootstrap: str, topic: str, mode: str, members: int, n: int
) -> tuple[float, float]:
    """One drain by ``members`` processes: (records/s, the slowest member's start-up in s)."""
    group = _group(bootstrap)
    work = Path(tempfile.mkdtemp(prefix="kclient-bench-share-"))
    files = [work / f"member-{i}.count" for i in range(members)]
    spawned = time.time()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kclient.bench.share",
                "--worker",
                client,
                bootstrap,
                group,
                topic,
                mode,
                str(f),
            ],
            stdout=subprocess.PIPE,
        )
        for f in files
    ]
    try:
        deadline = time.monotonic() + 300
        ready = [f.with_suffix(".ready") for f in files]
        while time.monotonic() < deadline and not all(r.exists() for r in ready):
            if any(p.poll() is not None for p in procs):
                raise SystemExit(f"{client} {mode} x{members}: a member exited before it was ready")
            time.sleep(0.005)
        startup = max(float(r.read_text() or spawned) for r in ready) - spawned
        if not _settled(bootstrap, group, members):
            print(f"{client} {mode} x{members}: the group's assignment did not settle in 30 s")
        (work / "go").touch()
        while time.monotonic() < deadline and sum(_count(f) for f in files) < n:
            time.sleep(0.05)
        for f in files:  # every member stops now: the group has drained the topic
            f.with_suffix(".stop").touch()
        results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    except BaseException:  # no member is left waiting at the barrier
        for proc in procs:
            proc.kill()
        raise
    shutil.rmtree(work, ignore_errors=True)
    keys = [(p, o) for r in results for p, o in r["keys"]]
    if len(keys) != n or len(set(keys)) != n:
        raise SystemExit(
            f"{client} {mode} x{members}: {len(keys)} records received, {len(set(keys))} "
            f"distinct, {n} written"
        )
    first = min(r["first"] for r in results if r["count"])
    last = max(r["last"] for r in results if r["count"])
    return n / max(last - first, 1e-6), startup


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["--worker"]:
        _worker(*args_list[1:7])
        return 0
    ap = argparse.ArgumentParser(
        prog="kclient bench share",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--bootstrap", help="a running Kafka 4.x (default: start one)")
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--consumers", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument("--clients", nargs="+", choices=CLIENTS, default=list(CLIENTS))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--statistic",
        choices=("best", "median"),
        default="best",
        help="what of the --repeat rounds to report (median: steadier on a busy machine)",
    )
    args = ap.parse_args(args_list)
    pick = max if args.statistic == "best" else statistics.median
    with ExitStack() as stack:
        bootstrap = args.bootstrap
        if bootstrap is None:
            from kclient.testing import KafkaServer

            bootstrap = stack.enter_context(KafkaServer("4")).bootstrap
        topic = f"bench-share-{uuid.uuid4().hex[:8]}"
        _produce(bootstrap, topic, args.messages, args.value_size, args.partitions)
        print(f"{args.messages} records of {args.value_size} B in {args.partitions} partitions")
        print(
            f"{'mode':9} {'members':>7} " + " ".join(f"{c:>12}" for c in args.clients) + "   ratio"
        )
        for mode in args.modes:
            for members in args.consumers:
                rates: dict[str, list[float]] = {c: [] for c in args.clients}
                startup = dict.fromkeys(args.clients, float("inf"))
                for _ in range(args.repeat):
                    for c in args.clients:
                        rate, took = _round(c, bootstrap, topic, mode, members, args.messages)
                        rates[c].append(rate)
                        startup[c] = min(startup[c], took)
                best = {c: float(pick(rates[c])) for c in args.clients}
                row = " ".join(f"{best[c]:>10,.0f}/s" for c in args.clients)
                ratio = (
                    f"{best['kclient'] / best['confluent']:.2f}x"
                    if len(args.clients) == 2 and best["confluent"]
                    else ""
                )
                starts = " / ".join(f"{startup[c] * 1e3:.0f}" for c in args.clients)
                print(
                    f"{mode:9} {members:>7} {row}   {ratio:>5}   start-up ms {starts}", flush=True
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
