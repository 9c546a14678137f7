"""Producer benchmark: kclient vs kafka-python vs confluent-kafka, same broker, one run.

Run: ``python -m kclient.bench.producer [--broker tansu|mini|kafka|both] [--messages N]
[--value-size B] [--partitions P] [--kafka-python-messages N] [--timeout S]``

``--broker kafka`` runs real Apache Kafka 4.x (``kclient.testing.KafkaServer``, jars from
``scripts/fetch-kafka``) and adds the Java producer as a peer.

Every client sends N values of B bytes (null keys, no compression, acks=1, async) to a fresh
topic and is timed from its first send until its flush returns, i.e. until every message is
acknowledged; then the harness checks the topic holds N records (the high watermark).  Each client runs
in its own subprocess, one after the other, against the same broker started once:

* ``kclient-send``: ``Producer.send(ProducerData(...))`` once per message;
* ``kclient-produce-future``: ``Producer.produce(topic, value)`` once per message, a
  DeliveryFuture each (the per-message outcome API); the last future's ``result()`` is checked
  after the flush (target: >= 0.8x ``kclient-send``);
* ``kclient-list``: ``Producer.send([...])`` with lists of ``--list-size`` (1,000) ProducerData
  that exist before the clock starts (what the list API is for: the application already holds
  the messages);
* ``kclient-list+build``: the same, with building the ProducerData lists inside the timed loop;
* ``confluent-kafka``: ``Producer.produce(topic, value)`` once per message (``linger.ms`` 5);
* ``kafka-python``: ``KafkaProducer.send(topic, value)`` once per message (``linger_ms`` 5,
  ``batch_size`` 1 MiB, its best settings here); it is slow, so it sends fewer messages
  (``--kafka-python-messages``) and its rate is per second like the others;
* ``java``: Kafka's ProducerPerformance tool (the Java producer: ``linger.ms`` 5, 1 MiB batches,
  idempotence off), its own records/s figure (default with ``--broker kafka``);
* ``kclient-txn`` / ``confluent-kafka-txn`` (only when named in ``--clients``): transactional
  producers (acks=all), ``--txn-size`` (1,000) messages per transaction, each
  ``begin_transaction`` / sends / ``commit_transaction`` (kclient: one list ``send`` per
  transaction; confluent-kafka: ``produce`` per message); verified as N records plus one commit
  marker per transaction and partition.

Each client runs ``--repeat`` times (interleaved, so load from other processes hits all alike)
and its best run is reported.  Printed: records/s, the client process's CPU time per message
(user + system, all threads; least of the runs, less sensitive to load than the rate), peak RSS
of the client process, every run's rate, and the ratios the spec sets targets for.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

CLIENTS = ("kclient-send", "kclient-produce-future", "kclient-list", "kclient-list+build",
           "confluent-kafka", "kafka-python", "java", "kclient-txn", "confluent-kafka-txn")
#: run only when named in --clients
OPT_IN = ("kclient-txn", "confluent-kafka-txn")
TARGETS = [  # (numerator, denominator, target ratio; None: reported only)
    ("kclient-produce-future", "kclient-send", 0.8),
    ("kclient-send", "kafka-python", 8.0),
    ("kclient-send", "confluent-kafka", 0.6),
    ("kclient-list", "confluent-kafka", 1.1),
    ("kclient-list+build", "confluent-kafka", 1.1),
]
#: on real Kafka (spec section 10), with the Java producer's ratio beside
KAFKA_TARGETS = [
    ("kclient-produce-future", "kclient-send", 0.8),
    ("kclient-send", "confluent-kafka", 1.0),
    ("kclient-list", "confluent-kafka", 1.5),
    ("kclient-list+build", "confluent-kafka", 1.5),
    ("kclient-send", "java", None),
    ("kclient-list", "java", None),
    ("kclient-list+build", "java", None),
    ("kclient-txn", "confluent-kafka-txn", None),
]


# ----------------------------------------------------------------------------- workers
def _cpu() -> float:
    """CPU seconds (user + system) of this process, all threads."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _txn_worker(client: str, bootstrap: str, topic: str, n: int, value: bytes,
                txn_size: int) -> tuple[float, float, bool, int]:
    """Transactions of ``txn_size`` messages: (seconds, CPU start, ok, transactions), a
    100-message transaction (not timed) first."""
    tid = f"bench-{client}-{os.getpid()}-{time.time_ns()}"
    sizes = [100] + [min(txn_size, n - 100 - i) for i in range(0, n - 100, txn_size)]
    if client == "kclient-txn":
        from kclient.producer import Producer, ProducerData
        p = Producer({"metadata.broker.list": bootstrap, "producer.type": "async",
                      "transactional.id": tid, "request.required.acks": -1,
                      "compression.codec": "none"})
        p.init_transactions()
        begin, commit = p.begin_transaction, p.commit_transaction
        send = p.send
        start = cpu = 0.0
        for k, size in enumerate(sizes):
            if k == 1:
                start, cpu = time.perf_counter(), _cpu()
            begin()
            send([ProducerData(topic, value) for _ in range(size)])
            commit()
        elapsed = time.perf_counter() - start
        stats = dict(p.stats)
        p.close()
        return elapsed, cpu, stats["acknowledged"] == n and stats["failed"] == 0, len(sizes)
    import confluent_kafka
    cp = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                                   "linger.ms": 5, "compression.codec": "none"})
    cp.init_transactions(60)
    produce, poll = cp.produce, cp.poll
    for k, size in enumerate(sizes):
        if k == 1:
            start, cpu = time.perf_counter(), _cpu()
        cp.begin_transaction()
        for _ in range(size):
            try:
                produce(topic, value)
            except BufferError:
                poll(0.001)
                produce(topic, value)
        cp.commit_transaction(60)
    elapsed = time.perf_counter() - start
    return elapsed, cpu, cp.flush(10) == 0, len(sizes)


def _worker(client: str, bootstrap: str, topic: str, n: int, size: int,
            list_size: int = 1000, txn_size: int = 1000) -> dict:
    value = b"x" * size
    transactions = 0
    if client in OPT_IN:
        elapsed, cpu, ok, transactions = _txn_worker(client, bootstrap, topic, n, value,
                                                     txn_size)
        n -= 100
    elif client.startswith("kclient"):
        from kclient.producer import Producer, ProducerData
        p = Producer({"metadata.broker.list": bootstrap, "producer.type": "async",
                      "request.required.acks": 1, "compression.codec": "none"})
        p.send([ProducerData(topic, value) for _ in range(100)])  # metadata + connection
        p.flush()
        n -= 100
        start, cpu = time.perf_counter(), _cpu()
        chunk = list_size
        last = None
        if client == "kclient-send":
            send = p.send
            for _ in range(n):
                send(ProducerData(topic, value))
        elif client == "kclient-produce-future":
            p.produce(topic, value).result()        # (the first call switches futures on)
            n -= 1
            produce = p.produce
            for _ in range(n):
                last = produce(topic, value)
        elif client == "kclient-list+build":
            for i in range(0, n, chunk):
                p.send([ProducerData(topic, value) for _ in range(min(chunk, n - i))])
        else:  # kclient-list: the lists exist before the clock starts
            elapsed_build = time.perf_counter()
            lists = [[ProducerData(topic, value) for _ in range(min(chunk, n - i))]
                     for i in range(0, n, chunk)]
            start += time.perf_counter() - elapsed_build
            for items in lists:
                p.send(items)
        p.flush()
        elapsed = time.perf_counter() - start
        stats = dict(p.stats)
        p.close()
        if last is not None:
            n_sent = n + 101
            ok = last.result(0).offset >= 0 and stats["acknowledged"] == n_sent \
                and stats["failed"] == 0
        else:
            ok = stats["acknowledged"] == n + 100 and stats["failed"] == 0
    elif client == "confluent-kafka":
        import confluent_kafka
        p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": 1,
                                      "linger.ms": 5, "compression.codec": "none"})
        for _ in range(100):
            p.produce(topic, value)
        p.flush()
        n -= 100
        produce, poll = p.produce, p.poll
        start, cpu = time.perf_counter(), _cpu()
        for _ in range(n):
            try:
                produce(topic, value)
            except BufferError:  # librdkafka's queue is full: serve it until there is room
                while True:
                    poll(0.001)
                    try:
                        produce(topic, value)
                        break
                    except BufferError:
                        continue
        ok = p.flush(120) == 0
        elapsed = time.perf_counter() - start
    elif client == "kafka-python":
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5,
                          batch_size=1 << 20, compression_type=None)
        for _ in range(100):
            p.send(topic, value)
        p.flush()
        n -= 100
        send = p.send
        start, cpu = time.perf_counter(), _cpu()
        for _ in range(n):
            send(topic, value)
        p.flush(120)
        elapsed = time.perf_counter() - start
        ok = True
        p.close()
    else:
        raise SystemExit(f"unknown client {client}")
    cpu = _cpu() - cpu
    return {"client": client, "messages": n, "seconds": elapsed, "rate": n / elapsed,
            "cpu_us_per_msg": cpu / n * 1e6, "ok": ok, "transactions": transactions,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


# ----------------------------------------------------------------------------- harness
def _stored_records(bootstrap: str, topic: str) -> int:
    """Records in ``topic``: the high watermark of each partition, from a small Fetch."""
    from kclient.cluster import Cluster
    from kclient.protocol.apis import FETCH
    total = 0
    with Cluster(bootstrap) as c:
        for p in c.partitions_for(topic):
            conn = c.connection(c.leader_for(topic, p).node_id)
            resp = conn.request(FETCH, {"max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1 << 16,
                                        "topics": [{"topic": topic, "partitions": [
                                            {"partition": p, "fetch_offset": 0,
                                             "partition_max_bytes": 1 << 16}]}]})
            total += resp.responses[0].partitions[0].high_watermark
    return total


def _run_client(client: str, bootstrap: str, topic: str, n: int, size: int,
                timeout: float, list_size: int = 1000, txn_size: int = 1000) -> dict | None:
    if client == "java":
        from kclient.bench.kafka import java_producer_rate
        try:
            rate = java_producer_rate(bootstrap, topic, n, size)
        except Exception as exc:  # any failure: report it, keep benchmarking
            print(f"  java: failed: {exc}", flush=True)
            return None
        return {"client": "java", "messages": n, "seconds": n / rate, "rate": rate, "ok": True,
                "max_rss_mb": 0.0}
    cmd = [sys.executable, "-m", "kclient.bench.producer", "--worker", client,
           "--bootstrap", bootstrap, "--topic", topic, "--messages", str(n),
           "--value-size", str(size), "--list-size", str(list_size),
           "--txn-size", str(txn_size)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  {client}: timed out after {timeout}s", flush=True)
        return None
    if out.returncode != 0:
        print(f"  {client}: failed\n{out.stderr[-2000:]}", flush=True)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def _bench_broker(name: str, bootstrap: str, args: argparse.Namespace) -> dict:
    """Run every client ``args.repeat`` times, interleaved; keep each client's best run."""
    from kclient.testing import create_ready_topic
    results: dict = {}
    runs: dict = {client: [] for client in args.clients}
    print(f"\n== broker: {name} ({bootstrap}) ==", flush=True)
    for round_no in range(args.repeat):
        for client in args.clients:
            topic = f"bench-{client.replace('+', '-')}-{round_no}-{int(time.time() * 1000) % 10**9}"
            create_ready_topic(bootstrap, topic, args.partitions)
            n = args.kafka_python_messages if client == "kafka-python" else args.messages
            r = _run_client(client, bootstrap, topic, n, args.value_size, args.timeout,
                            args.list_size, args.txn_size)
            if r is None:
                continue
            stored = _stored_records(bootstrap, topic)
            markers = r.get("transactions", 0) * args.partitions   # one per partition
            r["verified"] = bool(r["ok"]) and stored == n + markers
            if not r["verified"]:
                print(f"  {client}: NOT VERIFIED (stored {stored} of {n})", flush=True)
                continue
            runs[client].append(r)
    for client, rs in runs.items():
        if not rs:
            continue
        best = max(rs, key=lambda r: r["rate"])
        best["all_rates"] = [round(r["rate"]) for r in rs]
        results[client] = best
        others = ", ".join(f"{x:,}" for x in best["all_rates"])
        cpu = min(r.get("cpu_us_per_msg", 0.0) for r in rs)
        rss = max(r["max_rss_mb"] for r in rs)
        print(f"  {client:19s} {best['rate']:>11,.0f} rec/s  ({best['messages']:,} msgs, "
              f"client CPU {cpu:.2f} us/msg, peak RSS {rss:5.1f} MB; runs: {others})",
              flush=True)
    for a, b, target in KAFKA_TARGETS if name == "kafka" else TARGETS:
        if a in results and b in results:
            ratio = results[a]["rate"] / results[b]["rate"]
            if target is None:
                print(f"  {a} / {b}: {ratio:.2f}x", flush=True)
                continue
            mark = "ok" if ratio >= target else "BELOW TARGET"
            print(f"  {a} / {b}: {ratio:.2f}x (target >= {target}x) {mark}", flush=True)
    return results


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kclient.bench.producer",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--broker", choices=("tansu", "mini", "kafka", "both"), default="both",
                    help="both: tansu and the mini-broker; kafka: Apache Kafka 4.x")
    ap.add_argument("--messages", type=int, default=500_000)
    ap.add_argument("--kafka-python-messages", type=int, default=100_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--list-size", type=int, default=1000,
                    help="ProducerData per send() call for the kclient-list clients")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--txn-size", type=int, default=1000,
                    help="messages per transaction for the -txn clients")
    ap.add_argument("--timeout", type=float, default=300.0, help="per client, seconds")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per client, interleaved; the best is reported")
    ap.add_argument("--clients", nargs="+", default=None, choices=CLIENTS,
                    help="default: all (java only with --broker kafka)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.clients is None:
        args.clients = [c for c in CLIENTS if c not in OPT_IN
                        and (c != "java" or args.broker == "kafka")]
    if args.worker:
        print(json.dumps(_worker(args.worker, args.bootstrap, args.topic, args.messages,
                                 args.value_size, args.list_size, args.txn_size)))
        return 0
    print(f"producer benchmark: {args.messages:,} x {args.value_size} B values, acks=1, "
          f"no compression, {args.partitions} partition(s); load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    if args.broker in ("tansu", "both"):
        from kclient.testing import TansuServer
        with TansuServer() as server:
            _bench_broker("tansu", server.bootstrap, args)
    if args.broker in ("mini", "both"):
        from kclient.broker import MiniBroker
        with MiniBroker() as broker:
            _bench_broker("mini-broker", broker.bootstrap, args)
    if args.broker == "kafka":
        from kclient.bench.kafka import kafka_broker
        with kafka_broker() as kafka:
            _bench_broker("kafka", kafka.bootstrap, args)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
