"""Subcommands with their own parsers: ``broker``, ``demo`` and ``bench``."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from .common import subcommand

__all__ = ["register", "PASSTHROUGH", "BENCHMARKS"]

BENCHMARKS = (
    "records",
    "producer",
    "consumer",
    "broker",
    "stream",
    "spark",
    "soak",
    "charts",
    "aio",
    "serdes",
    "chaos",
    "latency",
    "share",
    "rebalance",
)


def _broker(rest: list[str]) -> int:
    """``kclient broker``: the mini-broker's own parser (``kclient broker --help``)."""
    from kclient.broker.server import main

    return main(rest, expose=_expose_broker) or 0


def _expose_broker(broker: Any, port: int, host: str) -> str:
    """``--prometheus-port``: the broker's metrics in the live registry, served."""
    from kclient.metrics import serve_prometheus, start_reporter

    start_reporter(0, None, broker.metrics)
    server = serve_prometheus(port, host)
    return f"http://{host}:{server.server_port}/metrics"


def _demo(rest: list[str]) -> int:
    """``kclient demo``: an embedded broker, produce and consume."""
    from kclient.demo import main

    return main(rest) or 0


#: commands handed their arguments untouched
PASSTHROUGH: dict[str, Callable[[list[str]], int]] = {"broker": _broker, "demo": _demo}


def _bench(args: argparse.Namespace) -> int:
    """Run one benchmark module's main with the remaining arguments."""
    module = importlib.import_module(f"kclient.bench.{args.name}")
    return int(module.main(args.rest) or 0)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add broker, demo (help only: main dispatches them) and bench."""
    subcommand(
        subparsers,
        "broker",
        "run a mini-broker (kclient broker --help for its flags)",
        "kclient broker --log-dir /tmp/kdata --port 9092",
    )
    subcommand(
        subparsers,
        "demo",
        "start an embedded mini-broker, produce and consume",
        "kclient demo --messages 1000",
    )
    p = subcommand(
        subparsers,
        "bench",
        "run a benchmark beside kafka-python and confluent-kafka",
        "kclient bench producer --broker mini --messages 100000\nkclient bench records --help",
    )
    p.add_argument("name", choices=BENCHMARKS, help="which benchmark")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="the benchmark's own arguments")
    p.set_defaults(run=_bench)
