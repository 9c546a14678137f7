"""``kclient perf produce|consume``: kafka-producer-perf-test and kafka-consumer-perf-test for
kclient, with a live progress bar (rich), throughput and produce latency percentiles."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from .common import add_connection_options, admin_client, client_config, subcommand

__all__ = ["register", "percentile"]


def percentile(sorted_ms: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of sorted latencies."""
    if not sorted_ms:
        return 0.0
    return sorted_ms[min(len(sorted_ms) - 1, max(0, int(round(p / 100 * len(sorted_ms))) - 1))]


def _progress(total: int, what: str) -> Any:
    """A rich progress bar on stderr with count, rate and elapsed time."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn(f"[bold]{what}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
        refresh_per_second=4,
    )


def _rate(done: int, start: float, size: int) -> str:
    secs = max(time.perf_counter() - start, 1e-9)
    return f"{done / secs:,.0f} rec/s {done * size / secs / 1e6:.2f} MB/s"


def _produce(args: argparse.Namespace) -> int:
    from kclient import Producer, ProducerData

    cfg = client_config(
        args,
        "producer",
        **{
            "producer.type": "async",
            "compression.codec": args.codec,
            "request.required.acks": args.acks,
        },
    )
    with admin_client(args) as admin:
        partitions = admin.cluster.partitions_for(args.topic)
    sent_at: dict[int, deque[float]] = {p: deque() for p in partitions}
    latencies: list[float] = []
    failed = [0]

    def delivered(report: Any) -> None:
        now = time.perf_counter()
        times = sent_at[report.partition]
        for _ in range(len(report)):
            t = times.popleft()
            if report.error is None:
                latencies.append((now - t) * 1000)
        if report.error is not None:
            failed[0] += len(report)

    value = os.urandom(args.record_size)
    n, parts = args.num_records, len(partitions)
    start = time.perf_counter()
    with _progress(n, "produce") as bar:
        task = bar.add_task("produce", total=n, rate="")
        producer = Producer(cfg, on_report=delivered)
        try:
            for i in range(n):
                p = partitions[i % parts]
                sent_at[p].append(time.perf_counter())
                producer.send(ProducerData(args.topic, value, partition=p))
                if args.throughput > 0:
                    ahead = (i + 1) / args.throughput - (time.perf_counter() - start)
                    if ahead > 0:
                        time.sleep(ahead)
                if i % 1000 == 999:
                    bar.update(
                        task,
                        completed=len(latencies),
                        rate=_rate(len(latencies), start, args.record_size),
                    )
        finally:
            producer.close()
        bar.update(
            task, completed=len(latencies), rate=_rate(len(latencies), start, args.record_size)
        )
    return _produce_summary(latencies, failed[0], time.perf_counter() - start, args.record_size)


def _produce_summary(latencies: list[float], failed: int, secs: float, size: int) -> int:
    """Kafka's ProducerPerformance final line."""
    ms = sorted(latencies)
    n = len(ms)
    avg = sum(ms) / n if n else 0.0
    print(
        f"{n} records sent, {n / secs:.1f} records/sec ({n * size / secs / 1e6:.2f} MB/sec), "
        f"{avg:.2f} ms avg latency, {ms[-1] if ms else 0:.2f} ms max latency, "
        f"{percentile(ms, 50):.2f} ms 50th, {percentile(ms, 95):.2f} ms 95th, "
        f"{percentile(ms, 99):.2f} ms 99th, {percentile(ms, 99.9):.2f} ms 99.9th."
    )
    if failed:
        print(f"{failed} records failed", file=sys.stderr)
    return 1 if failed else 0


def _consume(args: argparse.Namespace) -> int:
    from .consume import read_partitions

    args.partition, args.offset = None, "earliest"
    count = size = 0
    start = time.perf_counter()
    messages = read_partitions(args, exit_at_end=args.messages is None)
    with _progress(args.messages or 0, "consume") as bar:
        task = bar.add_task("consume", total=args.messages, rate="")
        try:
            for _, mo in messages:
                count += 1
                size += len(mo.message.value or b"")
                if count % 1000 == 0:
                    bar.update(task, completed=count, rate=_rate(count, start, size // count))
                if args.messages and count >= args.messages:
                    break
        finally:
            messages.close()
        bar.update(task, completed=count, rate=_rate(count, start, size // max(count, 1)))
    secs = time.perf_counter() - start
    print(
        f"{count} records consumed, {size / 1e6:.2f} MB, {count / secs:.1f} records/sec "
        f"({size / secs / 1e6:.2f} MB/sec) in {secs:.2f} s."
    )
    return 0


def _exposed(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``run`` with ``--prometheus-port``: the client's metrics served while it runs."""

    def exposed(args: argparse.Namespace) -> int:
        if args.prometheus_port is None:
            return run(args)
        from kclient.metrics import serve_prometheus

        server = serve_prometheus(args.prometheus_port)
        print(
            f"metrics for Prometheus at http://127.0.0.1:{server.server_port}/metrics",
            file=sys.stderr,
            flush=True,
        )
        try:
            return run(args)
        finally:
            server.shutdown()

    return exposed


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``perf`` with produce and consume."""
    top = subcommand(
        subparsers,
        "perf",
        "producer and consumer performance tests",
        "kclient perf produce perf-topic --num-records 100000 --record-size 100\n"
        "kclient perf consume perf-topic --messages 100000",
    )
    actions = top.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = subcommand(
        actions,
        "produce",
        "send records as fast as allowed, report latency",
        "kclient perf produce t --num-records 200000 --record-size 100 --throughput -1 --codec lz4",
    )
    p.add_argument("topic")
    p.add_argument("-n", "--num-records", type=int, default=100_000)
    p.add_argument("-s", "--record-size", type=int, default=100, help="value bytes")
    p.add_argument(
        "--throughput", type=float, default=-1, help="records per second at most (-1: no limit)"
    )
    p.add_argument(
        "-z", "--codec", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd")
    )
    p.add_argument("--acks", default="1", choices=("0", "1", "-1", "all"))
    p.set_defaults(run=_exposed(_produce))
    p = subcommand(
        actions,
        "consume",
        "read a topic from the start, report throughput",
        "kclient perf consume t --messages 200000",
    )
    p.add_argument("topic")
    p.add_argument("-n", "--messages", type=int, help="stop after this many (default: the end)")
    p.set_defaults(run=_exposed(_consume))
    for parser in actions.choices.values():
        add_connection_options(parser)
        parser.add_argument(
            "--prometheus-port",
            type=int,
            default=None,
            metavar="PORT",
            help="serve the client's metrics for Prometheus on PORT (0: any) "
            "at /metrics while the test runs (needs prometheus_client)",
        )
