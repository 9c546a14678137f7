"""asyncio benchmark: kclient.aio's AIOProducer / AIOConsumer beside aiokafka on one broker.

    kclient bench aio --messages 500000 --repeat 3          # mini-broker in its own process
    kclient bench aio --bootstrap 127.0.0.1:9092             # a running broker (real Kafka)

Each client runs in its own Python process (fresh interpreter and heap) against the same
broker, ``--repeat`` rounds interleaved; the best round of each counts and the ratios
kclient.aio / aiokafka are printed (target >= 2x).  Modes:

* ``produce``: ``--messages`` values of ``--value-size`` bytes, one ``send`` call per message
  without awaiting its acknowledgement (kclient ``await p.enqueue(...)``, aiokafka
  ``await p.send(...)``: both return a future), then flush; both with linger 5 ms, acks=1 and
  batches of up to 1 MB (aiokafka's max_batch_size 512 KB, under its 1 MB request limit).
  Each run's topic is checked to hold every message afterwards.
* ``consume``: read a pre-filled topic from offset 0 with ``getmany(max_records=10000)``;
* ``iterate``: the same with ``async for`` (one record per step).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

__all__ = ["main"]

CLIENTS = ("kclient", "aiokafka")
MODES = ("produce", "consume", "iterate")
TARGET = 2.0


# ----------------------------------------------------------------------------- workers
async def _produce_kclient(bootstrap: str, topic: str, n: int, value: bytes) -> None:
    from kclient.aio import AIOProducer

    async with AIOProducer(bootstrap_servers=bootstrap, linger_ms=5, acks=1) as p:
        enqueue = p.enqueue
        for _ in range(n):
            await enqueue(topic, value)
        await p.flush()


async def _produce_aiokafka(bootstrap: str, topic: str, n: int, value: bytes) -> None:
    from aiokafka import AIOKafkaProducer

    p = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=5, acks=1, max_batch_size=512 * 1024
    )
    await p.start()
    try:
        send = p.send
        for _ in range(n):
            await send(topic, value)
        await p.flush()
    finally:
        await p.stop()


async def _drain(c: Any, n: int, iterate: bool) -> int:
    """Read ``n`` records from either client (same API): ``async for``, or ``getmany``."""
    got = 0
    if iterate:
        async for _ in c:
            got += 1
            if got >= n:
                break
    else:
        while got < n:
            for recs in (await c.getmany(timeout_ms=1000, max_records=10000)).values():
                got += len(recs)
    return got


async def _consume_kclient(
    bootstrap: str, topic: str, n: int, partitions: int, iterate: bool
) -> int:
    from kclient.aio import AIOConsumer
    from kclient.structs import TopicPartition

    async with AIOConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        return await _drain(c, n, iterate)


async def _consume_aiokafka(
    bootstrap: str, topic: str, n: int, partitions: int, iterate: bool
) -> int:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition

    c = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        group_id=None,
    )
    await c.start()
    try:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        return await _drain(c, n, iterate)
    finally:
        await c.stop()


def _worker(
    client: str, mode: str, bootstrap: str, topic: str, n: int, size: int, partitions: int
) -> dict[str, Any]:
    """One timed run in this process."""
    value = b"x" * size
    start = time.perf_counter()
    cpu = time.process_time()
    got = n
    if mode == "produce":
        coro: Any = (_produce_kclient if client == "kclient" else _produce_aiokafka)(
            bootstrap, topic, n, value
        )
        asyncio.run(coro)
    else:
        fn = _consume_kclient if client == "kclient" else _consume_aiokafka
        got = asyncio.run(fn(bootstrap, topic, n, partitions, mode == "iterate"))
    elapsed = time.perf_counter() - start
    return {
        "client": client,
        "mode": mode,
        "messages": got,
        "seconds": elapsed,
        "rate": got / elapsed,
        "cpu_us_per_msg": (time.process_time() - cpu) / got * 1e6,
    }


# ----------------------------------------------------------------------------- harness
def _run(
    client: str, mode: str, bootstrap: str, topic: str, args: argparse.Namespace
) -> dict[str, Any] | None:
    cmd = [
        sys.executable,
        "-m",
        "kclient.bench.aio",
        "--worker",
        client,
        "--mode",
        mode,
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--messages",
        str(args.messages),
        "--value-size",
        str(args.value_size),
        "--partitions",
        str(args.partitions),
    ]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"  {client} {mode}: timed out after {args.timeout}s", flush=True)
        return None
    if out.returncode != 0:
        print(f"  {client} {mode}: failed\n{out.stderr[-2000:]}", flush=True)
        return None
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _stored(bootstrap: str, topic: str) -> int:
    from kclient.bench.producer import _stored_records

    return _stored_records(bootstrap, topic)


def _bench(bootstrap: str, args: argparse.Namespace) -> dict[str, Any]:
    from kclient.testing import create_ready_topic

    best: dict[tuple[str, str], dict[str, Any]] = {}
    filled: str | None = None
    stamp = int(time.time() * 1000) % 10**9
    for round_no in range(args.repeat):
        for mode in args.modes:
            for client in args.clients:
                if mode == "produce":
                    topic = create_ready_topic(
                        bootstrap, f"aio-{client}-{round_no}-{stamp}", args.partitions
                    )
                else:
                    if filled is None:
                        filled = create_ready_topic(bootstrap, f"aio-fill-{stamp}", args.partitions)
                        _worker(
                            "kclient",
                            "produce",
                            bootstrap,
                            filled,
                            args.messages,
                            args.value_size,
                            args.partitions,
                        )
                    topic = filled
                r = _run(client, mode, bootstrap, topic, args)
                if r is None:
                    continue
                if mode == "produce":
                    stored = _stored(bootstrap, topic)
                    r["ok"] = stored == args.messages
                    if not r["ok"]:
                        print(
                            f"  {client} produce: NOT VERIFIED (stored {stored} of "
                            f"{args.messages})",
                            flush=True,
                        )
                        continue
                print(
                    f"  round {round_no + 1} {mode:8s} {client:9s} {r['rate']:>11,.0f} msg/s "
                    f"({r['cpu_us_per_msg']:.1f} us CPU/msg)",
                    flush=True,
                )
                key = (mode, client)
                if key not in best or r["rate"] > best[key]["rate"]:
                    best[key] = r
    ratios: dict[str, float] = {}
    print("\nbest of each:", flush=True)
    for mode in args.modes:
        for client in args.clients:
            r = best.get((mode, client))
            if r is not None:
                print(f"  {mode:8s} {client:9s} {r['rate']:>11,.0f} msg/s", flush=True)
        a, b = best.get((mode, "kclient")), best.get((mode, "aiokafka"))
        if a is not None and b is not None:
            ratios[mode] = a["rate"] / b["rate"]
            mark = "ok" if ratios[mode] >= TARGET else "BELOW TARGET"
            print(
                f"  {mode}: kclient.aio / aiokafka = {ratios[mode]:.2f}x "
                f"(target >= {TARGET}x) {mark}",
                flush=True,
            )
    return {"best": {f"{m}/{c}": r for (m, c), r in best.items()}, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    """``kclient bench aio``: see the module docstring."""
    ap = argparse.ArgumentParser(
        prog="kclient bench aio", description="kclient.aio beside aiokafka on one broker"
    )
    ap.add_argument("--messages", type=int, default=500_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument("--clients", nargs="+", choices=CLIENTS, default=list(CLIENTS))
    ap.add_argument("--bootstrap", help="a running broker (default: a mini-broker process)")
    ap.add_argument("--timeout", type=float, default=600.0, help="per run, seconds")
    ap.add_argument("--json", metavar="PATH", dest="json_path", help="write results here")
    ap.add_argument("--worker", choices=CLIENTS, help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(
            json.dumps(
                _worker(
                    args.worker,
                    args.mode,
                    args.bootstrap,
                    args.topic,
                    args.messages,
                    args.value_size,
                    args.partitions,
                )
            )
        )
        return 0
    if "aiokafka" in args.clients:
        try:
            import aiokafka  # noqa: F401
        except ImportError:
            print("aiokafka is not installed (pip install 'kclient[bench]')", file=sys.stderr)
            return 2
    print(
        f"asyncio benchmark: {args.messages:,} x {args.value_size} B, {args.partitions} "
        f"partition(s), best of {args.repeat}; load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    if args.bootstrap:
        results = _bench(args.bootstrap, args)
    else:
        from kclient.bench import mini_broker_process

        with mini_broker_process() as broker:
            print(f"mini-broker process {broker.pid} on {broker.bootstrap}", flush=True)
            results = _bench(broker.bootstrap, args)
    print(f"load average after: {os.getloadavg()[0]:.2f}", flush=True)
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
