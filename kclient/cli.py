"""The ``kclient`` command: ``demo``, ``broker`` and ``bench`` subcommands."""
from __future__ import annotations

import importlib
import sys

USAGE = """usage: kclient <command> [args]

commands:
  demo                  start an embedded mini-broker, produce and consume through kclient
  broker [options]      run a mini-broker (kclient broker --help for its options)
  bench <name> [args]   run a benchmark: records, producer, consumer, broker, stream, spark
"""

BENCHMARKS = ("records", "producer", "consumer", "broker", "stream", "spark")


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a subcommand; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "demo":
        from kclient.demo import main as demo
        return demo(rest) or 0
    if command == "broker":
        from kclient.broker.server import main as broker
        return broker(rest) or 0
    if command == "bench":
        if not rest or rest[0] not in BENCHMARKS:
            print(f"kclient bench: name one of {', '.join(BENCHMARKS)}", file=sys.stderr)
            return 2
        module = importlib.import_module(f"kclient.bench.{rest[0]}")
        return module.main(rest[1:]) or 0
    print(f"kclient: unknown command {command!r}\n{USAGE}", end="", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
