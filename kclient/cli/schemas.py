"""``kclient schemas list|get|register|compat|delete|config``: a Schema Registry from the
command line (``-r URL`` or ``KCLIENT_SCHEMA_REGISTRY``)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from .common import FAILED, OK, UsageError, print_table, subcommand
from .registry import registry_client, schema_text

__all__ = ["register"]


def _schema(args: argparse.Namespace) -> Any:
    """The Schema of ``SCHEMA`` (text or @FILE), ``--type`` and ``--reference``s."""
    from kclient.schema_registry import Schema, SchemaReference

    refs = []
    for item in args.reference:
        name, _, rest = item.partition("=")
        subject, _, version = rest.rpartition(":")
        if not (name and subject and version.isdigit()):
            raise UsageError(f"--reference {item!r}: expected NAME=SUBJECT:VERSION")
        refs.append(SchemaReference(name, subject, int(version)))
    text = schema_text(args.schema)
    assert text is not None
    return Schema(text, args.type, tuple(refs))


def _list(args: argparse.Namespace, sr: Any) -> int:
    rows = []
    for subject in sr.get_subjects(args.prefix, args.deleted):
        latest = sr.get_version(subject, "latest", args.deleted)
        rows.append(
            (
                subject,
                len(sr.get_versions(subject, args.deleted)),
                latest.version,
                latest.schema_id,
                latest.schema.schema_type,
            )
        )
    print_table(("SUBJECT", "VERSIONS", "LATEST", "ID", "TYPE"), rows)
    return OK


def _get(args: argparse.Namespace, sr: Any) -> int:
    if args.id is not None:
        schema = sr.get_schema(args.id)
        answer = {"id": args.id}
    elif args.subject:
        found = sr.get_version(args.subject, args.version, args.deleted)
        schema, answer = (
            found.schema,
            {"subject": found.subject, "version": found.version, "id": found.schema_id},
        )
    else:
        raise UsageError("give a SUBJECT or --id")
    answer.update(schemaType=schema.schema_type, schema=_pretty(schema.schema_str))
    if schema.references:
        answer["references"] = [r.to_dict() for r in schema.references]
    print(json.dumps(answer, indent=2, ensure_ascii=False))
    return OK


def _pretty(text: str) -> Any:
    """A JSON schema as an object (printed indented); other text as it is."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _register(args: argparse.Namespace, sr: Any) -> int:
    found = sr.register_schema_full_response(args.subject, _schema(args), args.normalize)
    print(found.schema_id)
    return OK


def _compat(args: argparse.Namespace, sr: Any) -> int:
    schema = _schema(args)
    if args.version is None:
        answer = sr.test_compatibility_all_versions(args.subject, schema, verbose=True)
    else:
        answer = sr.test_compatibility(args.subject, schema, args.version, verbose=True)
    print("compatible" if answer["is_compatible"] else "incompatible")
    for message in answer.get("messages") or []:
        print(f"  {message}")
    return OK if answer["is_compatible"] else FAILED


def _delete(args: argparse.Namespace, sr: Any) -> int:
    if args.version is not None:
        print(sr.delete_version(args.subject, args.version, args.permanent))
    else:
        print(" ".join(map(str, sr.delete_subject(args.subject, args.permanent))))
    return OK


def _config(args: argparse.Namespace, sr: Any) -> int:
    if args.set:
        print(sr.set_compatibility(args.subject, args.set))
    else:
        print(sr.get_compatibility(args.subject, default_to_global=args.subject is not None))
    return OK


ACTIONS = {
    "list": _list,
    "get": _get,
    "register": _register,
    "compat": _compat,
    "delete": _delete,
    "config": _config,
}


def _run(args: argparse.Namespace) -> int:
    with registry_client(args) as sr:
        return ACTIONS[args.action](args, sr)


def _schema_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("subject")
    p.add_argument("schema", metavar="SCHEMA", help="the schema text, or @FILE")
    p.add_argument("--type", default="AVRO", choices=("AVRO", "JSON", "PROTOBUF"))
    p.add_argument(
        "--reference",
        action="append",
        default=[],
        metavar="NAME=SUBJECT:VERSION",
        help="a schema this one imports (repeatable)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``schemas``."""
    p = subcommand(
        subparsers,
        "schemas",
        "list, show, register, test and delete schemas",
        "kclient schemas list -r http://127.0.0.1:8081\n"
        "kclient schemas register users-value @user.avsc\n"
        "kclient schemas compat users-value @user-v2.avsc   # exit 1: incompatible\n"
        "kclient schemas get users-value --version 1\n"
        "kclient schemas config users-value --set FULL",
    )
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument(
        "-r",
        "--schema-registry",
        metavar="URL",
        default=os.environ.get("KCLIENT_SCHEMA_REGISTRY"),
        help="Schema Registry URL (default: $KCLIENT_SCHEMA_REGISTRY)",
    )
    shared.add_argument(
        "--registry-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a registry client setting, e.g. basic.auth.user.info=u:p",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, help_: str, example: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(
            name,
            parents=[shared],
            help=help_,
            description=help_,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog=f"example:\n  kclient schemas {name} {example}",
        )
        return parser

    a = action("list", "subjects with their versions and latest id", "-r http://127.0.0.1:8081")
    a.add_argument("--prefix", default=None)
    a.add_argument("--deleted", action="store_true", help="soft-deleted subjects too")
    a = action("get", "a subject's version (default latest), or --id", "users-value --version 1")
    a.add_argument("subject", nargs="?")
    a.add_argument("--version", default="latest")
    a.add_argument("--id", type=int)
    a.add_argument("--deleted", action="store_true")
    a = action("register", "register a schema; prints its id", "users-value @user.avsc")
    _schema_args(a)
    a.add_argument("--normalize", action="store_true")
    a = action("compat", "is a schema compatible? (exit 1 when not)", "users-value @user2.avsc")
    _schema_args(a)
    a.add_argument(
        "--version", default=None, help="against this version (default: those the level names)"
    )
    a = action("delete", "soft-delete a subject or a version", "users-value --version 1")
    a.add_argument("subject")
    a.add_argument("--version")
    a.add_argument("--permanent", action="store_true", help="remove what was soft-deleted before")
    a = action("config", "show or --set the compatibility level", "users-value --set FULL")
    a.add_argument("subject", nargs="?")
    a.add_argument("--set", metavar="LEVEL")
    p.set_defaults(run=_run)
