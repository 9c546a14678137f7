"""Clients cached per Python worker process, reused across tasks and queries.

Spark reuses its Python workers (``spark.python.worker.reuse``, the default), and this module is
imported from the installed package, so these module-level caches live as long as the worker:
a task finds the connection the previous task opened.  A worker runs one task at a time.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from kclient.producer import Producer
from kclient.simple import SimpleConsumer

__all__ = ["consumer", "producer", "drop_consumer", "close_all"]

_lock = threading.Lock()
_consumers: dict[tuple[Any, ...], SimpleConsumer] = {}
_producers: dict[tuple[Any, ...], Producer] = {}
_pid = os.getpid()


def _check_fork() -> None:
    """A forked child must not share its parent's sockets: start with empty caches."""
    global _pid
    if os.getpid() != _pid:
        _consumers.clear()
        _producers.clear()
        _pid = os.getpid()


def _key(leader: str, kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The cache key of a consumer (the ``security`` dict as its sorted items)."""
    return (
        leader,
        tuple(
            sorted(
                (k, tuple(sorted(v.items())) if isinstance(v, dict) else v)
                for k, v in kwargs.items()
            )
        ),
    )


def consumer(leader: str, kwargs: dict[str, Any]) -> SimpleConsumer:
    """The cached SimpleConsumer for broker ``leader`` ("host:port") and these settings."""
    key = _key(leader, kwargs)
    with _lock:
        _check_fork()
        c = _consumers.get(key)
        if c is None:
            host, port = leader.rsplit(":", 1)
            settings = {"client_id": "kclient-spark", "buffer_size": None, **kwargs}
            c = _consumers[key] = SimpleConsumer(host, int(port), **settings)
        return c


def drop_consumer(leader: str, kwargs: dict[str, Any]) -> None:
    """Close and forget a cached consumer (after it failed)."""
    key = _key(leader, kwargs)
    with _lock:
        c = _consumers.pop(key, None)
    if c is not None:
        c.close()


def producer(config: dict[str, Any]) -> Producer:
    """The cached async Producer for ``config`` (one per worker and config)."""
    key = tuple(sorted(config.items()))
    with _lock:
        _check_fork()
        p = _producers.get(key)
        if p is None or p.closed:
            p = _producers[key] = Producer(config)
        return p


def close_all() -> None:
    """Close every cached client (at worker exit; tests)."""
    with _lock:
        consumers, producers = list(_consumers.values()), list(_producers.values())
        _consumers.clear()
        _producers.clear()
    for c in consumers:
        c.close()
    for p in producers:
        try:
            p.close(timeout=30)
        except Exception:  # noqa: BLE001 - exit path: nothing left to report to
            pass


atexit.register(close_all)
