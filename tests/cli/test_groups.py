"""``kclient groups`` as subprocesses against the mini-broker (and ZooKeeper-stored offsets)."""

import os
import signal
import subprocess
import sys

import pytest


def _rows(text, first="g"):
    """The data rows of a table (lines starting with the group name), split."""
    return [line.split() for line in text.splitlines() if line.startswith(first + " ")]


def _setup(cli):
    cli("topics", "create", "gt", "-p", "2", check=0)
    cli("produce", "gt", "-p", "0", input=b"a\nb\nc\nd\n", check=0)
    cli("produce", "gt", "-p", "1", input=b"e\n", check=0)


def test_describe_lag_reset_and_delete(cli):
    _setup(cli)
    assert b"-p and -G" in cli("consume", "gt", "-G", "g", "-p", "0", check=2).stderr
    cli("consume", "gt", "-G", "g", "-o", "earliest", "-e", check=0)
    cli("produce", "gt", "-p", "0", input=b"x\ny\n", check=0)
    assert cli.out("groups", "list").split() == ["g"]
    (row,) = _rows(cli.out("groups", "list", "--state"))
    assert row[:2] == ["g", "Empty"] and row[3] == "kafka"
    out = cli.out("groups", "describe", "g")
    assert out.splitlines()[1].split() == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]
    assert _rows(out) == [
        ["g", "gt", "0", "4", "6", "2", "-", "-", "-"],
        ["g", "gt", "1", "1", "1", "0", "-", "-", "-"],
    ]
    plan = cli.out("groups", "reset-offsets", "g", "--topic", "gt", "--to-earliest")
    assert "dry run" in plan and _rows(plan) == [
        ["g", "gt", "0", "4", "0"],
        ["g", "gt", "1", "1", "0"],
    ]
    assert _rows(cli.out("groups", "describe", "g"))[0][3] == "4"  # nothing committed
    cli("groups", "reset-offsets", "g", "--topic", "gt:0", "--shift-by", "-3", "--execute", check=0)
    assert _rows(cli.out("groups", "describe", "g"))[0][3:6] == ["1", "6", "5"]
    cli("groups", "reset-offsets", "g", "--to-offset", "99", "--execute", check=0)
    assert [r[3] for r in _rows(cli.out("groups", "describe", "g"))] == ["6", "1"]
    cli(
        "groups", "reset-offsets", "g", "--to-datetime", "2000-01-01T00:00:00", "--execute", check=0
    )
    assert [r[3] for r in _rows(cli.out("groups", "describe", "g"))] == ["0", "0"]
    assert b"--to-earliest" in cli("groups", "reset-offsets", "g", check=2).stderr
    cli("groups", "delete", "g", check=0)
    assert b"GroupIdNotFoundError" in cli("groups", "describe", "g", check=1).stderr


def test_describe_shows_a_live_member_and_delete_refuses_its_group(cli):
    _setup(cli)
    env = dict(os.environ, KCLIENT_BOOTSTRAP=cli.bootstrap)
    # Ctrl-C as a terminal sends it: a suite started in the background by a non-interactive
    # shell ignores SIGINT, its children inherit that, and Python then installs no handler
    member = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kclient.cli",
            "consume",
            "gt",
            "-G",
            "live",
            "-o",
            "earliest",
            "-f",
            "%o\\n",
        ],
        stdout=subprocess.PIPE,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert member.stdout.readline().strip() in (b"0", b"4")
        out = cli.out("groups", "describe", "live")
        rows = _rows(out, "live")
        assert len(rows) == 2 and all(r[6].startswith("kclient-cli") or r[6] != "-" for r in rows)
        members = cli.out("groups", "describe", "live", "--members")
        assert "Stable" in members and len(_rows(members, "live")) == 1
        assert b"NonEmptyGroupError" in cli("groups", "delete", "live", check=1).stderr
        assert (
            b"inactive" in cli("groups", "reset-offsets", "live", "--to-earliest", check=1).stderr
        )
    finally:
        member.send_signal(signal.SIGINT)
        assert member.wait(20) == 130


@pytest.mark.zookeeper
def test_zookeeper_stored_offsets(cli, zookeeper):
    from kclient.admin import AdminClient

    _setup(cli)
    with AdminClient(cli.bootstrap, zookeeper_connect=zookeeper.connect) as admin:
        admin.alter_consumer_group_offsets("old", {("gt", 0): 1, ("gt", 1): 1}, storage="zookeeper")
    zk = ("--zookeeper", zookeeper.connect)
    assert "old" in cli.out("groups", "list", *zk).split()
    assert _rows(cli.out("groups", "describe", "old", *zk), "old") == [
        ["old", "gt", "0", "1", "4", "3", "-", "-", "-"],
        ["old", "gt", "1", "1", "1", "0", "-", "-", "-"],
    ]
    cli("groups", "reset-offsets", "old", "--to-latest", "--execute", *zk, check=0)
    assert [r[5] for r in _rows(cli.out("groups", "describe", "old", *zk), "old")] == ["0", "0"]
