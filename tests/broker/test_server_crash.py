"""Crash a real broker process (kill -9) under an acks=1 producer, damage its newest segment,
restart it: every acknowledged record is still there, the log ends at the last valid entry and
the broker serves on."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kclient.protocol.records import build_batch, scan_entries, scan_log
from kclient.testing import free_port, wait_for_port
from tests.needs import need_module

from .compaction_support import read_confluent

confluent_kafka = need_module("confluent_kafka")

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "crash"


class BrokerProcess:
    """``python -m kclient.broker`` in a child process (own session, log file)."""

    def __init__(self, log_dir: Path, port: int):
        self.log_dir, self.port = log_dir, port
        self.proc = None
        self.out = log_dir.parent / "broker.out"

    def start(self):
        argv = [
            sys.executable,
            "-m",
            "kclient.broker",
            "--log-dir",
            str(self.log_dir),
            "--port",
            str(self.port),
            "--config",
            "log.flush.interval.messages=1",
            "--config",
            "log.segment.bytes=300000",
        ]
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        with open(self.out, "ab") as out:
            self.proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=ROOT,
                start_new_session=True,
            )
        wait_for_port(self.port, timeout=30, proc=self.proc)

    def kill9(self):
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(20)

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            self.kill9()

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"


def _produce_until_killed(broker: BrokerProcess, min_acked: int) -> dict:
    """Produce continuously with acks=1; kill -9 the broker once ``min_acked`` are acked."""
    acked: dict[int, bytes] = {}
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "acks": "1",
            "linger.ms": 2,
            "message.timeout.ms": 3000,
            "retries": 0,
            "enable.idempotence": False,
        }
    )

    def report(err, msg):
        if err is None:
            acked[msg.offset()] = msg.value()

    stop = threading.Event()

    def run():
        i = 0
        while not stop.is_set():
            try:
                producer.produce(TOPIC, value=b"record-%08d-" % i + b"x" * 200, callback=report)
                i += 1
            except BufferError:
                pass
            producer.poll(0.001 if i % 50 == 0 else 0)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while len(acked) < min_acked and time.monotonic() < deadline:
        time.sleep(0.01)
    broker.kill9()
    stop.set()
    thread.join(10)
    producer.flush(5)
    assert len(acked) >= min_acked, "the producer never got going"
    return dict(acked)


def _damage(segment: Path, how: str, max_acked: int) -> None:
    """Append garbage and/or leave a torn (cut) last entry, never touching acked data.  The
    newest segment is empty when the kill came right after a roll (seen once in ~30 runs)."""
    data = segment.read_bytes()
    entries = scan_entries(data).entries
    last = entries[-1] if entries else None
    if how in ("torn", "both"):
        if last is not None and last.offset > max_acked:  # never acknowledged: cut it
            with open(segment, "r+b") as f:
                f.truncate(last.position + last.size // 2)
        else:  # a half-written batch after the acked data
            torn = build_batch([b"torn" * 100], base_offset=max_acked + 1)
            with open(segment, "ab") as f:
                f.write(torn[: len(torn) // 2])
    if how in ("garbage", "both"):
        with open(segment, "ab") as f:
            f.write(os.urandom(4096))


def _consume_all(bootstrap: str) -> tuple[list, int, int]:
    """(offset, value) of every record from 0, and the low / high watermarks."""
    got, low, high = read_confluent(bootstrap, TOPIC, "crash-check")
    return [(offset, value) for offset, _, value in got], low, high


@pytest.mark.parametrize("how", ["garbage", "torn", "both"])
def test_kill9_keeps_every_acknowledged_record(tmp_path, how):
    broker = BrokerProcess(tmp_path / "logs", free_port())
    try:
        broker.start()
        acked = _produce_until_killed(broker, min_acked=3000)
        segments = sorted((broker.log_dir / f"{TOPIC}-0").glob("*.log"))
        assert len(segments) > 1, "the test wants several segments"
        _damage(segments[-1], how, max(acked))
        broker.start()
        got, low, high = _consume_all(broker.bootstrap)
        offsets = [o for o, _ in got]
        assert offsets == list(range(len(got))), "offsets must stay contiguous"
        assert high == len(got) and low == 0
        stored = dict(got)
        missing = [o for o, v in acked.items() if stored.get(o) != v]
        assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
        newest = sorted((broker.log_dir / f"{TOPIC}-0").glob("*.log"))[-1]
        content = newest.read_bytes()
        assert scan_log(content).valid_bytes == len(content), "log must end at a valid entry"
        assert "truncated" in broker.out.read_text(errors="replace"), "recovery must have run"
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap})
        offsets_after = []
        producer.produce(
            TOPIC,
            value=b"after restart",
            callback=lambda err, msg: offsets_after.append((err, msg.offset())),
        )
        producer.flush(15)
        assert offsets_after == [(None, len(got))]
        assert broker.terminate() == 0
        assert (broker.log_dir / f"{TOPIC}-0" / ".kclient_clean_shutdown").exists()
    except Exception:
        print(broker.out.read_text(errors="replace")[-4000:] if broker.out.exists() else "")
        raise
    finally:
        broker.cleanup()
