"""The Confluent Schema Registry REST API over a :class:`SchemaStore`: (method, path, query,
body) in, (status, JSON answer) out, with no HTTP in it (http.py serves it)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from .store import TYPES, RegistryError, SchemaStore

Query = Mapping[str, str]
Route = Callable[[SchemaStore, list[str], Query, Any], Any]
ROUTES: list[tuple[str, re.Pattern[str], Route]] = []


def route(method: str, pattern: str) -> Callable[[Route], Route]:
    """Register a handler for ``method`` and a path pattern (``{}`` is one path segment)."""
    regex = re.compile("^" + pattern.replace("{}", "([^/]+)") + "/?$")

    def add(handler: Route) -> Route:
        ROUTES.append((method, regex, handler))
        return handler

    return add


def _flag(query: Query, name: str) -> bool:
    """A ``?name=true`` query flag."""
    return str(query.get(name, "false")).lower() == "true"


def _int(text: str, what: str = "schema id") -> int:
    """A path segment that must be a number (40403 otherwise, as an unknown id)."""
    try:
        return int(text)
    except ValueError:
        raise RegistryError(404, 40403, f"Schema {text} not found") from None


def handle(store: SchemaStore, method: str, path: str, query: Query, body: Any) -> tuple[int, Any]:
    """Answer one request: (HTTP status, JSON-able answer)."""
    parts = path.rstrip("/") or "/"
    allowed = False
    for verb, regex, handler in ROUTES:
        match = regex.match(parts)
        if match is None:
            continue
        allowed = True
        if verb != method:
            continue
        args = [unquote(g) for g in match.groups()]
        try:
            return 200, handler(store, args, query, body)
        except RegistryError as exc:
            return exc.status, {"error_code": exc.code, "message": exc.message}
    if allowed:
        return 405, {"error_code": 405, "message": f"HTTP {method} not allowed on {path}"}
    return 404, {"error_code": 404, "message": f"HTTP 404 Not Found: {path}"}


# ---------------------------------------------------------------------- schemas
@route("GET", "/")
def _root(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    return {}


@route("GET", "/schemas/types")
def _types(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    return list(TYPES)


@route("GET", "/contexts")
def _contexts(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    return ["."]


@route("GET", "/schemas")
def _all_schemas(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    deleted, latest = _flag(query, "deleted"), _flag(query, "latestOnly")
    out = []
    with store.lock:
        for subject in store.subject_names(query.get("subjectPrefix", ""), deleted):
            versions = store.versions(subject, deleted)
            out += [v.answer() for v in (versions[-1:] if latest else versions)]
    return out


@route("GET", "/schemas/ids/{}")
def _schema_by_id(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return store.schema(_int(args[0])).answer(with_subject=False)


@route("GET", "/schemas/ids/{}/schema")
def _raw_by_id(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return store.schema(_int(args[0])).schema


@route("GET", "/schemas/guids/{}")
def _schema_by_guid(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return store.by_guid_id(args[0]).answer(with_subject=False)


@route("GET", "/schemas/ids/{}/subjects")
def _id_subjects(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return sorted({v.subject for v in store.uses(_int(args[0]), _flag(query, "deleted"))})


@route("GET", "/schemas/ids/{}/versions")
def _id_versions(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return [
            {"subject": v.subject, "version": v.version}
            for v in store.uses(_int(args[0]), _flag(query, "deleted"))
        ]


# ---------------------------------------------------------------------- subjects
@route("GET", "/subjects")
def _subjects(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return store.subject_names(query.get("subjectPrefix", ""), _flag(query, "deleted"))


@route("POST", "/subjects/{}")
def _lookup(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return store.lookup(args[0], body, _flag(query, "deleted")).answer()


@route("DELETE", "/subjects/{}")
def _delete_subject(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    return store.delete_subject(args[0], _flag(query, "permanent"))


@route("GET", "/subjects/{}/versions")
def _versions(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return [v.version for v in store.versions(args[0], _flag(query, "deleted"))]


@route("POST", "/subjects/{}/versions")
def _register(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    entry = store.register(args[0], body)
    return {"id": entry.id, "guid": entry.guid, "version": entry.version, "subject": entry.subject}


@route("GET", "/subjects/{}/versions/{}")
def _version(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return store.version(args[0], args[1], _flag(query, "deleted")).answer()


@route("GET", "/subjects/{}/versions/{}/schema")
def _raw_version(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return store.version(args[0], args[1], _flag(query, "deleted")).schema


@route("DELETE", "/subjects/{}/versions/{}")
def _delete_version(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    return store.delete_version(args[0], args[1], _flag(query, "permanent"))


@route("GET", "/subjects/{}/versions/{}/referencedby")
def _referenced_by(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return store.referenced_by(args[0], args[1])


@route("GET", "/subjects/{}/metadata")
def _latest_with_metadata(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    """The latest version whose metadata properties hold every ``key=value`` asked for."""
    wanted = dict(zip(_list(query.get("key")), _list(query.get("value"))))
    with store.lock:
        for each in reversed(store.versions(args[0], _flag(query, "deleted"))):
            props = (each.metadata or {}).get("properties") or {}
            if all(props.get(k) == v for k, v in wanted.items()):
                return each.answer()
    raise RegistryError(404, 40403, f"Schema with metadata {wanted} not found")


def _list(value: Any) -> list[str]:
    """A repeated query parameter (http.py hands them over as lists)."""
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


# ---------------------------------------------------------------------- compatibility
@route("POST", "/compatibility/subjects/{}/versions/{}")
def _compatible_with(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        found = store.incompatibilities(args[0], store.candidate(args[0], body), args[1])
    return _verdict(found, query)


@route("POST", "/compatibility/subjects/{}/versions")
def _compatible_all(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        candidate = store.candidate(args[0], body)
        found = store.incompatibilities(args[0], candidate) if args[0] in store.subjects else []
    return _verdict(found, query)


def _verdict(found: list[str], query: Query) -> dict[str, Any]:
    """``{"is_compatible": ...}``, with the reasons when ``verbose=true``."""
    out: dict[str, Any] = {"is_compatible": not found}
    if _flag(query, "verbose"):
        out["messages"] = found
    return out


# ---------------------------------------------------------------------- config and mode
def _subject(args: list[str]) -> str | None:
    return args[0] if args else None


@route("GET", "/config")
@route("GET", "/config/{}")
def _get_config(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return {"compatibilityLevel": store.level(_subject(args), _flag(query, "defaultToGlobal"))}


@route("PUT", "/config")
@route("PUT", "/config/{}")
def _put_config(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    level = (body or {}).get("compatibility") or (body or {}).get("compatibilityLevel")
    return {"compatibility": store.set_level(_subject(args), level)}


@route("DELETE", "/config")
@route("DELETE", "/config/{}")
def _delete_config(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    return {"compatibilityLevel": store.clear_level(_subject(args))}


@route("GET", "/mode")
@route("GET", "/mode/{}")
def _get_mode(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    with store.lock:
        return {"mode": store.mode(_subject(args), _flag(query, "defaultToGlobal") or not args)}


@route("PUT", "/mode")
@route("PUT", "/mode/{}")
def _put_mode(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    return {"mode": store.set_mode(_subject(args), (body or {}).get("mode"), _flag(query, "force"))}


@route("DELETE", "/mode/{}")
def _delete_mode(store: SchemaStore, args: list[str], query: Query, body: Any) -> Any:
    return {"mode": store.clear_mode(args[0])}


__all__ = ["handle"]
