"""The ``kclient`` command: help, version, exit codes, and a broker started from it."""

import signal
import subprocess
import sys

from kclient import __version__
from kclient.cli import build_parser, main
from kclient.testing import free_port, wait_for_port
from tests.conftest import CliRunner


def _all_parsers(parser, path=()):
    """(command path, parser) of every subcommand, recursively."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _all_parsers(sub, (*path, name))


def test_version_and_usage(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"kclient {__version__}"
    assert main([]) == 2
    assert "topics" in capsys.readouterr().out
    assert main(["frobnicate"]) == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
    assert main(["bench", "nope"]) == 2
    assert "records" in capsys.readouterr().err


def test_every_subcommand_has_help_with_an_example(capsys):
    paths = [path for path, _ in _all_parsers(build_parser())]
    assert {
        ("topics", "create"),
        ("groups", "reset-offsets"),
        ("produce",),
        ("consume",),
        ("offsets",),
        ("bench",),
        ("broker",),
    } <= set(paths)
    for path in paths:
        assert main([*path, "--help"]) == 0, path
        out = capsys.readouterr().out
        example = out.split("example:\n", 1)[1]
        assert f"kclient {path[0]}" in example, path
    assert main(["bench", "--help"]) == 0
    assert "records" in capsys.readouterr().out
    assert main(["broker", "--log-dir", "x", "--config", "oops"]) == 2
    assert "expects KEY=VALUE" in capsys.readouterr().err


def test_missing_bootstrap_is_a_usage_error_and_a_dead_broker_a_failure():
    no_env = CliRunner(None)
    done = no_env("topics", "list", check=2)
    assert b"KCLIENT_BOOTSTRAP" in done.stderr
    done = no_env("topics", "list", "-b", f"127.0.0.1:{free_port()}", check=1)
    assert done.stderr.count(b"\n") == 1 and b"Traceback" not in done.stderr
    done = no_env("topics", "list", "-b", "h:1", "-X", "no.such.key=1", check=2)
    assert b"no.such.key" in done.stderr
    done = no_env("topics", "list", "-b", "h:1", "--security-protocol", "SASL_FOO", check=2)
    assert b"security.protocol" in done.stderr


def test_security_flags_reach_the_connection(mini_broker, tmp_path):
    # a TLS client against a plaintext listener fails the handshake: the flags were used
    done = CliRunner(mini_broker.bootstrap)(
        "topics",
        "list",
        "--security-protocol",
        "SSL",
        "-X",
        "ssl.endpoint.identification.algorithm=none",
        check=1,
    )
    assert b"Traceback" not in done.stderr
    done = CliRunner(mini_broker.bootstrap)(
        "topics",
        "list",
        "--ssl-cafile",
        tmp_path / "missing.pem",
        "--security-protocol",
        "SSL",
        check=2,
    )
    assert b"missing.pem" in done.stderr


def test_broker_command_serves_kafka_clients_and_stops_on_sigterm(tmp_path):
    from confluent_kafka import Producer

    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kclient.cli",
            "broker",
            "--log-dir",
            str(tmp_path),
            "--port",
            str(port),
        ]
    )
    try:
        wait_for_port(port, proc=proc)
        p = Producer({"bootstrap.servers": f"127.0.0.1:{port}"})
        p.produce("cli-topic", b"hello")
        assert p.flush(10) == 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        assert any(
            f.suffix == ".log" and f.stat().st_size > 0
            for f in (tmp_path / "cli-topic-0").iterdir()
        )
    finally:
        if proc.poll() is None:
            proc.kill()


def test_broker_errors_are_one_line(tmp_path, mini_broker):
    busy = mini_broker.bootstrap.rsplit(":", 1)[1]
    for args, expected in (
        (["--log-dir", tmp_path / "b", "--port", busy], "cannot listen on 127.0.0.1:"),
        (["--log-dir", tmp_path / "file" / "x", "--port", 0], "cannot use log dir"),
    ):
        (tmp_path / "file").write_text("not a directory")
        done = subprocess.run(
            [sys.executable, "-m", "kclient.cli", "broker", *map(str, args)],
            capture_output=True,
            timeout=30,
        )
        assert done.returncode == 1
        last = done.stderr.decode().strip().splitlines()[-1]
        assert last.startswith("kclient broker: " + expected) and b"Traceback" not in done.stderr
