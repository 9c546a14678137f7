"""Microbenchmarks (run as modules, e.g. ``python -m kclient.bench.records``)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Mapping, NamedTuple, Optional


class BrokerProcess(NamedTuple):
    """A broker running in a child process: where to connect and which process it is."""

    bootstrap: str
    pid: int


@contextmanager
def mini_broker_process(config: Optional[Mapping[str, str]] = None) -> Iterator[BrokerProcess]:
    """``python -m kclient.broker`` in its own process (own GIL), on a free port, in a temporary
    log directory; stopped with SIGTERM and its directory removed on exit."""
    import subprocess
    import sys
    import tempfile

    from kclient.testing import free_port, wait_for_port
    with tempfile.TemporaryDirectory(prefix="kclient-bench-") as log_dir:
        port = free_port()
        argv = [sys.executable, "-m", "kclient.broker", "--log-dir", log_dir, "--port", str(port)]
        for key, value in (config or {}).items():
            argv += ["--config", f"{key}={value}"]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_port(port, proc=proc)
            yield BrokerProcess(f"127.0.0.1:{port}", proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
