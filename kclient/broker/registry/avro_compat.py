"""Avro schema resolution (the Avro specification's "Schema Resolution" section) as a check:
can data written with one schema be read with another?

The registry's compatibility levels are built on this one question: BACKWARD asks whether the
new schema reads what the old one wrote, FORWARD the opposite, FULL both.  Schemas arrive as
fastavro's parsed form (names fully qualified, a named type defined once and then referred to
by its name); this module walks two of them side by side and lists every place where reading
would fail, so the registry can say why (``verbose=true``).
"""

from __future__ import annotations

from typing import Any

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
#: writer type -> reader types it is promoted to (the spec's promotion list)
PROMOTIONS = {
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
    "string": {"bytes"},
    "bytes": {"string"},
}
NAMED = frozenset({"record", "error", "enum", "fixed"})


def _names(schema: Any, table: dict[str, Any]) -> dict[str, Any]:
    """Every named type defined in ``schema``, full name -> definition."""
    if isinstance(schema, list):
        for branch in schema:
            _names(branch, table)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in NAMED and "name" in schema:
            table.setdefault(schema["name"], schema)
        if kind in ("record", "error"):
            for field in schema.get("fields", []):
                _names(field["type"], table)
        elif kind == "array":
            _names(schema["items"], table)
        elif kind == "map":
            _names(schema["values"], table)
        elif isinstance(kind, (dict, list)):
            _names(kind, table)
    return table


class _Resolver:
    """One (writer, reader) comparison: the name tables of both and the pairs in progress."""

    def __init__(self, writer: Any, reader: Any) -> None:
        self.writer_names = _names(writer, {})
        self.reader_names = _names(reader, {})
        self.seen: set[tuple[str, str]] = set()
        self.problems: list[str] = []

    def _deref(self, schema: Any, table: dict[str, Any]) -> Any:
        """A named reference replaced by its definition; ``{"type": "int"}`` by ``"int"``."""
        if isinstance(schema, str) and schema not in PRIMITIVES:
            return table.get(schema, schema)
        if (
            isinstance(schema, dict)
            and isinstance(schema.get("type"), str)
            and schema["type"] in PRIMITIVES
        ):
            return schema["type"]
        if isinstance(schema, dict) and isinstance(schema.get("type"), (dict, list)):
            return self._deref(schema["type"], table)
        return schema

    def check(self, writer: Any, reader: Any, path: str) -> bool:
        """True if ``reader`` reads what ``writer`` wrote; else the reasons are recorded."""
        writer = self._deref(writer, self.writer_names)
        reader = self._deref(reader, self.reader_names)
        if isinstance(writer, list):
            ok = True
            for i, branch in enumerate(writer):
                ok = self.check(branch, reader, f"{path}/{i}") and ok
            return ok
        if isinstance(reader, list):
            for branch in reader:
                if self._matches(writer, self._deref(branch, self.reader_names)):
                    return self.check(writer, branch, path)
            return self._fail(path, f"reader union lacks writer type {_kind(writer)}")
        return self._same_kind(writer, reader, path)

    def _matches(self, writer: Any, reader: Any) -> bool:
        """The spec's branch selection: same kind (and name for named types), or a promotion."""
        wk, rk = _kind(writer), _kind(reader)
        if wk in NAMED or rk in NAMED:
            return (
                wk == rk
                and _short(writer["name"]) == _short(reader["name"])
                or (wk == rk and _aliased(writer, reader))
            )
        return wk == rk or rk in PROMOTIONS.get(wk, ())

    def _same_kind(self, writer: Any, reader: Any, path: str) -> bool:
        """Both non-union: compare kinds, then the insides of complex types."""
        wk, rk = _kind(writer), _kind(reader)
        if wk != rk:
            if rk in PROMOTIONS.get(wk, ()):
                return True
            return self._fail(path, f"reader type {rk} does not match writer type {wk}")
        if wk in PRIMITIVES:
            return True
        if wk == "array":
            return self.check(writer["items"], reader["items"], f"{path}/items")
        if wk == "map":
            return self.check(writer["values"], reader["values"], f"{path}/values")
        if not (_short(writer["name"]) == _short(reader["name"]) or _aliased(writer, reader)):
            return self._fail(
                path, f"reader name {reader['name']} does not match writer name {writer['name']}"
            )
        key = (writer["name"], reader["name"])
        if key in self.seen:
            return True
        self.seen.add(key)
        if wk == "fixed":
            if writer["size"] != reader["size"]:
                return self._fail(path, f"fixed size {writer['size']} read as {reader['size']}")
            return True
        if wk == "enum":
            return self._enum(writer, reader, path)
        return self._record(writer, reader, path)

    def _enum(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> bool:
        """Every writer symbol is a reader symbol, unless the reader has a default."""
        missing = [s for s in writer["symbols"] if s not in reader["symbols"]]
        if missing and reader.get("default") is None:
            return self._fail(f"{path}/symbols", f"reader lacks symbols {missing}")
        return True

    def _record(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> bool:
        """Each reader field is in the writer (by name or alias) or has a default."""
        written = {f["name"]: f for f in writer.get("fields", [])}
        ok = True
        for field in reader.get("fields", []):
            source = written.get(field["name"])
            if source is None:
                source = next((written[a] for a in field.get("aliases", []) if a in written), None)
            where = f"{path}/fields/{field['name']}"
            if source is None:
                if "default" not in field:
                    ok = self._fail(
                        where,
                        f"reader field {field['name']} has no default and "
                        "is missing from the writer",
                    )
                continue
            ok = self.check(source["type"], field["type"], where) and ok
        return ok

    def _fail(self, path: str, reason: str) -> bool:
        """Record one problem; always False."""
        self.problems.append(f"{path or '/'}: {reason}")
        return False


def _kind(schema: Any) -> str:
    """ "int", "record", "array", ... of a dereferenced non-union schema."""
    if isinstance(schema, str):
        return schema
    return str(schema.get("type"))


def _short(name: str) -> str:
    """A full name's last part (the spec compares unqualified names)."""
    return name.rpartition(".")[2]


def _aliased(writer: dict[str, Any], reader: dict[str, Any]) -> bool:
    """The reader names the writer's type among its aliases."""
    aliases = reader.get("aliases") or []
    return writer["name"] in aliases or _short(writer["name"]) in {_short(a) for a in aliases}


def reading_problems(writer: Any, reader: Any) -> list[str]:
    """Why ``reader`` cannot read data written with ``writer`` (parsed schemas); [] if it can."""
    resolver = _Resolver(writer, reader)
    resolver.check(writer, reader, "")
    return resolver.problems


__all__ = ["reading_problems"]
