"""A mini-broker in a child process, for tests that measure what it spends (RSS, descriptors,
log lines) or starve it of descriptors, and raw-socket helpers to talk to it."""

from __future__ import annotations

import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from kclient.protocol.apis import API_VERSIONS
from kclient.protocol.framing import ClientProtocol
from kclient.testing import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]


class BrokerChild:
    """``python -m kclient.broker`` with ``config``, optionally under an open-files limit."""

    def __init__(self, workdir: Path, config: dict | None = None, nofile: int | None = None):
        self.workdir = workdir
        self.log_dir = workdir / "data"
        self.out = workdir / "broker.out"
        self.config = dict(config or {})
        self.nofile = nofile
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> BrokerChild:
        argv = [
            sys.executable,
            "-m",
            "kclient.broker",
            "--log-dir",
            str(self.log_dir),
            "--port",
            str(self.port),
        ]
        for key, value in self.config.items():
            argv += ["--config", f"{key}={value}"]
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        nofile = self.nofile

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        with open(self.out, "ab") as out:
            self.proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=ROOT,
                start_new_session=True,
                preexec_fn=limit,
            )
        wait_for_port(self.port, timeout=timeout, proc=self.proc)
        return self

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def rss(self) -> int:
        """Resident set size in bytes (from /proc)."""
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def open_fds(self) -> int:
        assert self.proc is not None
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def output(self) -> str:
        return self.out.read_text(errors="replace") if self.out.exists() else ""

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM (a clean shutdown); returns the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def connect(bootstrap: str, timeout: float = 10.0) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)


def api_versions(sock: socket.socket, timeout: float = 10.0) -> int:
    """One ApiVersions v0 round trip on a raw socket; returns its error code."""
    proto = ClientProtocol("limits-test")
    _, frame = proto.send_request(API_VERSIONS, 0, {})
    sock.settimeout(timeout)
    sock.sendall(frame)
    while True:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("broker closed the connection")
        got = proto.receive_bytes(data)
        if got:
            return got[0][1].error_code


def closed_by_peer(sock: socket.socket, timeout: float) -> bool:
    """True if the peer closes ``sock`` (EOF or reset) within ``timeout`` seconds."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def announce(sock: socket.socket, size: int) -> None:
    """Send a request size prefix (and nothing else yet)."""
    sock.sendall(struct.pack(">i", size))


def push(socks: list[socket.socket], nbytes: int, deadline: float) -> int:
    """Send up to ``nbytes`` to each socket without blocking past ``deadline``; returns the
    bytes the kernel took in total."""
    chunk = b"\0" * 65536
    left = dict.fromkeys(socks, nbytes)
    for s in socks:
        s.setblocking(False)
    sent = 0
    while left and time.monotonic() < deadline:
        progress = False
        for s in list(left):
            try:
                n = s.send(chunk[: min(len(chunk), left[s])])
            except (BlockingIOError, InterruptedError):
                continue
            sent += n
            progress = True
            left[s] -= n
            if left[s] <= 0:
                del left[s]
        if not progress:
            time.sleep(0.02)
    return sent


def wait_until(predicate, timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate`` until true or ``timeout`` passes; returns its last value."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= end:
            return bool(value)
        time.sleep(interval)
