"""Declarative API schemas: one definition per API, a version range on each field.

An :class:`Api` lists request and response :class:`Field` s; encode/decode for any
supported version are compiled from that one definition (and cached), including the
flexible versions' compact types and tagged-field sections (KIP-482).
"""

from __future__ import annotations

import copy
import logging
import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from .errors import ProtocolDecodeError, UnsupportedVersionError
from .types import (
    EMPTY_TAGGED_FIELDS,
    ArrayOf,
    Parts,
    Type,
    read_tagged_fields,
    write_tagged_fields,
)
from .varint import Buffer

__all__ = ["Field", "Api", "Struct", "StructType", "One", "parse_versions"]

MAX_VERSION = 0x7FFF
#: At most one log line per (API, version, side) in this many seconds about ignored trailing bytes.
TRAILING_LOG_INTERVAL = 60.0

log = logging.getLogger("kclient.protocol")

#: The typed request and response views of an :class:`Api` (kclient.protocol.messages).
ReqT = TypeVar("ReqT")
RespT = TypeVar("RespT")


def parse_versions(spec: str | tuple[int, int] | None) -> tuple[int, int]:
    """Parse Kafka's version-range notation: "3+", "0-4", "2", "none" -> (lo, hi)."""
    if spec is None:
        return (0, MAX_VERSION)
    if isinstance(spec, tuple):
        return spec
    spec = spec.strip()
    if spec == "none":
        return (1, 0)
    if spec.endswith("+"):
        return (int(spec[:-1]), MAX_VERSION)
    if "-" in spec:
        lo, hi = spec.split("-")
        return (int(lo), int(hi))
    return (int(spec), int(spec))


_new = object.__new__


class Struct:
    """A decoded request/response (or nested element): attribute access plus ``s["name"]``."""

    def __init__(self, **fields: Any):
        self.__dict__.update(fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"Struct({inner})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Struct) and self.__dict__ == other.__dict__

    def __getitem__(self, name: str) -> Any:
        return self.__dict__[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.__dict__.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dicts and lists, for logging and comparisons."""
        return {k: _plain(v) for k, v in self.__dict__.items()}

    if TYPE_CHECKING:  # fields are dynamic; the typed views are in kclient.protocol.messages

        def __getattr__(self, name: str) -> Any: ...


def _plain(v: Any) -> Any:
    if isinstance(v, Struct):
        return v.to_dict()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, memoryview):
        return bytes(v)
    return v


class One:
    """A field that is one struct, not an array of them (Kafka's ``"type": "Assignment"``).

    Encoded as its fields in place; a nullable one is an int8 first (-1 null, 1 present)."""

    __slots__ = ("fields",)

    def __init__(self, fields: Sequence[Field]):
        self.fields = tuple(fields)


class Field:
    """One field: a name, a type (a list of Fields for an array of structs, :class:`One` for a
    single struct), its versions."""

    __slots__ = ("name", "type", "versions", "nullable", "default")

    def __init__(
        self,
        name: str,
        type: Type | Sequence[Field] | One,
        versions: str = "0+",
        *,
        nullable: str | None = None,
        default: Any = ...,
    ):
        self.name = name
        self.type = type
        self.versions = parse_versions(versions)
        self.nullable = parse_versions(nullable) if nullable else (1, 0)
        self.default = default

    def active(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def default_value(self) -> Any:
        if self.default is not ...:
            return copy.copy(self.default)
        if isinstance(self.type, Type):
            return copy.copy(self.type.default)
        if isinstance(self.type, One):
            return {}
        return []


class StructType(Type):
    """A struct compiled for one version: the fields active there, in order.

    Consecutive fixed-size fields (ints, booleans, floats) are read and written as one run with
    one ``struct`` call; a run that fails is done again field by field, for the error naming the
    field.  A dict value is read with ``dict.get`` (the common case: bodies built by the core),
    anything else by attribute."""

    def __init__(self, fields: Sequence[Field], version: int, flexible: bool):
        self.name = "struct"
        self.fields = tuple(fields)
        self.flexible = flexible
        self._codecs = [
            (f.name, _resolve(f, version, flexible)) for f in fields if f.active(version)
        ]
        self._absent = [(f.name, f) for f in fields if not f.active(version)]
        self._defaults = {f.name: f for f in fields}
        #: every name a value may carry: the fields of all versions (one absent at this version
        #: is dropped, as Kafka drops it) and the tagged-field section a decoded Struct carries
        self._known = frozenset(self._defaults) | {"_tagged_fields"}
        self._runs = _runs(self._codecs)
        #: the absent fields' defaults when every one is immutable (set at once when read),
        #: else None (each copied per read)
        absent = {name: f.default_value() for name, f in self._absent}
        self._absent_values = (
            absent if all(type(v) in _IMMUTABLE for v in absent.values()) else None
        )

    def read(self, buf: Buffer, pos: int) -> tuple[Struct, int]:
        values: dict[str, Any] = {}
        for names, typ, run in self._runs:
            if run is None:
                values[names], pos = typ.read(buf, pos)
                continue
            try:
                got = run.unpack_from(buf, pos)
            except struct.error:
                for name, t in zip(names, typ):  # truncated: the field-by-field error
                    values[name], pos = t.read(buf, pos)
                raise  # (unreachable: a field above ran short)
            if len(names) == 1:
                values[names[0]] = got[0]
            else:
                values.update(zip(names, got))
            pos += run.size
        if self._absent_values is not None:
            values.update(self._absent_values)
        else:
            for name, f in self._absent:
                values[name] = f.default_value()
        if self.flexible:
            tags, pos = read_tagged_fields(buf, pos)
            if tags:
                values["_tagged_fields"] = tags
        s = _new(Struct)
        s.__dict__ = values
        return s, pos

    def write(self, value: Any, out: Parts) -> None:
        defaults = self._defaults
        if type(value) is dict or isinstance(value, Mapping):
            if not self._known.issuperset(value):
                unknown = sorted(k for k in value if k not in self._known)
                raise ValueError(
                    f"unknown field {unknown[0]!r} (not in any version; known: "
                    f"{', '.join(sorted(defaults))})"
                )
            get = value.get
        else:
            get = partial(getattr, value)
        for names, typ, run in self._runs:
            if run is None:
                v = get(names, ...)
                if v is ...:
                    v = defaults[names].default_value()
                try:
                    typ.write(v, out)
                except (ValueError, TypeError, AttributeError) as exc:
                    raise ValueError(f"field {names!r}: {exc}") from None
                continue
            vs = [get(name, ...) for name in names]
            if ... in vs:
                vs = [defaults[n].default_value() if v is ... else v for n, v in zip(names, vs)]
            try:
                out.append(run.pack(*vs))
            except struct.error:
                for name, t, v in zip(names, typ, vs):  # the field-by-field error
                    try:
                        t.write(v, out)
                    except (ValueError, TypeError, AttributeError) as exc:
                        raise ValueError(f"field {name!r}: {exc}") from None
                raise  # (unreachable: a field above refused its value)
        if self.flexible:  # a value's own tags (``_tagged_fields``: {tag: bytes}) or none
            tags = get("_tagged_fields", None)
            out.append(write_tagged_fields(tags) if tags else EMPTY_TAGGED_FIELDS)


#: default values shared between decoded structs (never changed in place)
_IMMUTABLE = frozenset({int, float, bool, str, bytes, type(None), tuple, frozenset})

#: one step of a compiled struct: a field ``(name, type, None)``, or a run of fixed-size fields
#: ``(names, types, struct.Struct)``
_Step = tuple[Any, Any, "struct.Struct | None"]


def _runs(codecs: Sequence[tuple[str, Type]]) -> list[_Step]:
    """The fields in order, consecutive fixed-size ones joined into runs."""
    steps: list[_Step] = []
    names: list[str] = []
    types: list[Type] = []

    def close() -> None:
        if names:
            fmt = ">" + "".join(t.fixed_fmt for t in types)  # type: ignore[attr-defined]
            steps.append((tuple(names), tuple(types), struct.Struct(fmt)))
            names.clear()
            types.clear()

    for name, t in codecs:
        if getattr(t, "fixed_fmt", None) is not None:
            names.append(name)
            types.append(t)
        else:
            close()
            steps.append((name, t, None))
    close()
    return steps


def _resolve(field: Field, version: int, flexible: bool) -> Type:
    """The concrete wire type of a field at a version: nullability, compactness, nesting."""
    t = field.type
    nullable = field.nullable[0] <= version <= field.nullable[1]
    if isinstance(t, One):
        return _OneStruct(StructType(t.fields, version, flexible), nullable)
    if not isinstance(t, Type):
        t = ArrayOf(StructType(t, version, flexible), nullable=nullable)
    elif nullable:
        t = _nullable(t)
    if flexible:
        t = t.compact()
    return t


class _OneStruct(Type):
    """One struct in place; nullable: an int8 marker first (-1 null, 1 present), as Kafka."""

    def __init__(self, struct: StructType, nullable: bool):
        self.struct = struct
        self.nullable = nullable
        self.name = f"{'nullable ' if nullable else ''}struct"
        self.default = None if nullable else {}

    def compact(self) -> Type:
        return self

    def read(self, buf: Buffer, pos: int) -> tuple[Struct | None, int]:
        if self.nullable:
            if pos >= len(buf):
                raise ProtocolDecodeError(f"{self.name}: truncated marker at byte {pos}")
            marker = buf[pos]
            pos += 1
            if marker == 0xFF:
                return None, pos
            if marker != 1:
                raise ProtocolDecodeError(f"{self.name}: invalid marker {marker} at byte {pos - 1}")
        return self.struct.read(buf, pos)

    def write(self, value: Any, out: Parts) -> None:
        if value is None:
            if not self.nullable:
                raise ValueError(f"{self.name} is not nullable")
            out.append(b"\xff")
            return
        if self.nullable:
            out.append(b"\x01")
        self.struct.write(value, out)


def _nullable(t: Type) -> Type:
    if getattr(t, "nullable", True):
        return t
    t = copy.copy(t)
    t.nullable = True
    t.default = None
    return t


class Api(Generic[ReqT, RespT]):
    """One Kafka API: its key, supported version range, first flexible version and schemas.

    Generic in its typed request and response views (``Api[MetadataRequest, MetadataResponse]``),
    which decoding returns for type checkers; at run time they are :class:`Struct` s.
    """

    def __init__(
        self,
        key: int,
        name: str,
        versions: str,
        request: Iterable[Field],
        response: Iterable[Field],
        *,
        flexible: int | None = None,
    ):
        self.key = key
        self.name = name
        self.min_version, self.max_version = parse_versions(versions)
        self.flexible_from = flexible if flexible is not None else MAX_VERSION + 1
        self.request_fields = tuple(request)
        self.response_fields = tuple(response)
        self._request_codec = lru_cache(maxsize=None)(self._compile_request)
        self._response_codec = lru_cache(maxsize=None)(self._compile_response)

    def __repr__(self) -> str:
        return f"Api({self.name}, key={self.key}, v{self.min_version}-{self.max_version})"

    def is_flexible(self, version: int) -> bool:
        return version >= self.flexible_from

    def check_version(self, version: int) -> None:
        if not self.min_version <= version <= self.max_version:
            raise UnsupportedVersionError(
                f"{self.name} v{version} is not supported (supported v{self.min_version}-"
                f"v{self.max_version})"
            )

    def _compile_request(self, version: int) -> StructType:
        self.check_version(version)
        return StructType(self.request_fields, version, self.is_flexible(version))

    def _compile_response(self, version: int) -> StructType:
        self.check_version(version)
        return StructType(self.response_fields, version, self.is_flexible(version))

    def request_codec(self, version: int) -> StructType:
        return self._request_codec(version)

    def response_codec(self, version: int) -> StructType:
        return self._response_codec(version)

    def encode_request(self, version: int, body: ReqT | Mapping[str, Any]) -> Parts:
        """The request body's wire parts (a dict, a Struct or any object with the fields).

        A dict key that no version of the API declares is refused (ValueError naming the API
        and the field), so a misspelt field cannot silently encode as its default."""
        out: Parts = []
        try:
            self._request_codec(version).write(body, out)
        except ValueError as exc:
            raise ValueError(f"{self.name} v{version} request: {exc}") from None
        return out

    def encode_response(self, version: int, body: RespT | Mapping[str, Any]) -> Parts:
        """The response body's wire parts, as :meth:`encode_request`."""
        out: Parts = []
        try:
            self._response_codec(version).write(body, out)
        except ValueError as exc:
            raise ValueError(f"{self.name} v{version} response: {exc}") from None
        return out

    def decode_request(
        self, version: int, buf: Buffer, pos: int = 0, *, strict: bool = False
    ) -> ReqT:
        """Decode a request body as Kafka does: the declared fields, unknown tags skipped and
        trailing bytes ignored (logged at debug); ``strict`` makes trailing bytes an error."""
        return cast(
            ReqT,
            _decode_all(self, self._request_codec(version), buf, pos, version, "request", strict),
        )

    def decode_response(
        self, version: int, buf: Buffer, pos: int = 0, *, strict: bool = False
    ) -> RespT:
        """Decode a response body, as leniently as :meth:`decode_request`."""
        return cast(
            RespT,
            _decode_all(self, self._response_codec(version), buf, pos, version, "response", strict),
        )


_trailing_logged: dict[tuple[str, int, str], float] = {}


def _decode_all(
    api: Api[Any, Any],
    codec: StructType,
    buf: Buffer,
    pos: int,
    version: int,
    side: str,
    strict: bool,
) -> Struct:
    value, end = codec.read(buf, pos)
    if end != len(buf):
        extra = len(buf) - end
        if strict:
            raise ProtocolDecodeError(
                f"{api.name} v{version} {side}: {extra} unexpected trailing bytes"
            )
        _note_trailing(api.name, version, side, extra)
    return value


def _note_trailing(name: str, version: int, side: str, extra: int) -> None:
    """Log ignored trailing bytes at debug, at most once per API/version/side per interval."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    key = (name, version, side)
    now = time.monotonic()
    last = _trailing_logged.get(key)
    if last is not None and now - last < TRAILING_LOG_INTERVAL:
        return
    _trailing_logged[key] = now
    log.debug(
        "%s v%d %s: ignored %d trailing bytes (as Kafka does; logged at most once per %.0f s)",
        name,
        version,
        side,
        extra,
        TRAILING_LOG_INTERVAL,
    )
