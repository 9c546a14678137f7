"""Helpers of the compaction process tests: a restartable broker process, a keyed workload with
tombstones, the cleaner checkpoint, and reading a partition from the start with two clients."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from kclient.simple import SimpleConsumer
from kclient.testing import free_port, wait_for_port
from tests.needs import need_module

confluent_kafka = need_module("confluent_kafka")
confluent_admin = need_module("confluent_kafka.admin")

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "compacted"
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": "16384",
    "segment.ms": "300",
    "delete.retention.ms": "1000",
    "min.cleanable.dirty.ratio": "0.01",
}


class BrokerProcess:
    """``python -m kclient.broker`` on a fixed port and log dir, restartable, killable (-9)."""

    def __init__(self, log_dir: Path, config: dict[str, str], env: dict | None = None):
        self.log_dir, self.config, self.env = log_dir, config, env or {}
        self.port = free_port()
        self.out = log_dir.parent / "broker.out"
        self.proc: subprocess.Popen | None = None

    def start(self, env: dict | None = None, extra: dict | None = None) -> BrokerProcess:
        """Start with the broker's config plus ``extra``, and ``env`` (default: its own)."""
        argv = [
            sys.executable,
            "-m",
            "kclient.broker",
            "--log-dir",
            str(self.log_dir),
            "--port",
            str(self.port),
        ]
        for key, value in {**self.config, **(extra or {})}.items():
            argv += ["--config", f"{key}={value}"]
        environ = {
            **os.environ,
            **(self.env if env is None else env),
            "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        }
        with open(self.out, "ab") as out:
            self.proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=environ,
                cwd=ROOT,
                start_new_session=True,
            )
        wait_for_port(self.port, timeout=30, proc=self.proc)
        return self

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(20)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def partition_dir(self) -> Path:
        return self.log_dir / f"{TOPIC}-0"


def create_topic(bootstrap: str, config: dict[str, str] | None = None) -> None:
    admin = confluent_admin.AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [
            confluent_admin.NewTopic(
                TOPIC, 1, 1, config=dict(TOPIC_CONFIG if config is None else config)
            )
        ]
    )
    futures[TOPIC].result(15)


def workload(n: int = 10_000, keys: int = 100, seed: int = 7) -> list[tuple]:
    """(key, value) pairs: ``n`` records over ``keys`` keys, 5% tombstones; the last record of
    every 10th key is a tombstone, so some keys end deleted and others come back to life."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        key = b"key-%03d" % rng.randrange(keys)
        value = None if rng.random() < 0.05 else b"value-%06d-" % i + b"x" * rng.randrange(40)
        out.append((key, value))
    for k in range(0, keys, 10):
        out.append((b"key-%03d" % k, None))
    return out


def produce(bootstrap: str, records: list[tuple], codec: str = "lz4") -> list[tuple]:
    """Produce in order (acks=all, small batches); (offset, key, value) of each, acknowledged."""
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.num.messages": 50,
            "enable.idempotence": False,
            "max.in.flight": 1,
            "compression.type": codec,
        }
    )
    acked: list[tuple] = []

    def report(err, msg):
        assert err is None, err
        acked.append((msg.offset(), msg.key(), msg.value()))

    for key, value in records:
        while True:
            try:
                producer.produce(TOPIC, key=key, value=value, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert len(acked) == len(records)
    return sorted(acked)


def latest_per_key(written: list[tuple]) -> dict[bytes, tuple]:
    """key -> (offset, value) of its last record."""
    out: dict[bytes, tuple] = {}
    for offset, key, value in sorted(written):
        out[key] = (offset, value)
    return out


def checkpoint(log_dir: Path) -> int:
    """The cleaner's first dirty offset of the topic (-1 before the first cleaning)."""
    try:
        lines = (log_dir / "cleaner-offset-checkpoint").read_text().split("\n")
    except OSError:
        return -1
    for line in lines[2:]:
        parts = line.split(" ")
        if len(parts) == 3 and parts[0] == TOPIC:
            return int(parts[2])
    return -1


def active_base(partition_dir: Path) -> int:
    return max(int(p.name[:20]) for p in partition_dir.glob("*.log"))


def wait_cleaned(broker: BrokerProcess, timeout: float = 60) -> int:
    """Wait until the cleaner has cleaned up to the active segment; that offset."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        active = active_base(broker.partition_dir)
        if checkpoint(broker.log_dir) >= active > 0 and not leftovers(broker.partition_dir):
            return active
        time.sleep(0.1)
    raise AssertionError(
        f"no cleaning up to {active_base(broker.partition_dir)} "
        f"(checkpoint {checkpoint(broker.log_dir)})"
    )


def leftovers(partition_dir: Path) -> list[str]:
    return [p.name for p in partition_dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]


def read_simple(bootstrap: str) -> list[tuple]:
    host, port = bootstrap.rsplit(":", 1)
    with SimpleConsumer(host, int(port), so_timeout=10000, buffer_size=None) as consumer:
        return [(m.offset, m.key, m.value) for m in consumer.iter_messages(TOPIC, 0, 0)]


def read_confluent(
    bootstrap: str, topic: str = TOPIC, group: str = "compaction-check"
) -> tuple[list[tuple], int, int]:
    """confluent-kafka's (offset, key, value) of partition 0 from offset 0 to the end, and
    its low / high watermarks."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 60
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            assert msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF, msg.error()
            break
        got.append((msg.offset(), msg.key(), msg.value()))
    low, high = consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 0), 10)
    consumer.close()
    return got, low, high
