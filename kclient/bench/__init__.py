"""Microbenchmarks (run as modules, e.g. ``python -m kclient.bench.records``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import NamedTuple

#: the C extension modules kclient loads when they are built (kclient.protocol.speedups)
SPEEDUPS = ("kclient.producer._speedups", "kclient.protocol.records._walk", "kclient.io._sock")


def speedups_note() -> str:
    """Which C speed-ups this process loaded, for a benchmark's footer: a run of the Python
    fallbacks (a checkout never built, or built before its sources changed) says so."""
    from kclient.protocol.speedups import load_speedup, pure_python

    missing = [name.rsplit(".", 1)[1] for name in SPEEDUPS if load_speedup(name) is None]
    if not missing:
        return "C speed-ups built"
    why = (
        "KCLIENT_PURE_PYTHON=1"
        if pure_python()
        else "not built, or older than their sources: python setup.py build_ext --inplace"
    )
    return f"C speed-ups MISSING: {', '.join(missing)} ({why})"


class BrokerProcess(NamedTuple):
    """A broker running in a child process: where to connect and which process it is."""

    bootstrap: str
    pid: int


@contextmanager
def mini_broker_process(config: Mapping[str, str] | None = None) -> Iterator[BrokerProcess]:
    """The mini-broker in its own process (see :class:`kclient.testing.MiniBrokerProcess`)."""
    from kclient.testing import MiniBrokerProcess

    with MiniBrokerProcess(dict(config or {})) as broker:
        yield BrokerProcess(broker.bootstrap, broker.pid)
