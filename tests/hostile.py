"""A malicious broker for client tests: :class:`kclient.testing.hostile.HostileBroker` (a
loopback proxy that answers chosen APIs badly) in front of a real MiniBroker.

The broker must advertise the proxy's address so that every connection a client opens after
bootstrapping (leaders, coordinators) goes through it: see :func:`hostile_pair`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

from kclient.testing import free_port
from kclient.testing.hostile import MODES, HostileBroker

__all__ = ["HostileBroker", "MODES", "hostile_pair", "elapsed"]


@contextlib.contextmanager
def hostile_pair(log_dir: Path, **broker_config: object) -> Iterator[tuple[HostileBroker, object]]:
    """A MiniBroker advertising a HostileBroker's address, and that HostileBroker (passing)."""
    from kclient.broker import MiniBroker

    port = free_port()
    config = {
        "advertised.host.name": "127.0.0.1",
        "advertised.port": port,
        "group.initial.rebalance.delay.ms": 0,
        **broker_config,
    }
    with MiniBroker(log_dir=log_dir, config=config) as broker:
        with HostileBroker(("127.0.0.1", broker.port), port=port) as hostile:
            yield hostile, broker


def elapsed(start: float) -> float:
    return time.monotonic() - start
