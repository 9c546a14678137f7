"""The ``kclient`` command: usage, errors, and a broker started from it serving a real client."""
import signal
import subprocess
import sys

from kclient.cli import main
from kclient.testing import free_port, wait_for_port


def test_usage_and_unknown_commands(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out
    assert main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err
    assert main(["bench", "nope"]) == 2
    assert "records, producer" in capsys.readouterr().err


def test_broker_command_serves_kafka_clients_and_stops_on_sigterm(tmp_path):
    from confluent_kafka import Producer
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kclient.cli", "broker", "--log-dir",
                             str(tmp_path), "--port", str(port)])
    try:
        wait_for_port(port, proc=proc)
        p = Producer({"bootstrap.servers": f"127.0.0.1:{port}"})
        p.produce("cli-topic", b"hello")
        assert p.flush(10) == 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        assert any(f.suffix == ".log" and f.stat().st_size > 0
                   for f in (tmp_path / "cli-topic-0").iterdir())
    finally:
        if proc.poll() is None:
            proc.kill()
