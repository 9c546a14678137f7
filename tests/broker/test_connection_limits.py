"""Connection limits as Kafka's: ``max.connections`` (the acceptor waits for a slot),
``max.connections.per.ip`` and its overrides (excess connections closed at once),
``connections.max.idle.ms``, and an accept loop that backs off, logging once in a while, when
the process runs out of file descriptors."""

import os
import socket
import time
from pathlib import Path

import pytest

from kclient.broker import MiniBroker
from kclient.protocol.apis import API_VERSIONS
from kclient.protocol.framing import ClientProtocol

from .limits_support import BrokerChild, api_versions, closed_by_peer, connect, wait_until


def _serves_new_connection(bootstrap: str) -> bool:
    """A fresh connection gets an ApiVersions answer (False if it is closed at once)."""
    try:
        with connect(bootstrap, timeout=5) as s:
            return api_versions(s, timeout=5) == 0
    except OSError:
        return False


def test_connections_beyond_max_connections_per_ip_are_closed():
    with MiniBroker(config={"max.connections.per.ip": 2}) as broker:
        first, second = connect(broker.bootstrap), connect(broker.bootstrap)
        assert api_versions(first) == 0 and api_versions(second) == 0
        third = connect(broker.bootstrap)
        assert closed_by_peer(third, 5.0), "a third connection from 127.0.0.1 was kept"
        third.close()
        assert api_versions(first) == 0  # the others are untouched
        first.close()
        assert wait_until(lambda: _serves_new_connection(broker.bootstrap), 10)
        second.close()


def test_max_connections_per_ip_overrides():
    config = {"max.connections.per.ip": 1, "max.connections.per.ip.overrides": "localhost:3"}
    with MiniBroker(config=config) as broker:
        socks = [connect(broker.bootstrap) for _ in range(3)]
        assert all(api_versions(s) == 0 for s in socks)
        extra = connect(broker.bootstrap)
        assert closed_by_peer(extra, 5.0)
        for s in [*socks, extra]:
            s.close()
    with pytest.raises(ValueError, match="host:count"):
        MiniBroker(config={"max.connections.per.ip.overrides": "127.0.0.1"})


def test_max_connections_waits_for_a_slot():
    with MiniBroker(config={"max.connections": 3}) as broker:
        held = [connect(broker.bootstrap) for _ in range(3)]
        assert all(api_versions(s) == 0 for s in held)
        waiting = connect(broker.bootstrap)  # the kernel completes it; the broker waits
        proto = ClientProtocol("waiting")
        _, frame = proto.send_request(API_VERSIONS, 0, {})
        waiting.sendall(frame)
        waiting.settimeout(1.0)
        with pytest.raises(TimeoutError):
            waiting.recv(65536)
        held.pop().close()  # a slot frees: the waiting one is served
        waiting.settimeout(10.0)
        got = []
        while not got:
            data = waiting.recv(65536)
            assert data, "closed instead of served"
            got = proto.receive_bytes(data)
        assert got[0][1].error_code == 0
        for s in [*held, waiting]:
            s.close()


def test_idle_connections_are_closed_after_connections_max_idle_ms():
    with MiniBroker(config={"connections.max.idle.ms": 500}) as broker:
        idle = connect(broker.bootstrap)
        assert api_versions(idle) == 0
        assert closed_by_peer(idle, 10.0)
        idle.close()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_accept_backs_off_and_logs_rarely_when_descriptors_run_out(tmp_path):
    broker = BrokerChild(tmp_path, nofile=96).start()
    socks = []
    try:
        assert _serves_new_connection(broker.bootstrap)
        for _ in range(110):  # more than the broker has descriptors for
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", broker.port))
            socks.append(s)
        assert wait_until(lambda: "accept failed" in broker.output(), 10), broker.output()[-2000:]
        cpu = _cpu_seconds(broker.proc.pid)
        time.sleep(3.0)
        cpu = _cpu_seconds(broker.proc.pid) - cpu
        lines = broker.output().count("accept failed")
        # before: the acceptor spun on the ready listener at 100% CPU, one line per attempt
        assert lines <= 3, f"{lines} 'accept failed' lines in 3 s"
        assert cpu < 1.0, f"{cpu:.2f} s of CPU in 3 s while out of descriptors"
        for s in socks:
            s.close()
        socks = []
        assert wait_until(lambda: _serves_new_connection(broker.bootstrap), 15)
    finally:
        for s in socks:
            s.close()
        broker.kill()
