"""The registry conversations, sans-IO: each call is a generator that yields
:class:`HttpRequest` s and is sent :class:`HttpResponse` s, so the same code (and caches) serve
the blocking client and the asyncio one, which only move bytes (client.py).

``RegistryCalls`` also holds the caches: schemas by id and GUID, ids by (subject, schema), and
the latest version of a subject (for ``use.latest.version``; ``cache.latest.ttl.sec``)."""

from __future__ import annotations

import random
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

from kclient.core.steps import Sleep

from .model import RegisteredSchema, Schema, SchemaRegistryError

T = TypeVar("T")
RETRIABLE = frozenset({408, 429, 500, 502, 503, 504})
LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)


@dataclass(frozen=True)
class HttpRequest:
    """One REST request: method, path under the registry URL, query, JSON body."""

    method: str
    path: str
    query: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None


@dataclass(frozen=True)
class HttpResponse:
    """What came back: status and the decoded JSON (or text)."""

    status: int
    body: Any


#: a call yields requests (answered with HttpResponse) and sleeps (answered with None)
Call = Generator["HttpRequest | Sleep", Any, T]
#: status of an HttpResponse standing for "no URL could be reached" (its body says why)
UNREACHABLE = -1


def retry_delay(attempt: int, status: int, wait_ms: int, max_wait_ms: int) -> float | None:
    """Seconds to wait before retrying after ``status`` on ``attempt`` (0-based), or None when
    the status is final: exponential backoff with full jitter, capped at ``max_wait_ms``."""
    if status not in RETRIABLE and status != UNREACHABLE:
        return None
    ceiling = min(max_wait_ms, wait_ms * (1 << min(attempt, 20)))
    return random.uniform(0, ceiling) / 1000.0


def _q(name: str) -> str:
    """A subject as one URL path segment."""
    return quote(name, safe="")


@dataclass(frozen=True)
class Retries:
    """``max.retries``, ``retries.wait.ms`` and ``retries.max.wait.ms``."""

    max_retries: int = 3
    wait_ms: int = 1000
    max_wait_ms: int = 20000


def request(
    method: str,
    path: str,
    query: Mapping[str, Any] | None = None,
    body: Any = None,
    retries: Retries = Retries(),
) -> Call[Any]:
    """One request, retried with backoff on 408/429/5xx and unreachable URLs; the answer's
    JSON, or SchemaRegistryError (ConnectionError when no URL answered)."""
    query = {
        k: (str(v).lower() if isinstance(v, bool) else v)
        for k, v in (query or {}).items()
        if v is not None
    }
    attempt = 0
    while True:
        response = yield HttpRequest(method, path, query, body)
        delay = retry_delay(attempt, response.status, retries.wait_ms, retries.max_wait_ms)
        if delay is None or attempt >= retries.max_retries:
            break
        yield Sleep(delay)
        attempt += 1
    if response.status == UNREACHABLE:
        raise ConnectionError(
            f"schema registry unreachable after {attempt + 1} attempts: {response.body}"
        )
    if response.status >= 400:
        body = response.body if isinstance(response.body, dict) else {}
        raise SchemaRegistryError(
            response.status,
            int(body.get("error_code", response.status)),
            str(body.get("message", response.body)),
        )
    return response.body


class RegistryCalls:
    """Every registry operation as a generator, with the caches they share."""

    def __init__(self, latest_ttl: float = -1.0, retries: Retries = Retries()) -> None:
        """``latest_ttl``: seconds a subject's latest version is cached (-1: until cleared)."""
        self.latest_ttl = latest_ttl
        self.retries = retries
        self.by_id: dict[int, Schema] = {}
        self.by_guid: dict[str, Schema] = {}
        self.ids: dict[tuple[str, str], RegisteredSchema] = {}
        self.latest: dict[tuple[str, str], tuple[float, RegisteredSchema]] = {}

    def _request(
        self, method: str, path: str, query: Mapping[str, Any] | None = None, body: Any = None
    ) -> Call[Any]:
        """:func:`request` with this client's retries."""
        return request(method, path, query, body, self.retries)

    def clear_caches(self) -> None:
        """Forget everything cached."""
        self.by_id.clear()
        self.by_guid.clear()
        self.ids.clear()
        self.latest.clear()

    def clear_latest_caches(self) -> None:
        """Forget the cached latest versions (``use.latest.version`` looks again)."""
        self.latest.clear()

    # ------------------------------------------------------------------ schemas
    def register_schema_full_response(
        self, subject: str, schema: Schema, normalize: bool = False
    ) -> Call[RegisteredSchema]:
        """Register ``schema`` under ``subject`` (the same schema again returns its id)."""
        key = (subject, schema.cache_key)
        found = self.ids.get(key)
        if found is not None:
            return found
        answer = yield from self._request(
            "POST", f"subjects/{_q(subject)}/versions", {"normalize": normalize}, schema.to_dict()
        )
        registered = RegisteredSchema(
            int(answer["id"]), schema, subject, answer.get("version"), answer.get("guid")
        )
        self.ids[key] = registered
        self.by_id.setdefault(registered.schema_id, schema)
        return registered

    def register_schema(self, subject: str, schema: Schema, normalize: bool = False) -> Call[int]:
        """Register ``schema`` under ``subject``; its id."""
        found = yield from self.register_schema_full_response(subject, schema, normalize)
        return found.schema_id

    def get_schema(
        self, schema_id: int, subject: str | None = None, fmt: str | None = None
    ) -> Call[Schema]:
        """The schema with this id (cached)."""
        found = self.by_id.get(schema_id) if fmt is None else None
        if found is not None:
            return found
        answer = yield from self._request(
            "GET", f"schemas/ids/{int(schema_id)}", {"subject": subject, "format": fmt}
        )
        schema = Schema.from_answer(answer)
        if fmt is None:
            self.by_id[schema_id] = schema
        return schema

    def get_schema_by_guid(self, guid: str, fmt: str | None = None) -> Call[Schema]:
        """The schema with this GUID (cached)."""
        found = self.by_guid.get(guid) if fmt is None else None
        if found is not None:
            return found
        answer = yield from self._request("GET", f"schemas/guids/{_q(guid)}", {"format": fmt})
        schema = Schema.from_answer(answer)
        if fmt is None:
            self.by_guid[guid] = schema
        return schema

    def lookup_schema(
        self, subject: str, schema: Schema, normalize: bool = False, deleted: bool = False
    ) -> Call[RegisteredSchema]:
        """The version of ``subject`` registered with ``schema`` (error 40403 when none)."""
        key = (subject, schema.cache_key)
        found = self.ids.get(key)
        if found is not None and found.version is not None:
            return found
        answer = yield from self._request(
            "POST",
            f"subjects/{_q(subject)}",
            {"normalize": normalize, "deleted": deleted},
            schema.to_dict(),
        )
        registered = RegisteredSchema(
            int(answer["id"]),
            schema,
            answer.get("subject"),
            answer.get("version"),
            answer.get("guid"),
        )
        self.ids[key] = registered
        return registered

    def get_schema_types(self) -> Call[list[str]]:
        """The schema types the registry knows."""
        return (yield from self._request("GET", "schemas/types"))

    def get_subjects_by_schema_id(self, schema_id: int, deleted: bool = False) -> Call[list[str]]:
        """Subjects registered with ``schema_id``."""
        return (
            yield from self._request(
                "GET", f"schemas/ids/{int(schema_id)}/subjects", {"deleted": deleted}
            )
        )

    def get_schema_versions(
        self, schema_id: int, deleted: bool = False
    ) -> Call[list[dict[str, Any]]]:
        """(subject, version) pairs registered with ``schema_id``."""
        return (
            yield from self._request(
                "GET", f"schemas/ids/{int(schema_id)}/versions", {"deleted": deleted}
            )
        )

    # ------------------------------------------------------------------ subjects
    def get_subjects(
        self, subject_prefix: str | None = None, deleted: bool = False
    ) -> Call[list[str]]:
        """Every subject (with a prefix; soft-deleted ones too with ``deleted``)."""
        return (
            yield from self._request(
                "GET", "subjects", {"subjectPrefix": subject_prefix, "deleted": deleted}
            )
        )

    def get_versions(self, subject: str, deleted: bool = False) -> Call[list[int]]:
        """A subject's version numbers."""
        return (
            yield from self._request(
                "GET", f"subjects/{_q(subject)}/versions", {"deleted": deleted}
            )
        )

    def get_version(
        self, subject: str, version: int | str = "latest", deleted: bool = False
    ) -> Call[RegisteredSchema]:
        """One version of a subject (``latest`` by default)."""
        answer = yield from self._request(
            "GET", f"subjects/{_q(subject)}/versions/{version}", {"deleted": deleted}
        )
        registered = RegisteredSchema.from_answer(answer)
        self.by_id.setdefault(registered.schema_id, registered.schema)
        return registered

    def get_latest_version(self, subject: str) -> Call[RegisteredSchema]:
        """A subject's latest version (cached, see ``cache.latest.ttl.sec``)."""
        return (yield from self._latest(subject, "", self.get_version(subject)))

    def get_latest_with_metadata(
        self, subject: str, metadata: Mapping[str, str], deleted: bool = False
    ) -> Call[RegisteredSchema]:
        """The latest version whose metadata properties include ``metadata``."""
        query: dict[str, Any] = {
            "key": list(metadata),
            "value": list(metadata.values()),
            "deleted": deleted,
        }
        fetch = self._metadata(subject, query)
        return (yield from self._latest(subject, repr(sorted(metadata.items())), fetch))

    def _metadata(self, subject: str, query: dict[str, Any]) -> Call[RegisteredSchema]:
        """GET subjects/{subject}/metadata."""
        answer = yield from self._request("GET", f"subjects/{_q(subject)}/metadata", query)
        registered = RegisteredSchema.from_answer(answer)
        self.by_id.setdefault(registered.schema_id, registered.schema)
        return registered

    def _latest(
        self, subject: str, extra: str, fetch: Call[RegisteredSchema]
    ) -> Call[RegisteredSchema]:
        """A cached latest answer, or ``fetch``'s."""
        now = time.monotonic()
        held = self.latest.get((subject, extra))
        if held is not None and (self.latest_ttl < 0 or now - held[0] < self.latest_ttl):
            fetch.close()
            return held[1]
        found = yield from fetch
        self.latest[(subject, extra)] = (now, found)
        return found

    def get_referenced_by(self, subject: str, version: int | str) -> Call[list[int]]:
        """Ids of the schemas referencing this subject version."""
        return (
            yield from self._request(
                "GET", f"subjects/{_q(subject)}/versions/{version}/referencedby"
            )
        )

    def delete_subject(self, subject: str, permanent: bool = False) -> Call[list[int]]:
        """Soft-delete a subject (``permanent``: remove a soft-deleted one); its versions."""
        self.latest = {k: v for k, v in self.latest.items() if k[0] != subject}
        return (
            yield from self._request(
                "DELETE", f"subjects/{_q(subject)}", {"permanent": permanent or None}
            )
        )

    def delete_version(
        self, subject: str, version: int | str, permanent: bool = False
    ) -> Call[int]:
        """Soft-delete (or remove) one version."""
        self.latest = {k: v for k, v in self.latest.items() if k[0] != subject}
        return (
            yield from self._request(
                "DELETE",
                f"subjects/{_q(subject)}/versions/{version}",
                {"permanent": permanent or None},
            )
        )

    # ------------------------------------------------------------------ compatibility
    def test_compatibility(
        self, subject: str, schema: Schema, version: int | str = "latest", verbose: bool = False
    ) -> Call[Any]:
        """Whether ``schema`` is compatible with a version (``verbose``: the answer with its
        messages)."""
        answer = yield from self._request(
            "POST",
            f"compatibility/subjects/{_q(subject)}/versions/{version}",
            {"verbose": verbose or None},
            schema.to_dict(),
        )
        return answer if verbose else bool(answer["is_compatible"])

    def test_compatibility_all_versions(
        self, subject: str, schema: Schema, verbose: bool = False
    ) -> Call[Any]:
        """Whether ``schema`` may be registered under ``subject`` (the level's versions)."""
        answer = yield from self._request(
            "POST",
            f"compatibility/subjects/{_q(subject)}/versions",
            {"verbose": verbose or None},
            schema.to_dict(),
        )
        return answer if verbose else bool(answer["is_compatible"])

    def set_compatibility(self, subject: str | None = None, level: str = "BACKWARD") -> Call[str]:
        """Set the global (or a subject's) compatibility level."""
        if str(level).upper() not in LEVELS:
            raise ValueError(f"compatibility level {level!r}: one of {', '.join(LEVELS)}")
        path = "config" if subject is None else f"config/{_q(subject)}"
        answer = yield from self._request("PUT", path, None, {"compatibility": level.upper()})
        return str(answer["compatibility"])

    def get_compatibility(
        self, subject: str | None = None, default_to_global: bool = False
    ) -> Call[str]:
        """The global (or a subject's) compatibility level."""
        path = "config" if subject is None else f"config/{_q(subject)}"
        answer = yield from self._request(
            "GET", path, {"defaultToGlobal": default_to_global or None}
        )
        return str(answer["compatibilityLevel"])

    def delete_compatibility(self, subject: str) -> Call[str]:
        """Remove a subject's level (the global one applies again); the removed level."""
        answer = yield from self._request("DELETE", f"config/{_q(subject)}")
        return str(answer["compatibilityLevel"])

    # ------------------------------------------------------------------ modes
    def get_mode(self, subject: str | None = None) -> Call[str]:
        """The global (or a subject's) mode: READWRITE, READONLY or IMPORT."""
        path = "mode" if subject is None else f"mode/{_q(subject)}"
        return str((yield from self._request("GET", path))["mode"])

    def set_mode(self, mode: str, subject: str | None = None, force: bool = False) -> Call[str]:
        """Set the global (or a subject's) mode."""
        path = "mode" if subject is None else f"mode/{_q(subject)}"
        answer = yield from self._request("PUT", path, {"force": force or None}, {"mode": mode})
        return str(answer["mode"])

    def delete_mode(self, subject: str) -> Call[str]:
        """Remove a subject's mode."""
        return str((yield from self._request("DELETE", f"mode/{_q(subject)}"))["mode"])


#: the operations both clients offer, each driving one RegistryCalls generator
OPERATIONS = tuple(
    name
    for name in vars(RegistryCalls)
    if not name.startswith("_") and name not in ("clear_caches", "clear_latest_caches")
)

__all__ = [
    "OPERATIONS",
    "UNREACHABLE",
    "Call",
    "HttpRequest",
    "HttpResponse",
    "RegistryCalls",
    "Retries",
    "Sleep",
    "request",
    "retry_delay",
]
