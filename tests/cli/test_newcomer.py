"""Issue 24, CLI rows: kcat's and Kafka's habits (-b before the command, --bootstrap-server,
-t, --from-beginning), the command's own usage on a bad flag, consume never creating a topic,
one-line connection errors, alter validating everything first, JSON saying how bytes are written."""

from __future__ import annotations

import base64
import json

from tests.conftest import CliRunner


def test_global_bootstrap_and_kafka_flag_names(mini_broker):
    bare = CliRunner(None)  # no KCLIENT_BOOTSTRAP: the flags must do it
    b = mini_broker.bootstrap
    assert "created topic kp" in bare.out("-b", b, "topics", "create", "kp", "-p", "1")
    assert bare.out("--bootstrap-server", b, "topics", "list").split() == ["kp"]
    assert bare.out("topics", "list", "--bootstrap-server", b).split() == ["kp"]
    done = bare("produce", "-t", "kp", "-b", b, input=b"one\ntwo\n", check=0)
    assert b"delivered 2 of 2" in done.stderr
    assert bare.out("consume", "-t", "kp", "--from-beginning", "-e", "-b", b).split() == [
        "one",
        "two",
    ]
    assert (
        b"--from-beginning and -o latest disagree"
        in bare("consume", "-t", "kp", "--from-beginning", "-o", "latest", "-b", b, check=2).stderr
    )
    assert b"no brokers: give -b / --bootstrap-server" in bare("topics", "list", check=2).stderr


def test_a_bad_flag_shows_the_commands_usage(cli):
    err = cli("topics", "list", "--bogus", check=2).stderr.decode()
    assert err.startswith("usage: kclient topics list") and "unrecognized arguments: --bogus" in err
    err = cli("consume", "t", "--nope", check=2).stderr.decode()
    assert err.startswith("usage: kclient consume")


def test_consume_never_creates_a_topic(cli):
    done = cli("consume", "nope", "-e", check=1)
    assert done.stderr.decode().strip() == (
        "kclient consume: topic 'nope' does not exist (consume never creates topics; "
        "`kclient topics create nope` does)"
    )
    assert "nope" not in cli.out("topics", "list").split()
    cli("consume", "-t", "nope", "-G", "g", "-e", check=1)
    assert "nope" not in cli.out("topics", "list").split()


def test_connection_errors_are_one_line_naming_what_was_tried():
    dead = CliRunner("127.0.0.1:1")
    for args, stdin in (
        (("topics", "list"), None),
        (("produce", "events"), b"a\n"),
        (("consume", "events", "-e"), None),
    ):
        err = dead(*args, input=stdin, check=1).stderr.decode()
        assert len(err.strip().splitlines()) == 1, err
        assert "tried 127.0.0.1:1" in err and "Connection refused" in err, err
        assert "within 10.0s" not in err


def test_topics_alter_validates_everything_before_changing_anything(cli):
    cli("topics", "create", "al", "-p", "2", check=0)
    err = cli(
        "topics", "alter", "al", "--partitions", "4", "--config", "retention.ms=abc", check=1
    ).stderr.decode()
    assert "retention.ms" in err
    assert "PartitionCount: 2" in cli.out("topics", "describe", "al")
    cli("topics", "alter", "al", "--partitions", "4", "--config", "retention.ms=1000", check=0)
    described = cli.out("topics", "describe", "al")
    assert "PartitionCount: 4" in described and "retention.ms=1000" in described


def test_json_output_says_how_bytes_are_written(cli):
    cli("produce", "bj", "-p", "0", input=b"text\n", check=0)
    cli(
        "produce",
        "bj",
        "-p",
        "0",
        "--binary",
        "base64",
        input=base64.b64encode(b"\xff\x00bin") + b"\n",
        check=0,
    )
    rows = [
        json.loads(line)
        for line in cli.out(
            "consume", "bj", "-o", "earliest", "-e", "--format", "json"
        ).splitlines()
    ]
    assert [(r["encoding"], r["value"]) for r in rows] == [
        ("utf-8", "text"),
        ("base64", base64.b64encode(b"\xff\x00bin").decode()),
    ]
    hexed = json.loads(
        cli.out("consume", "bj", "-o", "earliest", "-c", "1", "--format", "json", "--binary", "hex")
    )
    assert hexed["encoding"] == "hex" and hexed["value"] == b"text".hex()


def _banner(tmp_path, *extra):
    import subprocess
    import sys

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kclient.cli",
            "broker",
            "--log-dir",
            str(tmp_path),
            "--port",
            "0",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        return proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(20)


def test_kclient_broker_starts_groups_at_once_and_says_so(tmp_path):
    """A local broker's first group member gets its partitions without Kafka's 3 s wait."""
    line = _banner(tmp_path / "a")
    assert "listening on 127.0.0.1:" in line and "group.initial.rebalance.delay.ms=0" in line
    line = _banner(tmp_path / "b", "--config", "group.initial.rebalance.delay.ms=3000")
    assert "group.initial.rebalance.delay.ms=3000" in line
