"""A Spark standalone cluster on 127.0.0.1 for tests: a master and workers started from the PySpark
package (``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), whose
executors run a venv where kclient is installed from a built wheel, as on a real cluster.

The venv and the wheel are cached under ``~/.cache/kclient/spark-venv/<hash of the sources>``:
built once per source version.  The venv holds the wheel (kclient and ``pyspark_kclient``); its
third-party dependencies (pyspark, pyarrow, crc32c, ...) come from the interpreter that built it,
through a path entry after the venv's own site-packages, so no package index is needed.  Drivers
run as separate processes (:meth:`SparkCluster.run_driver`), as ``spark-submit`` would start them:
one SparkContext per process.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["SparkCluster", "SparkConnectServer", "cluster_venv", "source_root"]

_MASTER = "org.apache.spark.deploy.master.Master"
_WORKER = "org.apache.spark.deploy.worker.Worker"
_EXECUTOR = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def source_root() -> Path:
    """The checkout kclient is imported from (its pyproject.toml beside the package)."""
    import kclient

    root = Path(kclient.__file__).resolve().parent.parent
    if not (root / "pyproject.toml").exists():
        raise RuntimeError(f"kclient is not imported from a source checkout ({root})")
    return root


def _sources_hash(root: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(
        [
            *root.glob("kclient/**/*.py"),
            *root.glob("kclient/**/*.pyx"),
            root / "pyproject.toml",
            root / "setup.py",
            root / "pyspark_kclient.py",
        ]
    )
    for path in files:
        if "__pycache__" not in path.parts and path.exists():
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cache() -> Path:
    return Path(os.environ.get("KCLIENT_CACHE", Path.home() / ".cache" / "kclient"))


def cluster_venv(root: Path | None = None) -> Path:
    """The python of a venv with kclient installed from a wheel built from ``root`` (cached)."""
    root = root or source_root()
    base = _cache() / "spark-venv"
    venv = base / _sources_hash(root)
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python
    base.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(venv, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        wheels = Path(tmp) / "wheels"
        src = Path(tmp) / "src"  # a clean copy: no in-place builds, no other worktree files
        shutil.copytree(
            root,
            src,
            ignore=shutil.ignore_patterns(
                ".git",
                ".venv",
                "build",
                "dist",
                "*.egg-info",
                "__pycache__",
                "*.so",
                "tests",
                "integration",
                "docs",
                ".mypy_cache",
                ".ruff_cache",
                ".pytest_cache",
                "*.c",
            ),
        )
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(wheels),
                str(src),
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
        wheel = next(wheels.glob("kclient-*.whl"))
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
        )
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                str(python),
                "install",
                "--no-deps",
                "--no-index",
                "-q",
                str(wheel),
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
        shutil.copy(wheel, venv / wheel.name)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    deps = sysconfig.get_paths()["purelib"]  # pyspark, pyarrow, ... of this interpreter
    Path(site, "zz_kclient_dependencies.pth").write_text(deps + "\n")
    (venv / ".complete").write_text("")
    return python


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class SparkCluster:
    """A master and ``workers`` workers (``cores`` each) on 127.0.0.1; a context manager."""

    def __init__(
        self,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        work_dir: str | Path | None = None,
        python: Path | None = None,
    ) -> None:
        import pyspark

        self.spark_home = Path(pyspark.__file__).resolve().parent
        self.workers, self.cores, self.memory = workers, cores, memory
        self._tmp = None if work_dir else tempfile.TemporaryDirectory(prefix="kclient-spark-")
        self.work_dir = Path(work_dir or self._tmp.name)  # type: ignore[union-attr]
        self.python = python or cluster_venv()
        self.master_url = ""
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[Path] = []

    def env(self) -> dict[str, str]:
        """The environment of the cluster's processes and of drivers."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYSPARK", "SPARK_")) and k != "PYTHONPATH"
        }
        env.update(
            {
                "SPARK_HOME": str(self.spark_home),
                "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_LOG_DIR": str(self.work_dir / "logs"),
                "PYSPARK_PYTHON": str(self.python),
                "PYSPARK_DRIVER_PYTHON": str(self.python),
            }
        )
        return env

    def _start(self, name: str, *args: str) -> Path:
        log = self.work_dir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(self.spark_home / "bin" / "spark-class"), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env(),
                cwd=self.work_dir,
                start_new_session=True,
            )
        self._procs.append(proc)
        self._logs.append(log)
        return log

    def start(self) -> SparkCluster:
        """Start the master, then the workers; return once every worker registered."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        port = _free_port()
        master_log = self._start(
            "master", _MASTER, "--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"
        )
        self.master_url = f"spark://127.0.0.1:{port}"
        for i in range(self.workers):
            self._start(
                f"worker-{i}",
                _WORKER,
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--webui-port",
                "0",
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--work-dir",
                str(self.work_dir / f"work-{i}"),
                self.master_url,
            )
        self._wait(
            lambda: (
                len(
                    re.findall(
                        r"Registering worker 127\.0\.0\.1", master_log.read_text(errors="replace")
                    )
                )
                >= self.workers
            ),
            120,
            f"{self.workers} workers registered with the master",
        )
        return self

    def _wait(self, ready: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [p for p in self._procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(
                    f"Spark cluster: no {what} "
                    f"({'a process exited' if dead else 'timed out'}):\n" + self.tails()
                )
            time.sleep(0.2)

    def tails(self, lines: int = 15) -> str:
        """The end of each process's log."""
        return "\n".join(
            f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
            for log in self._logs
            if log.exists()
        )

    def executor_pids(self) -> list[int]:
        """Pids of the running executor JVMs (children of the workers)."""
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes()
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if _EXECUTOR.encode() in cmd and cwd.startswith(str(self.work_dir)):
                out.append(int(entry.name))
        return out

    def run_driver(
        self, script: str | Path, *args: str, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """Run a driver program with the cluster's python (``sys.argv[1]`` is the master URL)."""
        return subprocess.run(
            [str(self.python), str(script), self.master_url, *args],
            env=self.env(),
            cwd=self.work_dir,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def stop(self) -> None:
        """Stop the workers (and their executors), then the master."""
        for proc in reversed(self._procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self._procs):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        for pid in self.executor_pids():  # an executor a killed worker left behind
            os.kill(pid, signal.SIGKILL)
        self._procs.clear()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> SparkCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SparkConnectServer:
    """PySpark's Spark Connect server (``sbin/start-connect-server.sh --wait``, in the foreground)
    on 127.0.0.1, its Python workers running the wheel venv; ``url`` is ``sc://127.0.0.1:PORT``."""

    def __init__(
        self, work_dir: str | Path, master: str = "local[2]", python: Path | None = None
    ) -> None:
        import pyspark

        self.spark_home = Path(pyspark.__file__).resolve().parent
        self.work_dir = Path(work_dir)
        self.master = master
        self.python = python or cluster_venv()
        self.port = 0
        self.url = ""
        self.log = self.work_dir / "connect-server.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYSPARK", "SPARK_")) and k != "PYTHONPATH"
        }
        env.update(
            {
                "SPARK_HOME": str(self.spark_home),
                "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_LOG_DIR": str(self.work_dir / "logs"),
                "SPARK_PID_DIR": str(self.work_dir),
                "PYSPARK_PYTHON": str(self.python),
                "PYSPARK_DRIVER_PYTHON": str(self.python),
            }
        )
        return env

    def start(self) -> SparkConnectServer:
        """Start the server; return once its gRPC port accepts connections."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.python.worker.reuse": "true",
            "spark.sql.session.timeZone": "UTC",
            "spark.task.maxFailures": "3",
        }
        args = [
            str(self.spark_home / "sbin" / "start-connect-server.sh"),
            "--wait",
            "--master",
            self.master,
        ]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        with open(self.log, "wb") as out:
            self._proc = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env(),
                cwd=self.work_dir,
                start_new_session=True,
            )
        deadline = time.monotonic() + 120
        while True:
            if self._proc.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])
                self.stop()
                raise RuntimeError(f"Spark Connect server did not start:\n{tail}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                break
            except OSError:
                time.sleep(0.3)
        self.url = f"sc://127.0.0.1:{self.port}"
        return self

    def run_client(
        self, script: str | Path, *args: str, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """Run a client program (``sys.argv[1]`` is the server's URL) with the venv's python."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYSPARK", "SPARK_")) and k != "PYTHONPATH"
        }
        return subprocess.run(
            [str(self.python), str(script), self.url, *args],
            env=env,
            cwd=self.work_dir,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGTERM)
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait(30)
        self._proc = None

    def __enter__(self) -> SparkConnectServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
