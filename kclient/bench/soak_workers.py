"""The soak's client processes (``kclient bench soak`` starts them; each is its own process so
that it can be killed with -9 and its memory sampled alone).

    python -m kclient.bench.soak_workers producer NAME MODE BOOTSTRAP TOPIC RATE OUT
    python -m kclient.bench.soak_workers consumer NAME KIND GROUP CONNECT TOPIC OUT

A producer (MODE sync, async or idempotent) sends ids ``NAME-0, NAME-1, ...`` at RATE per
second and writes an ``A``/``F`` line per outcome to OUT (see :mod:`kclient.bench.soak_ledger`).
A consumer (KIND zk: ZooKeeper ConsumerConnector, CONNECT is the ZooKeeper connect string;
KIND group: broker-coordinated, CONNECT is the bootstrap) writes a ``C`` line per message and
commits offsets only after the lines they cover are written, so a kill -9 can duplicate but
never skip.  A consumer also keeps OUT.status (its ZooKeeper session, for the forced expiry).
SIGTERM: stop, close (producers report what is left), write ``DONE`` and exit.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kclient import Producer, ProducerData
from kclient import consumer as consumers
from kclient.errors import ConsumerTimeoutError, FailedToSendMessageError, KafkaError


def _producer_config(mode: str, bootstrap: str) -> dict[str, Any]:
    """Settings per mode: acks=1 for sync and async, acks=all for the idempotent one."""
    config: dict[str, Any] = {
        "metadata.broker.list": bootstrap,
        "request.required.acks": 1,
        "message.send.max.retries": 5,
        "retry.backoff.ms": 300,
        "request.timeout.ms": 5000,
    }
    if mode in ("async", "idempotent"):
        config.update(
            {"producer.type": "async", "queue.buffering.max.ms": 20, "delivery.timeout.ms": 60000}
        )
    if mode == "idempotent":
        config.update(
            {
                "enable.idempotence": True,
                "request.required.acks": -1,
                "message.send.max.retries": 20,
            }
        )
    return config


def run_producer(name: str, mode: str, bootstrap: str, topic: str, rate: float, out: Path) -> None:
    """Send ids at ``rate`` per second until SIGTERM; one line per outcome."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    log = open(out, "a", buffering=1, encoding="utf-8")
    lock = threading.Lock()
    started: dict[str, float] = {}

    def report(rep: Any) -> None:
        now = time.monotonic()
        with lock:
            for msg in rep.messages:
                mid = msg.value.decode()
                t0 = started.pop(mid, now)
                log.write(
                    f"A {mid} {(now - t0) * 1000:.3f}\n" if rep.error is None else f"F {mid}\n"
                )

    producer = Producer(
        _producer_config(mode, bootstrap), on_report=None if mode == "sync" else report
    )
    seq, start = 0, time.monotonic()
    while not stop.is_set():
        mid = f"{name}-{seq}"
        seq += 1
        with lock:
            started[mid] = time.monotonic()
        try:
            producer.send(ProducerData(topic, mid.encode()))
            if mode == "sync":
                with lock:
                    log.write(f"A {mid} {(time.monotonic() - started.pop(mid)) * 1000:.3f}\n")
        except FailedToSendMessageError:
            with lock:
                started.pop(mid, None)
                log.write(f"F {mid}\n")
        except KafkaError:  # a full queue: not sent at all
            with lock:
                started.pop(mid, None)
                log.write(f"F {mid}\n")
        delay = start + seq / rate - time.monotonic()
        if delay > 0:
            stop.wait(delay)
    try:
        producer.close(timeout=30)
    except KafkaError:
        pass  # failures were reported one by one
    log.write("DONE\n")


def _consumer_config(kind: str, group: str, connect: str) -> dict[str, Any]:
    config: dict[str, Any] = {
        "group.id": group,
        "consumer.timeout.ms": 500,
        "auto.offset.reset": "smallest",
        "auto.commit.enable": False,
        "rebalance.backoff.ms": 500,
        "rebalance.max.retries": 60,
        "refresh.leader.backoff.ms": 200,
        "socket.timeout.ms": 10000,
        "offsets.channel.backoff.ms": 500,
        "retry.backoff.ms": 300,
    }
    if kind == "zk":
        config.update(
            {
                "zookeeper.connect": connect,
                "zookeeper.session.timeout.ms": 6000,
                "zookeeper.connection.timeout.ms": 30000,
            }
        )
    else:
        config.update(
            {
                "metadata.broker.list": connect,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 1000,
            }
        )
    return config


def _keep_status(conn: Any, path: Path, stop: threading.Event) -> None:
    """Rewrite ``path`` every 0.5 s with the connector's ZooKeeper session (zk kind)."""
    while not stop.wait(0.5):
        zk = getattr(conn, "zk", None)
        client_id = getattr(zk, "client_id", None) if zk is not None else None
        status = {"pid": os.getpid()}
        if client_id:
            status.update(session=client_id[0], passwd=client_id[1].hex())
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(status))
        tmp.replace(path)


def run_consumer(name: str, kind: str, group: str, connect: str, topic: str, out: Path) -> None:
    """Consume one stream until SIGTERM; a line per message, commits after the lines."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    log = open(out, "a", buffering=1, encoding="utf-8")
    conn = consumers.create(_consumer_config(kind, group, connect))
    threading.Thread(
        target=_keep_status, args=(conn, out.with_suffix(".status"), stop), daemon=True
    ).start()
    [stream] = conn.create_message_streams({topic: 1})[topic]
    it, last_commit = iter(stream), time.monotonic()
    while not stop.is_set():
        try:
            m = next(it)
            log.write(f"C {m.message.decode()} {m.partition} {m.offset}\n")
        except ConsumerTimeoutError:
            pass
        except StopIteration:
            break
        if time.monotonic() - last_commit > 1.0:
            last_commit = time.monotonic()
            try:
                conn.commit_offsets()
            except KafkaError as exc:  # coordinator moving, broker down: next time
                log.write(f"X commit {type(exc).__name__}\n")
    try:
        conn.commit_offsets()
    except KafkaError:
        pass
    conn.shutdown()
    log.write("DONE\n")


def main(argv: list[str] | None = None) -> int:
    """Run one worker (see the module docstring)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 7 and args[0] == "producer":
        run_producer(args[1], args[2], args[3], args[4], float(args[5]), Path(args[6]))
    elif len(args) == 7 and args[0] == "consumer":
        run_consumer(args[1], args[2], args[3], args[4], args[5], Path(args[6]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
