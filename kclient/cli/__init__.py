"""The ``kclient`` command: one module per subcommand, exit codes 0 ok, 1 failure, 2 usage."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import Any

from .common import FAILED, OK, USAGE, CommandError, UsageError

__all__ = ["main", "build_parser"]

#: subcommand modules of this package, in the order ``kclient --help`` lists them
MODULES = (
    "topics",
    "groups",
    "share_groups",
    "offsets",
    "produce",
    "consume",
    "dump_log",
    "perf",
    "acls",
    "schemas",
    "passthrough",
)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand registered."""
    from kclient import __version__

    parser = argparse.ArgumentParser(
        prog="kclient",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Kafka from the command line: topics, groups, offsets, console produce "
        "and consume, log dumps, performance tests and a mini-broker.",
        epilog="example:\n  kclient topics list -b 127.0.0.1:9092\n"
        "  export KCLIENT_BOOTSTRAP=127.0.0.1:9092; kclient groups describe g1",
    )
    parser.add_argument("--version", action="version", version=f"kclient {__version__}")
    parser.add_argument(
        "-b",
        "--bootstrap",
        "--bootstrap-server",
        dest="global_bootstrap",
        metavar="HOST:PORT[,...]",
        help="brokers for every command (default: $KCLIENT_BOOTSTRAP)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in MODULES:
        importlib.import_module(f"kclient.cli.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the subcommand; returns the process exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    from .passthrough import PASSTHROUGH

    if args_list and args_list[0] in PASSTHROUGH:
        try:
            return PASSTHROUGH[args_list[0]](args_list[1:])
        except SystemExit as exc:  # their own parsers: --help, usage errors
            return exc.code if isinstance(exc.code, int) else FAILED
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(args_list)
        if unknown:  # the command's own usage, not the top level's
            _command_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exc:  # --help, --version, or an argparse usage error
        return int(exc.code or 0)
    run: Callable[[argparse.Namespace], int | None] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr if args_list else sys.stdout)
        return USAGE
    return _run(" ".join(filter(None, (args.command, getattr(args, "action", None)))), run, args)


def _command_parser(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` ran: ``kclient topics list``'s, say."""
    for name in ("command", "action"):
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, name, None)
        if not actions or chosen is None or chosen not in actions[0].choices:
            break
        parser = actions[0].choices[chosen]
    return parser


def _run(command: str, run: Callable[[argparse.Namespace], Any], args: argparse.Namespace) -> int:
    """Run one subcommand, turning its errors into one line on stderr and an exit code."""
    from kclient.errors import InvalidConfigError

    try:
        return int(run(args) or OK)
    except (UsageError, InvalidConfigError) as exc:  # bad flags, -X keys or their files
        print(f"kclient {command}: {exc}", file=sys.stderr)
        return USAGE
    except CommandError as exc:  # a failure the command words itself
        print(f"kclient {command}: {exc}", file=sys.stderr)
        return FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `kclient consume ... | head`
        sys.stderr.close()
        return OK
    except Exception as exc:  # noqa: BLE001 - a broker's error, a refused connection, a bad file
        name = type(exc).__name__
        print(f"kclient {command}: {name}: {exc}", file=sys.stderr)
        return FAILED


if __name__ == "__main__":
    sys.exit(main())
