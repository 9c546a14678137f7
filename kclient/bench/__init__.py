"""Microbenchmarks (run as modules, e.g. ``python -m kclient.bench.records``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import NamedTuple


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
