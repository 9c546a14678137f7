"""``kclient produce`` and ``kclient consume`` as subprocesses: byte-exact binary round trips,
keys, headers, JSON lines, offsets and output formats."""

import base64
import json
import os
import time

import pytest


@pytest.mark.parametrize("binary", ["base64", "hex"])
def test_binary_round_trip_is_byte_exact(cli, binary):
    blobs = [os.urandom(n) for n in (0, 1, 100, 5000)] + [b"\n\r\x00 \xff\n", b"\x00" * 10]
    keys = [os.urandom(8) for _ in blobs]
    enc = base64.b64encode if binary == "base64" else lambda b: b.hex().encode()
    lines = b"".join(enc(k) + b"\t" + enc(v) + b"\n" for k, v in zip(keys, blobs))
    # an empty value encodes to an empty field: the line still has its key and separator
    done = cli("produce", "bin", "--binary", binary, "-K", "\t", "-p", "0", input=lines, check=0)
    assert b"delivered 6 of 6 message(s) to bin" in done.stderr
    out = cli(
        "consume", "bin", "-o", "earliest", "-e", "--binary", binary, "-K", "\t", check=0
    ).stdout

    def dec(text):
        return (
            base64.b64decode(text)
            if binary == "base64"
            else bytes.fromhex(text.decode() if isinstance(text, bytes) else text)
        )

    got = [tuple(dec(f) for f in line.split(b"\t")) for line in out.splitlines()]
    assert got == list(zip(keys, blobs))
    out = cli.out("consume", "bin", "-o", "earliest", "-e", "--format", "json", "--binary", binary)
    assert [dec(json.loads(line)["value"]) for line in out.splitlines()] == blobs


def test_keys_headers_formats_and_offsets(cli):
    cli("topics", "create", "t", "-p", "2", check=0)
    before = int(time.time() * 1000)
    done = cli(
        "produce",
        "t",
        "-K",
        ":",
        "-H",
        "src=cli",
        "-p",
        "1",
        input=b"k1:v1\nk2:v2\n\nk3:v3\nno-separator\n",
        check=1,
    )
    assert b"line 4: skipped" in done.stderr and b"delivered 3 of 3" in done.stderr
    jsonl = (
        b'{"key": "k4", "value": {"n": 1}, "headers": {"h": "x"}}\n'
        b'{"value": "v5", "partition": 0, "headers": [["a", "1"], ["a", "2"]]}\n'
    )
    assert (
        b"delivered 2 of 2"
        in cli(
            "produce",
            "t",
            "--format",
            "json",
            "-p",
            "1",
            "--codec",
            "zstd",
            "--acks",
            "all",
            input=jsonl,
            check=0,
        ).stderr
    )
    out = cli.out(
        "consume", "t", "-p", "1", "-o", "earliest", "-e", "-f", "%t/%p/%o %k=%s [%h] %S\\n"
    )
    assert out.splitlines() == [
        "t/1/0 k1=v1 [src=cli] 2",
        "t/1/1 k2=v2 [src=cli] 2",
        "t/1/2 k3=v3 [src=cli] 2",
        't/1/3 k4={"n":1} [h=x] 7',
    ]
    rows = [
        json.loads(line)
        for line in cli.out("consume", "t", "-o", "earliest", "-e", "--format", "json").splitlines()
    ]
    assert {(r["partition"], r["offset"], r["value"]) for r in rows} >= {
        (0, 0, "v5"),
        (1, 3, '{"n":1}'),
    }
    (v5,) = [r for r in rows if r["partition"] == 0]
    assert v5["headers"] == [["a", "1"], ["a", "2"]] and v5["key"] is None
    assert v5["timestamp"] >= before
    assert cli.out("consume", "t", "-p", "1", "-o", "-2", "-e").split() == ["v3", '{"n":1}']
    assert cli.out("consume", "t", "-p", "1", "-o", "1", "-c", "1").split() == ["v2"]
    assert cli.out("consume", "t", "-p", "1", "-o", f"@{before}", "-c", "1").split() == ["v1"]
    assert cli.out("consume", "t", "-p", "1", "-o", "latest", "-e") == ""
    assert b"expected earliest" in cli("consume", "t", "-o", "soon", check=2).stderr


def test_produce_from_a_file_and_a_group_consumer_commits(cli, tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join(b"m%d\n" % i for i in range(50)))
    cli("topics", "create", "f", "-p", "3", check=0)
    cli("produce", "f", "--file", path, check=0)
    out = cli.out("consume", "f", "-G", "fg", "-o", "earliest", "-e")
    assert sorted(out.split()) == sorted(f"m{i}" for i in range(50))
    assert cli.out("consume", "f", "-G", "fg", "-o", "earliest", "-e") == ""


def test_consume_reads_every_leader_of_a_cluster(mini_cluster):
    from tests.conftest import CliRunner

    cli = CliRunner(mini_cluster.bootstrap)
    cli("topics", "create", "spread", "-p", "6", check=0)
    leaders = {row.split()[2] for row in cli.out("topics", "describe", "spread").splitlines()[2:]}
    assert len(leaders) == 3
    lines = b"".join(b"k%d:v%d\n" % (i, i) for i in range(60))
    cli("produce", "spread", "-K", ":", input=lines, check=0)
    out = cli.out("consume", "spread", "-o", "earliest", "-e", "-f", "%p %s\\n")
    assert sorted(line.split()[1] for line in out.splitlines()) == sorted(
        f"v{i}" for i in range(60)
    )
    assert len({line.split()[0] for line in out.splitlines()}) > 1
    assert (
        b"with -G, -o is earliest or latest"
        in cli("consume", "spread", "-G", "x", "-o", "5", check=2).stderr
    )
