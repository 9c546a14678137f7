"""The registry's state: subjects, versions, schema ids, compatibility and modes.

Every change is first written as a keyed record to the journal (the broker's compacted
``_schemas`` topic, as Confluent's registry keeps it) and then applied, so replaying the topic
at start-up rebuilds the same state.  Keys and values are JSON, keyed as Confluent's are
(``{"keytype": "SCHEMA", "subject": ..., "version": ..., "magic": 1}``; ``CONFIG`` and
``MODE`` with ``magic`` 0); a tombstone removes a permanently deleted version or a setting.
One lock orders all calls.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .compat import LEVELS, TYPES, InvalidSchema, canonical, problems

Journal = Callable[[Sequence[tuple[bytes, bytes | None]]], None]
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")


class RegistryError(Exception):
    """An answer other than 200: HTTP ``status`` and Confluent's ``error_code``."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def not_found(code: int, message: str) -> RegistryError:
    """A 404 with Confluent's finer code (40401 subject, 40402 version, 40403 schema, ...)."""
    return RegistryError(404, code, message)


@dataclass
class Version:
    """One registered version of a subject."""

    subject: str
    version: int
    id: int
    schema_type: str
    schema: str
    references: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    rule_set: dict[str, Any] | None = None
    guid: str = ""
    deleted: bool = False

    def answer(self, with_subject: bool = True) -> dict[str, Any]:
        """The REST form (``schemaType`` omitted for AVRO, as Confluent answers)."""
        out: dict[str, Any] = {"id": self.id, "guid": self.guid, "schema": self.schema}
        if with_subject:
            out.update(subject=self.subject, version=self.version)
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = self.references
        if self.metadata:
            out["metadata"] = self.metadata
        if self.rule_set:
            out["ruleSet"] = self.rule_set
        return out

    def identity(self) -> str:
        """What makes two registrations the same schema (and so the same id)."""
        return json.dumps(
            [self.schema_type, self.schema, self.references, self.metadata, self.rule_set],
            sort_keys=True,
        )

    def record(self) -> dict[str, Any]:
        """The journal value."""
        return dict(self.answer(), schemaType=self.schema_type, deleted=self.deleted)


def _key(keytype: str, subject: str | None, version: int | None = None) -> bytes:
    """A journal key as Confluent writes it."""
    key: dict[str, Any] = {"keytype": keytype, "subject": subject}
    if version is not None:
        key["version"] = version
    key["magic"] = 1 if keytype == "SCHEMA" else 0
    return json.dumps(key, separators=(",", ":")).encode()


class SchemaStore:
    """Subjects and their versions, ids, settings; ``journal`` persists each change."""

    def __init__(self, journal: Journal, default_level: str = "BACKWARD") -> None:
        self.journal = journal
        self.lock = threading.RLock()
        self.subjects: dict[str, dict[int, Version]] = {}
        self.ids: dict[int, Version] = {}  # first registration of each id
        self.by_identity: dict[str, int] = {}
        self.by_guid: dict[str, int] = {}
        self.levels: dict[str | None, str] = {None: default_level}
        self.modes: dict[str | None, str] = {None: "READWRITE"}

    # ------------------------------------------------------------------ replay
    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """Apply one journal record (at start-up, and after each write)."""
        if not key:
            return
        k = json.loads(key)
        v = json.loads(value) if value else None
        kind, subject = k.get("keytype"), k.get("subject")
        if kind == "SCHEMA":
            self._apply_schema(subject, int(k["version"]), v)
        elif kind == "CONFIG":
            self._apply_setting(self.levels, subject, v and v.get("compatibilityLevel"))
        elif kind == "MODE":
            self._apply_setting(self.modes, subject, v and v.get("mode"))

    def _apply_schema(self, subject: str, version: int, v: dict[str, Any] | None) -> None:
        """Add, update (soft delete) or remove (tombstone) one version."""
        versions = self.subjects.setdefault(subject, {})
        if v is None:
            versions.pop(version, None)
            if not versions:
                del self.subjects[subject]
            return
        entry = Version(
            subject,
            version,
            int(v["id"]),
            v.get("schemaType") or "AVRO",
            v["schema"],
            v.get("references") or [],
            v.get("metadata"),
            v.get("ruleSet"),
            v.get("guid") or "",
            bool(v.get("deleted")),
        )
        versions[version] = entry
        self.ids.setdefault(entry.id, entry)
        self.by_identity.setdefault(entry.identity(), entry.id)
        if entry.guid:
            self.by_guid.setdefault(entry.guid, entry.id)

    @staticmethod
    def _apply_setting(
        table: dict[str | None, str], subject: str | None, value: str | None
    ) -> None:
        """Set or clear a global (None) or per-subject setting."""
        if value:
            table[subject] = value
        elif subject is not None:
            table.pop(subject, None)

    def _write(self, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Journal the records, then apply them."""
        self.journal(records)
        for key, value in records:
            self.apply(key, value)

    # ------------------------------------------------------------------ reads
    def versions(self, subject: str, deleted: bool = False) -> list[Version]:
        """A subject's versions, oldest first; 40401 when it has none (none live, unless
        ``deleted``)."""
        found = [
            v for _, v in sorted(self.subjects.get(subject, {}).items()) if deleted or not v.deleted
        ]
        if not found:
            raise not_found(40401, f"Subject '{subject}' not found.")
        return found

    def version(self, subject: str, version: str | int, deleted: bool = False) -> Version:
        """One version: a number, ``latest`` or -1 (40402 when absent)."""
        versions = self.versions(subject, deleted)
        if str(version) in ("latest", "-1"):
            return versions[-1]
        try:
            number = int(version)
        except ValueError:
            raise RegistryError(
                422,
                42202,
                f"The specified version '{version}' is not a "
                "valid version id. Allowed values are between [1, "
                '2^31-1] and the string "latest"',
            ) from None
        for each in versions:
            if each.version == number:
                return each
        raise not_found(40402, f"Version {version} not found.")

    def schema(self, schema_id: int) -> Version:
        """The schema of an id (40403 when no version, deleted or not, has it)."""
        entry = self.ids.get(schema_id)
        if entry is None or not any(
            v.id == schema_id for vs in self.subjects.values() for v in vs.values()
        ):
            raise not_found(40403, f"Schema {schema_id} not found")
        return entry

    def by_guid_id(self, guid: str) -> Version:
        """The schema of a GUID."""
        if guid not in self.by_guid:
            raise not_found(40403, f"Schema {guid} not found")
        return self.schema(self.by_guid[guid])

    def subject_names(self, prefix: str = "", deleted: bool = False) -> list[str]:
        """Subjects with a live version (or any, with ``deleted``), sorted."""
        return sorted(
            s
            for s, vs in self.subjects.items()
            if s.startswith(prefix) and any(deleted or not v.deleted for v in vs.values())
        )

    def uses(self, schema_id: int, deleted: bool = False) -> list[Version]:
        """Every (subject, version) registered with ``schema_id``."""
        self.schema(schema_id)
        return [
            v
            for s in sorted(self.subjects)
            for _, v in sorted(self.subjects[s].items())
            if v.id == schema_id and (deleted or not v.deleted)
        ]

    def referenced_by(self, subject: str, version: str | int) -> list[int]:
        """Ids of schemas whose references name this subject version."""
        target = self.version(subject, version)
        return sorted(
            {
                v.id
                for vs in self.subjects.values()
                for v in vs.values()
                if not v.deleted
                and any(
                    r.get("subject") == subject and int(r.get("version", -1)) == target.version
                    for r in v.references
                )
            }
        )

    def level(self, subject: str | None, fallback: bool = True) -> str:
        """The compatibility level in force for ``subject`` (the global one when unset)."""
        if subject in self.levels or not fallback:
            if subject not in self.levels:
                raise not_found(
                    40408,
                    f"Subject '{subject}' does not have subject-level compatibility configured",
                )
            return self.levels[subject]
        return self.levels[None]

    def mode(self, subject: str | None, fallback: bool = True) -> str:
        """The mode in force for ``subject``."""
        if subject in self.modes:
            return self.modes[subject]
        if not fallback:
            raise not_found(
                40409, f"Subject '{subject}' does not have subject-level mode configured"
            )
        return self.modes[None]

    # ------------------------------------------------------------------ schemas
    def _reference_texts(self, references: list[dict[str, Any]]) -> list[str]:
        """The schema texts references name (each must exist: 42201 otherwise)."""
        texts = []
        for ref in references:
            try:
                texts.append(self.version(ref["subject"], ref["version"]).schema)
            except (RegistryError, KeyError) as exc:
                raise RegistryError(
                    422, 42201, f"Invalid schema: reference {ref} cannot be resolved"
                ) from exc
        return texts

    def candidate(self, subject: str, body: dict[str, Any]) -> Version:
        """A request body as an unsaved version (validated; 42201 when invalid)."""
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise RegistryError(422, 42201, 'Invalid schema: the body needs a "schema" string')
        schema_type = str(body.get("schemaType") or "AVRO").upper()
        references = list(body.get("references") or [])
        try:
            text = canonical(schema_type, body["schema"], self._reference_texts(references))
        except InvalidSchema as exc:
            raise RegistryError(422, 42201, str(exc)) from exc
        return Version(
            subject, 0, 0, schema_type, text, references, body.get("metadata"), body.get("ruleSet")
        )

    def lookup(self, subject: str, body: dict[str, Any], deleted: bool = False) -> Version:
        """The version of ``subject`` registered with this schema (40403 when none)."""
        wanted = self.candidate(subject, body)
        for each in reversed(self.versions(subject, deleted)):
            if (each.schema_type, each.schema, each.references) == (
                wanted.schema_type,
                wanted.schema,
                wanted.references,
            ) and (wanted.metadata is None or wanted.metadata == each.metadata):
                return each
        raise not_found(40403, "Schema not found")

    def incompatibilities(
        self, subject: str, candidate: Version, against: str | None = None, level: str | None = None
    ) -> list[str]:
        """Why ``candidate`` breaks the subject's level (against one version, or the ones the
        level names)."""
        level = level or self.level(subject)
        live = [v for _, v in sorted(self.subjects.get(subject, {}).items()) if not v.deleted]
        if against is not None:
            live = [self.version(subject, against)]
            level = level.removesuffix("_TRANSITIVE")
        live = [v for v in live if v.schema_type == candidate.schema_type]
        new = (candidate.schema, self._reference_texts(candidate.references))
        old = [(v.schema, self._reference_texts(v.references)) for v in live]
        try:
            return problems(candidate.schema_type, new, old, level)
        except InvalidSchema as exc:
            raise RegistryError(422, 42201, str(exc)) from exc

    def register(self, subject: str, body: dict[str, Any]) -> Version:
        """Register (or find) a schema under ``subject``: its version, with the id."""
        with self.lock:
            mode = self.mode(subject)
            if mode.startswith("READONLY"):
                raise RegistryError(422, 42205, f"Subject {subject} is in read-only mode")
            entry = self.candidate(subject, body)
            try:
                return self.lookup(subject, body)
            except RegistryError:
                pass
            if mode == "IMPORT":
                return self._import(subject, body, entry)
            found = self.incompatibilities(subject, entry)
            if found:
                raise RegistryError(
                    409,
                    409,
                    "Schema being registered is incompatible with "
                    f'an earlier schema for subject "{subject}", details: ' + "; ".join(found),
                )
            entry.id = self.by_identity.get(entry.identity()) or max(self.ids, default=0) + 1
            entry.version = max(self.subjects.get(subject, {}), default=0) + 1
            return self._save(entry)

    def _import(self, subject: str, body: dict[str, Any], entry: Version) -> Version:
        """IMPORT mode: the caller names the id and version (a migration from elsewhere)."""
        try:
            entry.id, entry.version = int(body["id"]), int(body["version"])
        except (KeyError, TypeError, ValueError):
            raise RegistryError(422, 42201, 'IMPORT mode needs "id" and "version"') from None
        held = self.ids.get(entry.id)
        if held is not None and held.identity() != entry.identity():
            raise RegistryError(
                422, 42207, f"Overwrite new schema with id {entry.id} is not permitted."
            )
        return self._save(entry)

    def _save(self, entry: Version) -> Version:
        """Journal and apply a new version."""
        held = self.ids.get(entry.id)
        entry.guid = held.guid if held is not None else str(uuid.uuid4())
        self._write(
            [(_key("SCHEMA", entry.subject, entry.version), json.dumps(entry.record()).encode())]
        )
        return self.subjects[entry.subject][entry.version]

    # ------------------------------------------------------------------ deletes and settings
    def delete_version(self, subject: str, version: str | int, permanent: bool) -> int:
        """Soft-delete a version, or remove a soft-deleted one (``permanent``)."""
        with self.lock:
            entry = self.version(subject, version, deleted=permanent)
            if permanent and not entry.deleted:
                raise not_found(
                    40407,
                    f"Subject '{subject}' Version {entry.version} was not "
                    "deleted first before being permanently deleted",
                )
            if not permanent and entry.deleted:
                raise not_found(
                    40406,
                    f"Subject '{subject}' Version {entry.version} was "
                    "soft deleted. Set permanent=true to delete permanently",
                )
            self._write([self._deletion(entry, permanent)])
            return entry.version

    def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        """Soft-delete every version, or remove a soft-deleted subject (``permanent``)."""
        with self.lock:
            versions = self.versions(subject, deleted=True)
            if permanent and any(not v.deleted for v in versions):
                raise not_found(
                    40405,
                    f"Subject '{subject}' was not deleted first before being permanently deleted",
                )
            if not permanent:
                versions = self.versions(subject)
            records = [self._deletion(v, permanent) for v in versions]
            if permanent and subject in self.levels:
                records.append((_key("CONFIG", subject), None))
            self._write(records)
            return [v.version for v in versions]

    @staticmethod
    def _deletion(entry: Version, permanent: bool) -> tuple[bytes, bytes | None]:
        """The journal record deleting one version."""
        key = _key("SCHEMA", entry.subject, entry.version)
        if permanent:
            return key, None
        return key, json.dumps(dict(entry.record(), deleted=True)).encode()

    def set_level(self, subject: str | None, level: Any) -> str:
        """Set the compatibility level (42203 for an unknown one)."""
        level = str(level or "").upper()
        if level not in LEVELS:
            raise RegistryError(
                422, 42203, "Invalid compatibility level. Valid values are " + ", ".join(LEVELS)
            )
        with self.lock:
            self._write(
                [(_key("CONFIG", subject), json.dumps({"compatibilityLevel": level}).encode())]
            )
        return str(level)

    def clear_level(self, subject: str | None) -> str:
        """Remove a subject's level (the global one goes back to BACKWARD); the old one."""
        with self.lock:
            old = self.level(subject, fallback=subject is None)
            value = (
                None
                if subject is not None
                else json.dumps({"compatibilityLevel": "BACKWARD"}).encode()
            )
            self._write([(_key("CONFIG", subject), value)])
            return old

    def set_mode(self, subject: str | None, mode: Any, force: bool = False) -> str:
        """Set READWRITE, READONLY or IMPORT (IMPORT globally needs an empty registry or
        ``force``)."""
        mode = str(mode or "").upper()
        if mode not in MODES:
            raise RegistryError(422, 42204, "Invalid mode. Valid values are " + ", ".join(MODES))
        with self.lock:
            if (
                mode == "IMPORT"
                and not force
                and (
                    self.subject_names()
                    if subject is None
                    else self.subject_names(subject) and subject in self.subjects
                )
            ):
                raise RegistryError(422, 42205, "Cannot import since found existing subjects")
            self._write([(_key("MODE", subject), json.dumps({"mode": mode}).encode())])
        return str(mode)

    def clear_mode(self, subject: str | None) -> str:
        """Remove a subject's mode; the old one."""
        with self.lock:
            old = self.mode(subject, fallback=False)
            self._write([(_key("MODE", subject), None)])
            return old


__all__ = ["MODES", "TYPES", "RegistryError", "SchemaStore", "Version"]
