"""Broker benchmark: the mini-broker against tansu (and real Kafka), driven by confluent-kafka.

Run: ``python -m kclient.bench.broker [--sizes 100 10000] [--records-small N] [--records-large N]
[--partitions 1 3] [--repeat K] [--max-seconds S] [--brokers mini tansu kafka] [--py-spy DIR]``

``--brokers ... kafka`` adds Apache Kafka 4.x (``kclient.testing.KafkaServer``, one KRaft node, its
log on disk like the mini-broker's) and prints the mini-broker / Kafka ratio beside.

Both brokers run at once, each in its own process (so neither shares a GIL with the client):
tansu (Rust, in-memory storage) via ``kclient.testing.TansuServer`` and the mini-broker via
``python -m kclient.broker`` with a temporary log directory and its default settings.  For each
record size, partition count and broker, in every round:

* a fresh topic is created;
* **produce**: a confluent-kafka Producer (acks=1, linger.ms=5, batch.size 1,000,000, no
  compression, null keys) that has already fetched the topic's metadata sends N values, timed
  from the first ``produce()`` until ``flush()`` returns (every record acknowledged; delivery
  failures are counted and fail the run).  N is the smaller of the record count and what fits
  into ``--max-seconds``;
* **fetch**: a confluent-kafka Consumer (``assign()`` at offset 0, no group membership, no
  commits, ``fetch.wait.max.ms`` 100 and ``fetch.queue.backoff.ms`` 10 so that librdkafka's
  default one-second back-off on a full local queue does not dominate) reads all N records back
  with ``consume(num_messages=...)``, timed from ``assign()`` until the last record arrives
  (checked: no error events, N records, each partition's last offset + 1 adding up to N);
* the topic is deleted.

Rounds interleave the brokers (the order alternates each round) and the best of ``--repeat``
rounds is kept per broker, size, partitions and phase, so background load on the machine hits
both alike.  Printed: records/s and MB/s (values only, 10^6 bytes) per broker, the CPU time of
each broker process per phase, and mini-broker / tansu ratios beside SPEC §10's targets (at least
0.5x on 100-byte records and 1.0x on 10 KB records, produce and fetch).

``--py-spy DIR`` additionally samples the mini-broker with py-spy during each of its phases and
writes collapsed stacks (``py-spy record --format raw``) to DIR; sampling costs CPU, so use it
for profiling runs, not for the figures.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack

from kclient.bench import mini_broker_process

BROKERS = ("mini", "tansu", "kafka")
DEFAULT_BROKERS = ["mini", "tansu"]
SMALL_LIMIT = 1000  # sizes below: "100-byte" target, else "10 KB" target


def target(size: int) -> float:
    """SPEC §10's minimum mini-broker / tansu ratio for records of ``size`` bytes."""
    return 0.5 if size < SMALL_LIMIT else 1.0


PHASES = ("produce", "fetch")

PRODUCER_CONFIG = {
    "acks": 1,
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "batch.num.messages": 100_000,
    "compression.codec": "none",
    "enable.idempotence": False,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
}
CONSUMER_CONFIG = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "fetch.wait.max.ms": 100,
    "fetch.queue.backoff.ms": 10,
    "fetch.error.backoff.ms": 10,
    "queued.max.messages.kbytes": 65_536,
    "check.crcs": False,
}
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads) so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _self_cpu() -> float:
    """CPU time of this (the client's) process, librdkafka's threads included."""
    t = os.times()
    return t.user + t.system


class _PySpy:
    """``py-spy record`` attached to a process until ``stop()`` (SIGINT makes it write)."""

    def __init__(self, pid: int, path: str):
        self.proc = subprocess.Popen(
            [
                "py-spy",
                "record",
                "--pid",
                str(pid),
                "--format",
                "raw",
                "--rate",
                "200",
                "--nonblocking",
                "-o",
                path,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)  # let it attach before the phase starts

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ----------------------------------------------------------------------------- phases
def produce(bootstrap: str, topic: str, n: int, size: int, max_seconds: float) -> dict:
    """Send up to ``n`` values of ``size`` bytes (fewer if ``max_seconds`` runs out); timed
    from the first produce() until flush() returns."""
    from confluent_kafka import Producer

    failed: list[object] = []
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            **PRODUCER_CONFIG,
            "delivery.report.only.error": True,  # callbacks for failures only
            "on_delivery": lambda err, msg: failed.append(err),
        }
    )
    p.list_topics(topic, timeout=10)  # connection and metadata before the clock starts
    value = b"x" * size
    chunk = max(100, min(10_000, 5_000_000 // size))
    produce_, poll = p.produce, p.poll
    sent = 0
    start = time.perf_counter()
    deadline = start + max_seconds
    while sent < n:
        for _ in range(min(chunk, n - sent)):
            while True:
                try:
                    produce_(topic, value)
                    break
                except BufferError:  # local queue full: let librdkafka catch up
                    poll(0.005)
        sent += min(chunk, n - sent)
        poll(0)
        if time.perf_counter() > deadline:
            break
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    if left or failed:
        raise RuntimeError(
            f"{left} records unacknowledged after flush, {len(failed)} failed ({failed[:1]})"
        )
    return {"records": sent, "seconds": elapsed}


def fetch(
    bootstrap: str, topic: str, partitions: int, n: int, size: int, stall_seconds: float = 30.0
) -> dict:
    """Read ``n`` records from offset 0 of every partition; timed from assign() to the last."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}", **CONSUMER_CONFIG}
    )
    try:
        c.list_topics(topic, timeout=10)  # connection and metadata before the clock starts
        batch = max(100, min(10_000, 5_000_000 // size))
        consume = c.consume
        count = 0
        start = time.perf_counter()
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        last = start
        while count < n:
            # never ask for more than remain: consume() waits until it has them all or times out
            msgs = consume(num_messages=min(batch, n - count), timeout=0.5)
            now = time.perf_counter()
            if not msgs:
                if now - last > stall_seconds:
                    raise RuntimeError(f"fetch stalled at {count} of {n} records")
                continue
            last = now
            errors = [m for m in msgs if m.error() is not None]
            if errors:
                raise RuntimeError(f"fetch error: {errors[0].error()}")
            count += len(msgs)
            got = msgs[-1].value()
            if got is None or len(got) != size:
                raise RuntimeError(f"fetched a value of {got and len(got)} bytes, not {size}")
        elapsed = time.perf_counter() - start
        ends = {
            tp.partition: max(tp.offset, 0)
            for tp in c.position(  # an unread partition: -1001
                [TopicPartition(topic, p) for p in range(partitions)]
            )
        }
    finally:
        c.close()
    if count != n or sum(ends.values()) != n:
        # the partitions' positions (last offset read + 1) add up to the records read
        raise RuntimeError(f"fetched {count} records of {n}, partition ends {ends}")
    return {"records": count, "seconds": elapsed}


def _one_run(
    name: str,
    bootstrap: str,
    pid: int,
    size: int,
    partitions: int,
    n: int,
    args: argparse.Namespace,
    round_no: int,
) -> dict[str, dict]:
    """Create a topic, produce into it, fetch it all back, delete it; one row per phase."""
    from kclient.cluster import Cluster
    from kclient.testing import create_ready_topic

    topic = create_ready_topic(
        bootstrap, f"bench-{name}-{size}-{partitions}-{uuid.uuid4().hex[:8]}", partitions
    )
    out = {}
    try:
        for phase in PHASES:
            spy = None
            if args.py_spy and name == "mini":
                spy = _PySpy(
                    pid,
                    os.path.join(
                        args.py_spy, f"mini-{size}B-{partitions}p-{phase}-r{round_no}.txt"
                    ),
                )
            b0, c0 = _cpu_seconds(pid), _self_cpu()
            try:
                if phase == "produce":
                    r = produce(bootstrap, topic, n, size, args.max_seconds)
                    n = r["records"]
                else:
                    r = fetch(bootstrap, topic, partitions, n, size)
            finally:
                if spy is not None:
                    spy.stop()
            r["broker_cpu"] = _cpu_seconds(pid) - b0
            r["client_cpu"] = _self_cpu() - c0
            r["rate"] = r["records"] / r["seconds"]
            out[phase] = r
    finally:
        try:
            with Cluster(bootstrap) as c:
                c.delete_topic(topic)
        except Exception as exc:  # noqa: BLE001 - memory/disk only; not part of the measurement
            print(f"    (could not delete {topic} on {name}: {exc})", flush=True)
    return out


# ----------------------------------------------------------------------------- harness
def run(args: argparse.Namespace) -> list[dict]:
    """Run every round; one row per (size, partitions, phase) with the best of each broker."""
    from kclient.testing import TansuServer

    best: dict[tuple, dict] = {}
    with ExitStack() as stack:
        procs = {}
        if "tansu" in args.brokers:
            t = stack.enter_context(TansuServer())
            assert t.proc is not None  # started by entering it
            procs["tansu"] = (t.bootstrap, t.proc.pid)
        if "mini" in args.brokers:
            m = stack.enter_context(mini_broker_process())
            procs["mini"] = (m.bootstrap, m.pid)
        if "kafka" in args.brokers:
            from kclient.bench.kafka import kafka_broker

            k = stack.enter_context(kafka_broker())
            procs["kafka"] = (k.bootstrap, k.pid)
        for round_no in range(args.repeat):
            order = list(procs) if round_no % 2 == 0 else list(reversed(list(procs)))
            for size in args.sizes:
                n = args.records_small if size < SMALL_LIMIT else args.records_large
                for partitions in args.partitions:
                    for name in order:
                        bootstrap, pid = procs[name]
                        res = _one_run(name, bootstrap, pid, size, partitions, n, args, round_no)
                        for phase, r in res.items():
                            key = (size, partitions, phase, name)
                            if key not in best or r["rate"] > best[key]["rate"]:
                                best[key] = r
                            print(
                                f"  round {round_no + 1} {name:5s} {size:>6} B {partitions}p "
                                f"{phase:7s} {r['records']:>8,} rec {r['seconds']:6.2f} s "
                                f"{r['rate']:>11,.0f} rec/s {r['rate'] * size / 1e6:7.1f} MB/s"
                                f"  broker CPU {r['broker_cpu']:5.2f} s"
                                f"  client CPU {r['client_cpu']:5.2f} s",
                                flush=True,
                            )
    rows = []
    for size in args.sizes:
        for partitions in args.partitions:
            for phase in PHASES:
                row = {"size": size, "partitions": partitions, "phase": phase}
                for name in BROKERS:
                    if (size, partitions, phase, name) in best:
                        row[name] = best[(size, partitions, phase, name)]
                if "mini" in row and "tansu" in row:
                    row["ratio"] = row["mini"]["rate"] / row["tansu"]["rate"]
                    row["target"] = target(size)
                if "mini" in row and "kafka" in row:
                    row["vs_kafka"] = row["mini"]["rate"] / row["kafka"]["rate"]
                rows.append(row)
    return rows


def _print_table(rows: list[dict]) -> None:
    """The summary: best rate of each broker, broker CPU in that run, ratio, target, verdict."""
    print(
        f"\n{'size':>7} {'parts':>5} {'phase':<8} {'mini rec/s':>11} {'MB/s':>7} {'CPU s':>6} "
        f"{'tansu rec/s':>12} {'MB/s':>7} {'CPU s':>6} {'kafka rec/s':>12} {'MB/s':>7} "
        f"{'CPU s':>6} {'ratio':>7} {'target':>7}  result  {'mini/kafka':>10}"
    )
    for row in rows:
        cells = []
        for name, width in (("mini", 11), ("tansu", 12), ("kafka", 12)):
            r = row.get(name)
            cells.append(
                f"{r['rate']:>{width},.0f} {r['rate'] * row['size'] / 1e6:>7.1f} "
                f"{r['broker_cpu']:>6.2f}"
                if r
                else f"{'-':>{width}} {'-':>7} {'-':>6}"
            )
        ratio, target = row.get("ratio"), row.get("target")
        verdict = (
            "-" if ratio is None or target is None else ("PASS" if ratio >= target else "FAIL")
        )
        vs_kafka = row.get("vs_kafka")
        print(
            f"{row['size']:>6}B {row['partitions']:>5} {row['phase']:<8} {cells[0]} {cells[1]} "
            f"{cells[2]} {(f'{ratio:.2f}x' if ratio is not None else '-'):>7} "
            f"{(f'>={target}x' if target is not None else '-'):>7}  {verdict:6s}  "
            f"{(f'{vs_kafka:.2f}x' if vs_kafka is not None else '-'):>10}"
        )


def main(argv: list[str] | None = None) -> int:
    """Parse options, run the benchmark, print the per-round lines and the summary table.

    Returns 0 (an exit code, for ``kclient bench broker``); :func:`run` returns the rows."""
    ap = argparse.ArgumentParser(
        prog="python -m kclient.bench.broker", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[100, 10_000],
        help="value sizes in bytes (default: 100 10000)",
    )
    ap.add_argument(
        "--records-small",
        type=int,
        default=2_000_000,
        help="records per run for sizes under 1000 bytes",
    )
    ap.add_argument(
        "--records-large",
        type=int,
        default=100_000,
        help="records per run for sizes of 1000 bytes and more",
    )
    ap.add_argument("--partitions", type=int, nargs="+", default=[1])
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds; best is kept")
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=20.0,
        help="stop producing (and fetch what was sent) after this long",
    )
    ap.add_argument(
        "--brokers",
        nargs="+",
        default=DEFAULT_BROKERS,
        choices=BROKERS,
        help="default: mini tansu; kafka adds Apache Kafka 4.x (mini/kafka ratio)",
    )
    ap.add_argument("--py-spy", metavar="DIR", help="profile the mini-broker's phases into DIR")
    ap.add_argument(
        "--json",
        metavar="PATH",
        dest="json_path",
        help="write the best rate of each broker to PATH (kclient bench charts)",
    )
    args = ap.parse_args(argv)
    if args.py_spy:
        os.makedirs(args.py_spy, exist_ok=True)
    import confluent_kafka

    print(
        f"broker benchmark: confluent-kafka {confluent_kafka.version()} "
        f"(librdkafka {confluent_kafka.libversion()[0]}), sizes {args.sizes} B, "
        f"partitions {args.partitions}, best of {args.repeat} interleaved rounds; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    rows = run(args)
    _print_table(rows)
    if args.json_path:
        from kclient.bench.results import row, write_results

        write_results(
            args.json_path,
            "broker",
            "mini",
            [
                row(
                    "confluent-kafka clients",
                    f"{r['phase']} {r['size']} B, {r['partitions']}p",
                    name,
                    r[name]["rate"],
                )
                for r in rows
                for name in BROKERS
                if name in r
            ],
            argv,
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
