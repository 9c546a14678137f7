"""Latency benchmark: a sync send and end-to-end delivery, kclient beside confluent-kafka.

Run: ``kclient bench latency [--broker mini|kafka|both|HOST:PORT] [--messages N] [--size B]
[--repeat R] [--clients a,b] [--cpus LIST] [--no-idle]``

Three measures, one 100 B message at a time (acks=1, no key, one partition), after
``--warmup`` untimed messages; the first two run each client in a fresh subprocess:

* **sync send**: from the call until it returns with the message acknowledged. kclient:
  ``Producer(producer.type=sync).send(ProducerData(...))``; confluent-kafka: ``produce()`` then
  ``flush()`` (``linger.ms=0``).
* **end-to-end**: from the send until the consumer's poll returns the message; the consumer
  polls in its own thread, assigned to the partition at its end, and hands each message's
  arrival time to the sender, who sends the next only then.  kclient: the sync send and
  ``kclient.Consumer.poll``; confluent-kafka: ``produce()`` + ``flush()`` and
  ``Consumer.poll`` (default fetch settings on both: ``fetch.min.bytes`` 1, so the broker
  answers a waiting fetch as soon as the message is written).

* **end-to-end, interleaved**: the same, every client in one subprocess with a topic each,
  message by message in turn (the first client rotating between runs): the clients are timed
  at the same moments of the broker, whose own time for a message (Produce in to the Fetch
  answer's last byte out, in a loopback capture) moved by 50-100 us between separate runs of
  one client.  It is not the condition of a process with one client (each consumer's Fetch
  waits at the broker while the other client's message goes through), so both rows are
  reported.

``--cpus 1`` pins every worker process to CPU 1 (all its threads; the broker stays free to
use the others).  On a 2-vCPU machine a client whose threads take turns on the GIL was faster
end to end on one CPU than spread by the scheduler over both, and by more than librdkafka's C
threads gained (docs/benchmarks.md, issue 23), so the pinned and the unpinned runs measure
different conditions; the footer says which.

``--no-idle`` holds ``/dev/cpu_dma_latency`` at 0 for the run (Linux's PM QoS request, as
tuned's latency-performance profile and cyclictest make it; needs root), so no CPU sleeps in an
idle state that takes time to leave.  Each message crosses several threads of the client and
the broker, each woken on a CPU that may have gone idle; on this project's 2-vCPU machine
(cpuidle ``haltpoll``) that waking was most of a round trip: a sync send of either client took
210-300 us at the median with idle states and 90-130 us without (docs/benchmarks.md, issue
23).  The footer says whether they were held off.

``--clients`` may add ``python-floor`` (sync send only): a bare Python loop, ``sendall`` of a
prepared Produce frame (the correlation id patched in) and ``recv_into`` until its answer is
whole, no client around it: about the least any Python client's sync send can take here.

Each figure is the best (lowest p50) of ``--repeat`` runs; p50 and p99 in microseconds.  The
CPU column is that run's worker process's CPU time (``time.process_time``: every thread,
librdkafka's included) over the timed messages, per message: on a machine whose CPUs the
broker shares, what the client costs them.  Before
the timed runs every client runs each measure once untimed (``--broker-warmup`` messages): a
freshly started JVM broker answers faster as its just-in-time compiler warms up, which would
favour whichever client runs later; the timed rounds also rotate which client goes first.
The bench's own Kafka broker (``--broker kafka``) keeps getting faster for minutes, so those
untimed runs repeat, clients alternating, for at least ``--broker-warm-seconds`` (default 30
there, 0 for the mini-broker or a broker given as HOST:PORT, which may be warm already).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from kclient.bench import speedups_note

__all__ = ["main", "percentile"]

CLIENTS = ["kclient", "confluent"]
#: clients that only send (no end-to-end row)
SEND_ONLY = {"python-floor"}
MEASURES = ("sync", "e2e", "interleaved")
#: each measure's name in the report
LABELS = {"sync": "sync send", "e2e": "end-to-end", "interleaved": "e2e interleaved"}


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


# ----------------------------------------------------------------------------- senders
def _kclient_sender(bootstrap: str) -> tuple[Callable[[str, bytes], None], Callable[[], None]]:
    from kclient import Producer, ProducerData

    p = Producer(
        {"metadata.broker.list": bootstrap, "producer.type": "sync", "request.required.acks": 1}
    )

    def send(topic: str, value: bytes) -> None:
        p.send(ProducerData(topic, value, partition=0))

    return send, p.close


def _confluent_sender(bootstrap: str) -> tuple[Callable[[str, bytes], None], Callable[[], None]]:
    import confluent_kafka

    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
    failed: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        if err:
            failed.append(err)

    def send(topic: str, value: bytes) -> None:
        p.produce(topic, value, partition=0, on_delivery=report)
        p.flush()
        if failed:
            raise RuntimeError(f"confluent-kafka failed to send: {failed[0]}")

    return send, lambda: None


def _floor_sender(bootstrap: str) -> tuple[Callable[[str, bytes], None], Callable[[], None]]:
    import socket
    import struct

    from kclient.connection import BrokerConnection
    from kclient.protocol.apis import PRODUCE
    from kclient.protocol.produce_one import OneProduce
    from kclient.protocol.records.v2_uniform import encode_v2_uniform

    host, port = bootstrap.rsplit(":", 1)
    with BrokerConnection(host, int(port)) as conn:  # the version kclient would use
        version = conn.version(PRODUCE)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytearray(1 << 16)
    view = memoryview(buf)
    frames: dict[tuple[str, int], bytearray] = {}
    corr = [0]

    def send(topic: str, value: bytes) -> None:
        frame = frames.get((topic, len(value)))
        if frame is None:
            enc = OneProduce(version, "floor", None, 1, 30000, topic, 0)
            records = encode_v2_uniform([value], len(value), 0, int(time.time() * 1000))
            frame = frames[(topic, len(value))] = bytearray(enc.frame(0, records))
        corr[0] += 1
        struct.pack_into(">i", frame, 8, corr[0])
        sock.sendall(frame)
        got = sock.recv_into(view)
        while got < 4 or got < 4 + struct.unpack_from(">i", buf)[0]:
            k = sock.recv_into(view[got:])
            if not k:
                raise RuntimeError("the broker closed the connection")
            got += k

    return send, sock.close


# ----------------------------------------------------------------------------- consumers
def _kclient_poller(
    bootstrap: str, topic: str, start: int
) -> tuple[Callable[[], int], Callable[[], None]]:
    from kclient import Consumer
    from kclient.structs import TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek(tp, start)

    def poll() -> int:
        return sum(len(rs) for rs in c.poll(200).values())

    return poll, c.close


def _confluent_poller(
    bootstrap: str, topic: str, start: int
) -> tuple[Callable[[], int], Callable[[], None]]:
    import confluent_kafka

    c = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "latency-bench", "enable.auto.commit": False}
    )
    c.assign([confluent_kafka.TopicPartition(topic, 0, start)])

    def poll() -> int:
        m = c.poll(0.2)
        if m is None:
            return 0
        if m.error():
            raise RuntimeError(f"confluent-kafka consumer: {m.error()}")
        return 1

    return poll, c.close


SENDERS = {
    "kclient": _kclient_sender,
    "confluent": _confluent_sender,
    "python-floor": _floor_sender,
}
POLLERS = {"kclient": _kclient_poller, "confluent": _confluent_poller}


# ----------------------------------------------------------------------------- workers
def _sync_latencies(
    client: str, bootstrap: str, topic: str, n: int, warmup: int, size: int
) -> tuple[list[float], float]:
    """The sync send's latencies, and this process's CPU seconds over the timed sends."""
    send, close = SENDERS[client](bootstrap)
    value = os.urandom(size)
    clock = time.perf_counter
    out = []
    try:
        for _ in range(warmup):
            send(topic, value)
        cpu = time.process_time()
        for _ in range(n):
            t0 = clock()
            send(topic, value)
            out.append(clock() - t0)
        cpu = time.process_time() - cpu
    finally:
        close()
    return out, cpu


class _Arrivals:
    """A poller on its own thread, handing each message's arrival time to the sender."""

    def __init__(self, poll: Callable[[], int]) -> None:
        self.times: queue.SimpleQueue[float] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._errors: list[BaseException] = []
        self._poll = poll
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for _ in range(self._poll()):
                    self.times.put(time.perf_counter())
        except BaseException as exc:  # noqa: BLE001 - reported by the sender
            self._errors.append(exc)
            self.times.put(-1.0)

    def next(self) -> float:
        """The next message's arrival time (its poller's error raised here)."""
        t = self.times.get(timeout=30)
        if self._errors:
            raise self._errors[0]
        return t

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def _e2e_latencies(
    clients: list[str],
    bootstrap: str,
    topics: list[str],
    n: int,
    warmup: int,
    size: int,
    starts: list[int],
) -> tuple[dict[str, list[float]], float]:
    """End-to-end latencies of ``clients`` (one for ``e2e``, several for ``interleaved``), each
    with its own topic read from its ``starts`` offset, and this process's CPU seconds over the
    timed rounds (every thread: the clients' own included).  Message ``i`` goes through every
    client in turn (the first one rotating), so each client is timed at the same moments of
    the broker as the others; the sender sends the next only when its poller had the last."""
    senders = [SENDERS[c](bootstrap) for c in clients]
    pollers = [POLLERS[c](bootstrap, t, s) for c, t, s in zip(clients, topics, starts)]
    arrivals = [_Arrivals(poll) for poll, _ in pollers]
    value = os.urandom(size)
    out: dict[str, list[float]] = {c: [] for c in clients}
    k = len(clients)
    cpu = 0.0
    try:
        for j in range(k):  # each poller has fetched once
            senders[j][0](topics[j], value)
            arrivals[j].next()
        for i in range(warmup + n):
            if i == warmup:
                cpu = time.process_time()
            for j in [(i + m) % k for m in range(k)]:
                t0 = time.perf_counter()
                senders[j][0](topics[j], value)
                t1 = arrivals[j].next()
                if i >= warmup:
                    out[clients[j]].append(t1 - t0)
        cpu = time.process_time() - cpu
    finally:
        for a in arrivals:
            a.stop()
        for (_, close_poller), (_, close_sender) in zip(pollers, senders):
            close_poller()
            close_sender()
    return out, cpu


def worker(args: argparse.Namespace) -> None:
    """One measure in this process, of one client (of several, comma-separated, for
    ``interleaved``, each with its topic); prints a JSON list of one row per client."""
    if args.cpus:  # before any client starts a thread: they all inherit it
        os.sched_setaffinity(0, parse_cpus(args.cpus))
    bootstrap = f"{args.host}:{args.port}"
    clients, topics = args.worker.split(","), args.topic.split(",")
    if args.worker_measure == "sync":
        lat, cpu = _sync_latencies(
            clients[0], bootstrap, topics[0], args.messages, args.warmup, args.size
        )
        lats = {clients[0]: lat}
    else:
        starts = [_end_offset(bootstrap, t) for t in topics]  # (before the clock starts)
        lats, cpu = _e2e_latencies(
            clients, bootstrap, topics, args.messages, args.warmup, args.size, starts
        )
    rows = [
        {
            "client": client,
            "measure": args.worker_measure,
            "p50": percentile(lat, 50),
            "p99": percentile(lat, 99),
            "mean": sum(lat) / len(lat),
            "n": len(lat),
            # the process's CPU per timed message; several clients in it: not theirs apart
            "cpu": cpu / len(lat) if len(lats) == 1 else None,
            "cpus": sorted(os.sched_getaffinity(0)),
        }
        for client, lat in lats.items()
    ]
    print(json.dumps(rows))


def parse_cpus(text: str) -> set[int]:
    """The CPUs ``--cpus`` names (``1``, ``0,1``), each one this process may run on."""
    try:
        cpus = {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        raise SystemExit(f"--cpus {text!r}: CPU numbers, comma-separated (1 or 0,1)") from None
    usable = os.sched_getaffinity(0)
    if not cpus or not cpus <= usable:
        raise SystemExit(f"--cpus {text!r}: not CPUs this process may run on ({sorted(usable)})")
    return cpus


#: Linux's PM QoS device: a process holding it open with a value caps the CPUs' idle-state
#: exit latency at that many microseconds (0: no idle state but polling)
CPU_DMA_LATENCY = "/dev/cpu_dma_latency"


@contextmanager
def cpus_kept_awake() -> Iterator[None]:
    """Hold ``/dev/cpu_dma_latency`` at 0 while the block runs (``--no-idle``); refused by
    name when it cannot be opened (not Linux, or not root)."""
    try:
        dev = open(CPU_DMA_LATENCY, "r+b", buffering=0)
    except OSError as exc:
        raise SystemExit(
            f"--no-idle: cannot open {CPU_DMA_LATENCY} ({exc.strerror}): it needs Linux and root"
        ) from None
    with dev:
        dev.write(struct.pack("=i", 0))
        yield


def _end_offset(bootstrap: str, topic: str) -> int:
    from kclient import Consumer
    from kclient.structs import TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap})
    try:
        tp = TopicPartition(topic, 0)
        return int(c.end_offsets([tp])[tp])
    finally:
        c.close()


def run_worker(
    client: str,
    measure: str,
    bootstrap: str,
    topic: str,
    args: argparse.Namespace,
    messages: int | None = None,
) -> list[dict[str, Any]]:
    """One worker subprocess: its rows (one per client; ``client`` and ``topic`` are
    comma-separated lists for ``interleaved``)."""
    host, port = bootstrap.rsplit(":", 1)
    cmd = [
        sys.executable,
        "-m",
        "kclient.bench.latency",
        "--worker",
        client,
        "--worker-measure",
        measure,
        "--host",
        host,
        "--port",
        port,
        "--topic",
        topic,
        "--messages",
        str(messages or args.messages),
        "--warmup",
        str(args.warmup),
        "--size",
        str(args.size),
        *(["--cpus", args.cpus] if args.cpus else []),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{client} {measure} failed:\n{proc.stderr[-3000:]}")
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def warm_up(
    clients: list[str],
    measure: str,
    bootstrap: str,
    topic: str,
    args: argparse.Namespace,
    seconds: float,
) -> int:
    """Untimed runs of every client in turn (``--broker-warmup`` messages each) until
    ``seconds`` have passed, at least one round: the broker's just-in-time compiler warms up
    for all clients alike.  Returns the rounds run."""
    if not args.broker_warmup:
        return 0
    until = time.monotonic() + seconds
    rounds = 0
    while not rounds or time.monotonic() < until:
        for client in clients:
            run_worker(client, measure, bootstrap, topic, args, args.broker_warmup)
        rounds += 1
    return rounds


def bench_broker(
    name: str,
    bootstrap: str,
    clients: list[str],
    args: argparse.Namespace,
    warm_seconds: float = 0.0,
) -> list[dict[str, Any]]:
    """Every measure of every client on one broker, best of ``args.repeat``."""
    from kclient.testing import create_ready_topic

    rows = []
    everyone = clients
    for measure in MEASURES:
        clients = [c for c in everyone if measure == "sync" or c not in SEND_ONLY]
        if measure == "interleaved":
            if len(clients) > 1:
                rows += _interleaved_rows(name, bootstrap, clients, args)
            continue
        topic = f"latency-{measure}-{os.getpid()}"
        create_ready_topic(bootstrap, topic, 1)
        warm_up(clients, measure, bootstrap, topic, args, warm_seconds)
        best: dict[str, dict[str, Any]] = {}
        for round_ in range(args.repeat):
            k = round_ % len(clients)  # interleaved, each client first in turn
            for client in clients[k:] + clients[:k]:
                _keep_best(best, run_worker(client, measure, bootstrap, topic, args))
        rows += [{"broker": name, **best[c]} for c in clients]
    return rows


def _interleaved_rows(
    name: str, bootstrap: str, clients: list[str], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """The ``interleaved`` measure: every client's end to end in one worker, a topic each,
    the first client rotating between runs; best of ``args.repeat`` (the broker is warm from
    the ``e2e`` measure before it)."""
    from kclient.testing import create_ready_topic

    topics = {c: f"latency-interleaved-{os.getpid()}-{c}" for c in clients}
    for topic in topics.values():
        create_ready_topic(bootstrap, topic, 1)
    best: dict[str, dict[str, Any]] = {}
    for round_ in range(args.repeat):
        k = round_ % len(clients)
        order = clients[k:] + clients[:k]
        joined = ",".join(topics[c] for c in order)
        _keep_best(best, run_worker(",".join(order), "interleaved", bootstrap, joined, args))
    return [{"broker": name, **best[c]} for c in clients]


def _keep_best(best: dict[str, dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """Each row kept in ``best`` when it is its client's lowest p50 so far."""
    for r in rows:
        if r["client"] not in best or r["p50"] < best[r["client"]]["p50"]:
            best[r["client"]] = r


def report(rows: list[dict[str, Any]]) -> str:
    """One line per broker, measure and client: p50, p99, mean, the worker process's CPU per
    message (all its threads, the client library's own included; "-" for the interleaved
    rows, whose process holds every client), and p50 / p99 over the confluent-kafka row's
    (below 1: kclient faster)."""
    lines = [
        f"{'broker':6} {'measure':15} {'client':10} {'p50 us':>8} {'p99 us':>8} "
        f"{'mean us':>8} {'CPU us':>8} {'p50/peer':>8} {'p99/peer':>8}"
    ]
    peers = {(r["broker"], r["measure"]): r for r in rows if r["client"] == "confluent"}
    for r in rows:
        peer = peers.get((r["broker"], r["measure"]))
        ratio = (
            f"{r['p50'] / peer['p50']:>7.2f}x {r['p99'] / peer['p99']:>7.2f}x"
            if peer
            else f"{'-':>8} {'-':>8}"
        )
        cpu = r.get("cpu")
        lines.append(
            f"{r['broker']:6} {LABELS[r['measure']]:15} {r['client']:10} {r['p50'] * 1e6:>8.0f} "
            f"{r['p99'] * 1e6:>8.0f} {r['mean'] * 1e6:>8.0f} "
            f"{'-' if cpu is None else format(cpu * 1e6, '.0f'):>8} {ratio}"
        )
    return "\n".join(lines)


def bench_brokers(clients: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every measure on each broker ``--broker`` names (started here for mini and kafka)."""
    rows: list[dict[str, Any]] = []
    for kind in ["mini", "kafka"] if args.broker == "both" else [args.broker]:
        if kind == "mini":
            from kclient.testing import MiniBrokerProcess

            with MiniBrokerProcess({}) as server:
                rows += bench_broker(
                    "mini", server.bootstrap, clients, args, args.broker_warm_seconds or 0.0
                )
        elif kind == "kafka":
            from kclient.bench.kafka import kafka_broker

            warm = 30.0 if args.broker_warm_seconds is None else args.broker_warm_seconds
            with kafka_broker() as kafka:
                rows += bench_broker("kafka", kafka.bootstrap, clients, args, warm)
        else:
            rows += bench_broker(kind, kind, clients, args, args.broker_warm_seconds or 0.0)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="kclient bench latency",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--broker",
        default="both",
        help="mini (its own process), kafka (Apache Kafka 4.x), both, or HOST:PORT",
    )
    p.add_argument("--messages", type=int, default=2000, help="timed messages per run")
    p.add_argument("--warmup", type=int, default=200, help="untimed messages first")
    p.add_argument("--size", type=int, default=100, help="value bytes")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--broker-warmup",
        type=int,
        default=3000,
        help="untimed messages per client and measure before the timed runs (0: none)",
    )
    p.add_argument(
        "--broker-warm-seconds",
        type=float,
        default=None,
        help="repeat the untimed runs for at least this long (default: 30 for the bench's own "
        "Kafka broker, else 0)",
    )
    p.add_argument("--clients", default=",".join(CLIENTS))
    p.add_argument(
        "--cpus",
        default="",
        help="pin every worker process to these CPUs (os.sched_setaffinity), e.g. 1; default: "
        "where the scheduler puts them",
    )
    p.add_argument(
        "--no-idle",
        action="store_true",
        help=f"hold {CPU_DMA_LATENCY} at 0 for the run: no CPU idle state to wake from (root)",
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-measure", choices=MEASURES, help=argparse.SUPPRESS)
    p.add_argument("--host", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--topic", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if (
        args.messages <= 0
        or args.repeat <= 0
        or min(args.warmup, args.size, args.broker_warmup, args.broker_warm_seconds or 0) < 0
    ):
        raise SystemExit(
            "--messages and --repeat must be positive, --warmup, --broker-warmup, "
            "--broker-warm-seconds and --size >= 0"
        )
    if args.worker:
        worker(args)
        return 0
    if args.cpus:
        parse_cpus(args.cpus)  # refused here, before any broker starts
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in clients if c not in SENDERS]
    if unknown:
        raise SystemExit(f"unknown client(s) {unknown}: choose from {sorted(SENDERS)}")
    load_before = os.getloadavg()
    with cpus_kept_awake() if args.no_idle else nullcontext():
        rows = bench_brokers(clients, args)
    load_after = os.getloadavg()
    print(report(rows))
    print(
        f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
        f"({os.cpu_count()} CPUs); best p50 of {args.repeat}; {args.messages} messages of "
        f"{args.size} B after {args.warmup} untimed; broker warmed by {args.broker_warmup} "
        "untimed messages per client and measure"
        + (
            f", repeated for at least {args.broker_warm_seconds:g} s"
            if args.broker_warm_seconds
            else " (the bench's own Kafka: repeated for at least 30 s)"
            if args.broker_warm_seconds is None and args.broker in ("kafka", "both")
            else ""
        )
        + (f"; workers pinned to CPU {args.cpus}" if args.cpus else "")
        + (f"; CPU idle states held off ({CPU_DMA_LATENCY} 0)" if args.no_idle else "")
        + f"; {speedups_note()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
