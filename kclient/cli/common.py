"""What every ``kclient`` subcommand shares: connection and security options, the config they
build, exit codes, and rich tables on stdout."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kclient.config import Config, load_config
from kclient.errors import InvalidConfigError

if TYPE_CHECKING:
    from kclient.admin import AdminClient

__all__ = [
    "OK",
    "FAILED",
    "USAGE",
    "UsageError",
    "CommandError",
    "add_connection_options",
    "client_config",
    "admin_client",
    "print_table",
    "subcommand",
    "bootstrap_of",
    "parse_time",
    "add_topic_argument",
    "topic_of",
]

#: exit codes, by the usual convention: success, a runtime failure, a usage error
OK, FAILED, USAGE = 0, 1, 2


class UsageError(Exception):
    """Arguments that parse but do not make sense together (exit code 2)."""


class CommandError(Exception):
    """A failure the command explains in its own words (exit code 1, no exception name)."""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keep the examples of an epilog as written, show defaults."""


def subcommand(
    subparsers: Any, name: str, help_: str, example: str, description: str | None = None
) -> argparse.ArgumentParser:
    """A subcommand parser whose ``--help`` ends with an example."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help_,
        description=description or help_,
        formatter_class=_Formatter,
        epilog="example:\n" + "\n".join(f"  {line}" for line in example.strip().splitlines()),
    )
    return parser


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """--bootstrap (env KCLIENT_BOOTSTRAP), the security options and -X key=value."""
    group = parser.add_argument_group("connection")
    group.add_argument(
        "-b",
        "--bootstrap",
        "--bootstrap-server",
        metavar="HOST:PORT[,...]",
        help="brokers to bootstrap from (also before the command: kclient -b "
        "HOST:PORT topics list; default: $KCLIENT_BOOTSTRAP)",
    )
    group.add_argument(
        "--security-protocol", metavar="P", help="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"
    )
    group.add_argument(
        "--sasl-mechanism", metavar="M", help="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
    )
    group.add_argument("--sasl-username", metavar="USER")
    group.add_argument("--sasl-password", metavar="PASSWORD")
    group.add_argument("--ssl-cafile", metavar="PEM", help="CA certificates to trust")
    group.add_argument(
        "-X",
        dest="extra",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any kclient config key, as kcat's -X (repeatable)",
    )


_FLAGS = {
    "security_protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanism",
    "sasl_username": "sasl.username",
    "sasl_password": "sasl.password",
    "ssl_cafile": "ssl.ca.location",
}


def bootstrap_of(args: argparse.Namespace) -> str:
    """The bootstrap list: the command's -b, then the global -b (before the command), then
    -X bootstrap.servers, then $KCLIENT_BOOTSTRAP; else a usage error naming the ways."""
    extra = _extra_pairs(args.extra)
    boot = (
        args.bootstrap
        or getattr(args, "global_bootstrap", None)
        or extra.get("bootstrap.servers")
        or extra.get("metadata.broker.list")
        or os.environ.get("KCLIENT_BOOTSTRAP")
    )
    if not boot:
        raise UsageError(
            "no brokers: give -b / --bootstrap-server HOST:PORT or set KCLIENT_BOOTSTRAP"
        )
    return str(boot)


def add_topic_argument(parser: argparse.ArgumentParser) -> None:
    """TOPIC as a positional argument or kcat's / Kafka's ``-t`` / ``--topic``."""
    parser.add_argument("topic", nargs="?", help="the topic (or -t TOPIC)")
    parser.add_argument(
        "-t",
        "--topic",
        dest="topic_flag",
        metavar="TOPIC",
        help="the topic, as kcat and Kafka's console tools take it",
    )


def topic_of(args: argparse.Namespace) -> str:
    """The topic given positionally or with -t; a usage error when neither or two differ."""
    given = [t for t in (args.topic, args.topic_flag) if t]
    if not given:
        raise UsageError("no topic: give TOPIC or -t TOPIC")
    if len(set(given)) > 1:
        raise UsageError(f"two topics given: {given[0]!r} and -t {given[1]!r}")
    return given[0]


def _extra_pairs(items: Sequence[str]) -> dict[str, str]:
    """-X key=value pairs as a dict."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"-X {item!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def client_settings(args: argparse.Namespace, **defaults: Any) -> dict[str, Any]:
    """The config keys the flags give, not validated yet: ``defaults`` < -X < named flags."""
    given: dict[str, Any] = dict(defaults)
    extra = _extra_pairs(args.extra)
    extra.pop("bootstrap.servers", None)
    given.update(extra)
    given.update(
        {
            key: getattr(args, flag)
            for flag, key in _FLAGS.items()
            if getattr(args, flag, None) is not None
        }
    )
    given["metadata.broker.list"] = bootstrap_of(args)
    return given


def client_config(args: argparse.Namespace, role: str = "consumer", **defaults: Any) -> Config:
    """The validated config of ``role`` from the flags: ``defaults`` < -X < named flags."""
    given = client_settings(args, **defaults)
    try:
        return load_config(role, given)
    except InvalidConfigError as exc:
        raise UsageError(str(exc)) from None


def admin_client(args: argparse.Namespace, zookeeper: str | None = None) -> AdminClient:
    """An AdminClient for the flags' brokers and security settings."""
    from kclient.admin import AdminClient
    from kclient.connection import ConnectionSettings

    cfg = client_config(args)
    settings = ConnectionSettings.from_config(cfg, client_id=cfg["client.id"] or "kclient-cli")
    return AdminClient(bootstrap_of(args), settings=settings, zookeeper_connect=zookeeper)


def print_table(
    columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None
) -> None:
    """A table on stdout, drawn by rich (plain columns when stdout is not a terminal)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    plain = not sys.stdout.isatty()
    if title:
        print(title)
    table = Table(
        box=None if plain else box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        header_style="bold" if not plain else "",
    )
    for col in columns:
        table.add_column(col, no_wrap=True)
    for row in rows:
        table.add_row(*("-" if v is None else str(v) for v in row))
    if not plain:
        Console().print(table)
        return
    console = Console(width=1000, no_color=True)
    with console.capture() as captured:
        console.print(table)
    for line in captured.get().splitlines():
        print(line.rstrip())


def parse_time(text: str) -> int:
    """Milliseconds since the epoch from digits or an ISO-8601 date-time (UTC when no zone)."""
    from datetime import datetime, timezone

    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{text!r} is neither milliseconds nor an ISO-8601 date-time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp() * 1000)
