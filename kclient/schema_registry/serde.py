"""What the Avro, JSON Schema and Protobuf serdes share: settings, subject name strategies,
finding the schema id to write and the schema a payload was written with.

A serializer is a callable ``(obj, ctx) -> bytes`` and a deserializer ``(data, ctx) -> obj``
(confluent-kafka's shape), with ``await x.serialize_async(...)`` / ``deserialize_async`` for
an :class:`AsyncSchemaRegistryClient`.  The first call for a subject (or schema id) asks the
registry through the client's sans-IO calls; later ones hit a dict and only encode.

Serializer settings (confluent-kafka's names): ``auto.register.schemas`` (True),
``normalize.schemas``, ``use.schema.id``, ``use.latest.version``, ``use.latest.with.metadata``
(a dict of metadata properties), ``subject.name.strategy`` (``topic``, ``record``,
``topic_record`` or a callable ``(ctx, record_name) -> subject``) and ``schema.id.serializer``
(``prefix``, the default, or ``header``).  Deserializers take ``use.latest.version``,
``use.latest.with.metadata`` and ``subject.name.strategy`` (to find the reader schema).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Generator, Mapping
from typing import Any

from .calls import Call
from .model import RegisteredSchema, Schema, SerializationError
from .wire import MessageField, SerializationContext, add_header, prefix, schema_ref

Strategy = Callable[[SerializationContext, "str | None"], "str | None"]


def topic_subject_name_strategy(ctx: SerializationContext, record_name: str | None) -> str:
    """``<topic>-key`` / ``<topic>-value`` (the default)."""
    return f"{ctx.topic}-{ctx.field}"


def record_subject_name_strategy(ctx: SerializationContext, record_name: str | None) -> str:
    """The record's fully qualified name."""
    if not record_name:
        raise SerializationError("the record subject name strategy needs a named schema")
    return record_name


def topic_record_subject_name_strategy(ctx: SerializationContext, record_name: str | None) -> str:
    """``<topic>-<record name>``."""
    return f"{ctx.topic}-{record_subject_name_strategy(ctx, record_name)}"


STRATEGIES: dict[str, Strategy] = {
    "topic": topic_subject_name_strategy,
    "record": record_subject_name_strategy,
    "topic_record": topic_record_subject_name_strategy,
}
SERIALIZER_DEFAULTS: dict[str, Any] = {
    "auto.register.schemas": True,
    "normalize.schemas": False,
    "use.schema.id": None,
    "use.latest.version": False,
    "use.latest.with.metadata": None,
    "subject.name.strategy": "topic",
    "schema.id.serializer": "prefix",
}
DESERIALIZER_DEFAULTS: dict[str, Any] = {
    "use.latest.version": False,
    "use.latest.with.metadata": None,
    "subject.name.strategy": "topic",
}


def _settings(
    conf: Mapping[str, Any] | None, defaults: dict[str, Any], extra: Mapping[str, Any]
) -> dict[str, Any]:
    """``conf`` over the defaults; an unknown key is an error naming the known ones."""
    known = dict(defaults, **extra)
    conf = dict(conf or {})
    unknown = sorted(set(conf) - set(known))
    if unknown:
        raise ValueError(
            f"unknown serde settings: {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    known.update(conf)
    strategy = known["subject.name.strategy"]
    if isinstance(strategy, str):
        if strategy not in STRATEGIES:
            raise ValueError(
                f"subject.name.strategy {strategy!r}: one of {', '.join(STRATEGIES)} or a callable"
            )
        known["subject.name.strategy"] = STRATEGIES[strategy]
    return known


def _refuse_async(client: Any, instead: str) -> None:
    """A blocking call cannot drive an asyncio client: say what to await instead."""
    if getattr(client, "is_async", False):
        raise SerializationError(
            f"with an AsyncSchemaRegistryClient, await {instead} (or use a SchemaRegistryClient)"
        )


class _Serde:
    """Client, settings and parsed-schema cache of one serializer or deserializer."""

    schema_type = "AVRO"

    def __init__(self, client: Any, conf: dict[str, Any]) -> None:
        self.client = client
        self.conf = conf
        self.strategy: Strategy = conf["subject.name.strategy"]
        self._parsed: dict[str, Any] = {}

    def parsed(self, schema: Schema) -> Any:
        """``schema`` in its library's form (cached): the subclass's ``parse``."""
        key = schema.cache_key
        found = self._parsed.get(key)
        if found is None:
            refs = yield from self._references(schema)
            found = self._parsed[key] = self.parse(schema, refs)
        return found

    def _references(self, schema: Schema) -> Generator[Any, Any, dict[str, Schema]]:
        """Every schema ``schema`` references, transitively: name -> schema."""
        found: dict[str, Schema] = {}
        for ref in schema.references:
            registered = yield from self.client.calls.get_version(ref.subject, ref.version)
            inner = yield from self._references(registered.schema)
            found.update(inner)
            found[ref.name] = registered.schema
        return found

    def parse(self, schema: Schema, references: dict[str, Schema]) -> Any:
        """The library's form of a schema (subclasses)."""
        raise NotImplementedError

    def _latest(self, subject: str) -> Call[RegisteredSchema | None]:
        """The version ``use.latest.with.metadata`` / ``use.latest.version`` pick, or None."""
        calls, meta = self.client.calls, self.conf["use.latest.with.metadata"]
        if meta:
            return (yield from calls.get_latest_with_metadata(subject, meta))
        if self.conf["use.latest.version"]:
            return (yield from calls.get_latest_version(subject))
        return None


class TopicEncoder:
    """A serializer bound to one topic and field: the Encoder a producer uses for it."""

    def __init__(self, serializer: SchemaSerializer, topic: str, field: str) -> None:
        self.serializer = serializer
        self.ctx = SerializationContext(topic, field)

    def to_message(self, data: Any) -> bytes | None:
        """``data`` serialized for this topic (no headers: the prefix carries the id)."""
        return self.serializer(data, self.ctx)

    __call__ = to_message


class SchemaSerializer(_Serde):
    """Base of the serializers: finds the schema id, frames what ``encode`` returns.

    As a producer's ``serializer.class`` (or ``key.serializer.class`` after :meth:`as_key`)
    it is bound to each topic by :meth:`for_topic` (kclient.encoders.for_topic)."""

    field = MessageField.VALUE

    def __init__(
        self,
        client: Any,
        schema: str | Schema | None,
        conf: Mapping[str, Any] | None,
        extra: Mapping[str, Any],
        to_dict: Callable[[Any, SerializationContext], Any] | None = None,
    ) -> None:
        super().__init__(client, _settings(conf, SERIALIZER_DEFAULTS, extra))
        self.to_dict = to_dict
        if isinstance(schema, str):
            schema = Schema(schema, self.schema_type)
        self.schema = schema
        if schema is None and not (
            self.conf["use.latest.version"]
            or self.conf["use.latest.with.metadata"]
            or self.conf["use.schema.id"] is not None
        ):
            raise ValueError(
                "a schema is needed unless use.latest.version, "
                "use.latest.with.metadata or use.schema.id picks one"
            )
        if self.conf["schema.id.serializer"] not in ("prefix", "header"):
            raise ValueError("schema.id.serializer: 'prefix' or 'header'")
        self.header_ids = self.conf["schema.id.serializer"] == "header"
        #: subject -> (schema id, GUID, parsed schema, the bytes that start every payload)
        self._writers: dict[str, tuple[int, str | None, Any, bytes]] = {}
        #: (topic, field) -> (parsed, head) once known, when nothing else varies per record
        #: (a built-in strategy, prefix ids, no to_dict): the steady state is one dict lookup
        self._fast: dict[tuple[str, str], tuple[Any, bytes]] | None = (
            {}
            if self.strategy in STRATEGIES.values() and not self.header_ids and to_dict is None
            else None
        )

    def record_name(self, obj: Any) -> str | None:
        """The name the record strategies use (subclasses)."""
        return None

    def for_topic(self, topic: str) -> TopicEncoder:
        """This serializer as the Encoder of ``topic`` (its key or value, see as_key)."""
        bound = self.__dict__.setdefault("_bound", {})
        found = bound.get(topic)
        if found is None:
            found = bound[topic] = TopicEncoder(self, topic, self.field)
        return found

    def as_key(self) -> SchemaSerializer:
        """A twin serializing keys (subject ``<topic>-key``), for ``key.serializer.class``."""
        twin = copy.copy(self)
        twin.field = MessageField.KEY
        twin.__dict__["_bound"] = {}
        return twin

    def to_message(self, data: Any) -> bytes | None:
        """Refused: the subject needs a topic (producers bind one through for_topic)."""
        raise SerializationError(
            "a schema registry serializer needs the topic: call it as "
            "serializer(obj, SerializationContext(topic)), or give it to a "
            "producer as serializer.class (bound per topic)"
        )

    def encode(self, parsed: Any, obj: Any, head: bytes) -> bytes:
        """``head`` followed by ``obj`` encoded with ``parsed`` (subclasses)."""
        raise NotImplementedError

    def _writer(self, subject: str) -> Generator[Any, Any, tuple[int, str | None, Any, bytes]]:
        """The schema to write with under ``subject``, its id and the payload head."""
        calls, conf = self.client.calls, self.conf
        if conf["use.schema.id"] is not None:
            schema_id = int(conf["use.schema.id"])
            schema = yield from calls.get_schema(schema_id, subject)
            guid = None
        else:
            latest = yield from self._latest(subject)
            if latest is None:
                if self.schema is None:
                    raise SerializationError("no schema to serialize with")
                found = yield from (
                    calls.register_schema_full_response
                    if conf["auto.register.schemas"]
                    else calls.lookup_schema
                )(subject, self.schema, conf["normalize.schemas"])
                latest = found
            schema, schema_id, guid = latest.schema, latest.schema_id, latest.guid
        parsed = yield from self.parsed(schema)
        head = b"" if self.header_ids else self.head(schema_id, parsed)
        entry = (schema_id, guid, parsed, head)
        if not (conf["use.latest.version"] or conf["use.latest.with.metadata"]):
            self._writers[subject] = entry
        return entry

    def head(self, schema_id: int, parsed: Any) -> bytes:
        """What precedes the encoded value (Protobuf adds its message indexes)."""
        return prefix(schema_id)

    def _subject(self, obj: Any, ctx: SerializationContext) -> str:
        """The subject of this record."""
        subject = self.strategy(ctx, self.record_name(obj))
        if not subject:
            raise SerializationError(f"no subject for {ctx.topic} {ctx.field}")
        return subject

    def _finish(
        self, obj: Any, ctx: SerializationContext, entry: tuple[int, str | None, Any, bytes]
    ) -> bytes:
        """Encode ``obj`` (and put the GUID in the headers, in header mode)."""
        if self.header_ids:
            if entry[1] is None:
                raise SerializationError("the registry gave no GUID for header schema ids")
            add_header(ctx, entry[1])
        if self.to_dict is not None:
            obj = self.to_dict(obj, ctx)
        return self.encode(entry[2], obj, entry[3])

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        """``obj`` in the Confluent wire format (None stays None)."""
        if obj is None:
            return None
        if ctx is None:
            raise SerializationError("a SerializationContext (topic, field) is needed")
        fast = self._fast
        if fast is not None:
            hit = fast.get((ctx.topic, ctx.field))
            if hit is not None:
                return self.encode(hit[0], obj, hit[1])
        subject = self._subject(obj, ctx)
        entry = self._writers.get(subject)
        if entry is None:
            _refuse_async(self.client, "serialize_async(obj, ctx)")
            entry = self.client.run(self._writer(subject))
        if fast is not None and subject in self._writers:
            fast[(ctx.topic, ctx.field)] = (entry[2], entry[3])
        return self._finish(obj, ctx, entry)

    async def serialize_async(self, obj: Any, ctx: SerializationContext) -> bytes | None:
        """The same, through an AsyncSchemaRegistryClient."""
        if obj is None:
            return None
        subject = self._subject(obj, ctx)
        entry = self._writers.get(subject)
        if entry is None:
            entry = await self.client.run(self._writer(subject))
        return self._finish(obj, ctx, entry)


class SchemaDeserializer(_Serde):
    """Base of the deserializers: reads the schema id, finds writer (and reader) schemas."""

    def __init__(
        self,
        client: Any,
        schema: str | Schema | None,
        conf: Mapping[str, Any] | None,
        extra: Mapping[str, Any],
        from_dict: Callable[[Any, SerializationContext | None], Any] | None = None,
    ) -> None:
        super().__init__(client, _settings(conf, DESERIALIZER_DEFAULTS, extra))
        self.from_dict = from_dict
        if isinstance(schema, str):
            schema = Schema(schema, self.schema_type)
        self.reader_schema = schema
        #: schema id or GUID -> (parsed writer schema, parsed reader schema or None)
        self._readers: dict[int | str, tuple[Any, Any]] = {}

    def decode(self, writer: Any, reader: Any, data: bytes, start: int) -> Any:
        """The value at ``data[start:]`` (subclasses)."""
        raise NotImplementedError

    def from_message(self, b: bytes | None) -> Any:
        """As a consumer's ``value.decoder.class`` / ``key.decoder.class`` (the prefix names
        the schema, so no topic is needed)."""
        return self(b)

    def _schemas(
        self, ref: int | str, ctx: SerializationContext | None
    ) -> Generator[Any, Any, tuple[Any, Any]]:
        """Parsed writer schema of an id or GUID, and the reader schema if one is set."""
        calls = self.client.calls
        if isinstance(ref, int):
            schema = yield from calls.get_schema(ref)
        else:
            schema = yield from calls.get_schema_by_guid(ref)
        writer = yield from self.parsed(schema)
        reader = None
        if self.reader_schema is not None:
            reader = yield from self.parsed(self.reader_schema)
        elif ctx is not None and (
            self.conf["use.latest.version"] or self.conf["use.latest.with.metadata"]
        ):
            subject = self.strategy(ctx, None)
            latest = (yield from self._latest(subject)) if subject else None
            if latest is not None:
                reader = yield from self.parsed(latest.schema)
        entry = (writer, reader)
        if not (self.conf["use.latest.version"] or self.conf["use.latest.with.metadata"]):
            self._readers[ref] = entry
        return entry

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Any:
        """The value ``data`` holds (None stays None)."""
        if data is None:
            return None
        ref, start = schema_ref(data, ctx)
        entry = self._readers.get(ref)
        if entry is None:
            _refuse_async(self.client, "deserialize_async(data, ctx)")
            entry = self.client.run(self._schemas(ref, ctx))
        value = self.decode(entry[0], entry[1], data, start)
        return value if self.from_dict is None else self.from_dict(value, ctx)

    async def deserialize_async(
        self, data: bytes | None, ctx: SerializationContext | None = None
    ) -> Any:
        """The same, through an AsyncSchemaRegistryClient."""
        if data is None:
            return None
        ref, start = schema_ref(data, ctx)
        entry = self._readers.get(ref)
        if entry is None:
            entry = await self.client.run(self._schemas(ref, ctx))
        value = self.decode(entry[0], entry[1], data, start)
        return value if self.from_dict is None else self.from_dict(value, ctx)


__all__ = [
    "SchemaDeserializer",
    "SchemaSerializer",
    "record_subject_name_strategy",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
]
