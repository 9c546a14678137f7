"""``--key-format`` / ``--value-format`` (avro, json-schema, protobuf) and ``--schema-registry``
for ``kclient produce`` and ``consume``, as kcat's ``-s value=avro -r URL``: produced lines are
JSON turned into registry-encoded values; consumed ones are printed as JSON."""

from __future__ import annotations

import argparse
import base64
import json
import os
from collections.abc import Callable
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any
from uuid import UUID

from .common import UsageError

__all__ = ["add_registry_options", "registry_client", "decoders", "encoders"]

FORMATS = ("avro", "json-schema", "protobuf")
Convert = Callable[[bytes | None, str, list[tuple[str, bytes | None]]], bytes | None]


def add_registry_options(parser: argparse.ArgumentParser, produce: bool) -> None:
    """The registry flags of produce (schemas to write with) or consume."""
    group = parser.add_argument_group("schema registry")
    group.add_argument(
        "-r",
        "--schema-registry",
        metavar="URL",
        default=os.environ.get("KCLIENT_SCHEMA_REGISTRY"),
        help="Schema Registry URL (default: $KCLIENT_SCHEMA_REGISTRY)",
    )
    group.add_argument(
        "--registry-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a registry client setting, e.g. basic.auth.user.info=u:p",
    )
    for part in ("key", "value"):
        group.add_argument(
            f"--{part}-format",
            choices=FORMATS,
            help=f"the {part} is registry-encoded "
            + ("(input lines give it as JSON)" if produce else "(printed as JSON)"),
        )
        if produce:
            group.add_argument(
                f"--{part}-schema",
                metavar="TEXT|@FILE",
                help=f"{part} schema (Avro or JSON Schema); default: the subject's latest version",
            )
            group.add_argument(
                f"--{part}-schema-id",
                type=int,
                metavar="ID",
                help=f"write the {part} with this registered schema id",
            )
            group.add_argument(
                f"--{part}-message",
                metavar="NAME",
                help=f"protobuf: the {part}'s message type (default: first)",
            )


def registry_client(args: argparse.Namespace) -> Any:
    """The SchemaRegistryClient the flags describe."""
    if not args.schema_registry:
        raise UsageError(
            "a registry format needs --schema-registry URL (or KCLIENT_SCHEMA_REGISTRY)"
        )
    from kclient.schema_registry import SchemaRegistryClient

    conf: dict[str, Any] = {"url": args.schema_registry}
    for item in args.registry_config:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--registry-config {item!r}: expected KEY=VALUE")
        conf[key.strip()] = value
    try:
        return SchemaRegistryClient(conf)
    except (ValueError, ImportError) as exc:
        raise UsageError(str(exc)) from None


def schema_text(spec: str | None) -> str | None:
    """A schema given inline or as @FILE."""
    if spec is None or not spec.startswith("@"):
        return spec
    try:
        with open(spec[1:], encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"cannot read schema file {spec[1:]}: {exc.strerror}") from None


def _context(topic: str, part: str, headers: list[tuple[str, bytes | None]]) -> Any:
    from kclient.schema_registry import SerializationContext

    return SerializationContext(topic, part, headers)


def encoders(args: argparse.Namespace, client: Any) -> dict[str, Convert]:
    """Per part ("key", "value") with a format: JSON bytes in, registry-encoded bytes out."""
    from kclient.schema_registry.generic import serializer_for

    out: dict[str, Convert] = {}
    for part in ("key", "value"):
        fmt = getattr(args, f"{part}_format")
        if fmt is None:
            continue
        conf = {"use.schema.id": getattr(args, f"{part}_schema_id")}
        try:
            ser = serializer_for(
                fmt,
                client,
                schema_text(getattr(args, f"{part}_schema")),
                conf if conf["use.schema.id"] is not None else {},
                getattr(args, f"{part}_message"),
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None

        def convert(
            data: bytes | None,
            topic: str,
            headers: list[tuple[str, bytes | None]],
            ser: Any = ser,
            part: str = part,
        ) -> bytes | None:
            if data is None:
                return None
            try:
                obj = json.loads(data)
            except ValueError as exc:
                raise ValueError(f"the {part} is not JSON: {exc}") from None
            return ser(obj, _context(topic, part, headers))

        out[part] = convert
    return out


def _plain(value: Any) -> Any:
    """JSON for what decoders give beyond JSON: bytes (base64), decimals, dates, UUIDs."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (Decimal, UUID)):
        return str(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def decoders(args: argparse.Namespace, client: Any) -> dict[str, Convert]:
    """Per part with a format: registry-encoded bytes in, compact JSON bytes out."""
    from kclient.schema_registry.generic import AnyDeserializer

    out: dict[str, Convert] = {}
    for part in ("key", "value"):
        if getattr(args, f"{part}_format") is None:
            continue
        de = AnyDeserializer(client)

        def convert(
            data: bytes | None,
            topic: str,
            headers: list[tuple[str, bytes | None]],
            de: Any = de,
            part: str = part,
        ) -> bytes | None:
            if data is None:
                return None
            value = de(data, _context(topic, part, headers))
            return json.dumps(
                value, separators=(",", ":"), ensure_ascii=False, default=_plain
            ).encode()

        out[part] = convert
    return out
