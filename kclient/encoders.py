"""Encoders turn application objects into message bytes; decoders turn them back.

Imports nothing of kclient.  ``Encoder.to_message(data) -> bytes`` is what the producer applies
to keys (``key.serializer.class``) and values (``serializer.class``); ``Decoder.from_message(b)``
is what consumers apply (``key.decoder.class``, ``value.decoder.class``).  ``None`` always stays
``None``: a null key or a null value (a tombstone) is not the empty string.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from typing import Any

__all__ = [
    "Encoder",
    "Decoder",
    "DefaultEncoder",
    "DefaultDecoder",
    "StringEncoder",
    "StringDecoder",
    "JsonEncoder",
    "JsonDecoder",
    "decode_function",
    "for_topic",
]


class Encoder:
    """Interface: an application object to message bytes (``None`` to ``None``)."""

    def to_message(self, data: Any) -> bytes | None:
        """Serialize ``data``."""
        raise NotImplementedError

    def __call__(self, data: Any) -> bytes | None:
        """Encoders are also plain callables."""
        return self.to_message(data)


class Decoder:
    """Interface: message bytes to an application object (``None`` to ``None``)."""

    def from_message(self, b: bytes | None) -> Any:
        """Deserialize ``b``."""
        raise NotImplementedError

    def __call__(self, b: bytes | None) -> Any:
        """Decoders are also plain callables."""
        return self.from_message(b)


class DefaultEncoder(Encoder):
    """Bytes as they are (bytearray and memoryview copied to bytes); anything else is refused."""

    def to_message(self, data: Any) -> bytes | None:
        """``data`` itself when it is bytes; a TypeError naming the type otherwise."""
        if data is None or type(data) is bytes:
            return data
        if isinstance(data, (bytes, bytearray, memoryview)):
            return bytes(data)
        raise TypeError(
            f"DefaultEncoder only passes bytes through, got {type(data).__name__}; "
            "use StringEncoder for str or JsonEncoder for other objects "
            '(e.g. "serializer.class": "kclient.encoders.StringEncoder")'
        )


class DefaultDecoder(Decoder):
    """Bytes as they are."""

    def from_message(self, b: bytes | None) -> bytes | None:
        """``b`` as bytes (memoryviews from a fetch buffer are copied)."""
        if b is None or type(b) is bytes:
            return b
        return bytes(b)


class StringEncoder(Encoder):
    """Text to bytes in ``encoding`` (UTF-8 unless told otherwise)."""

    def __init__(self, encoding: str = "utf-8", errors: str = "strict") -> None:
        """``encoding``/``errors`` as for ``str.encode``; an unknown encoding fails here."""
        codecs.lookup(encoding)
        self.encoding, self.errors = encoding, errors

    def to_message(self, data: Any) -> bytes | None:
        """Encode a str; bytes-likes pass through; other types are refused with a TypeError."""
        if data is None:
            return None
        if isinstance(data, str):
            return data.encode(self.encoding, self.errors)
        if isinstance(data, (bytes, bytearray, memoryview)):
            return bytes(data)
        raise TypeError(
            f"StringEncoder encodes str, got {type(data).__name__}; "
            "convert it with str() first or use JsonEncoder"
        )


class StringDecoder(Decoder):
    """Bytes to text in ``encoding`` (UTF-8 unless told otherwise)."""

    def __init__(self, encoding: str = "utf-8", errors: str = "strict") -> None:
        """``encoding``/``errors`` as for ``bytes.decode``; an unknown encoding fails here."""
        codecs.lookup(encoding)
        self.encoding, self.errors = encoding, errors

    def from_message(self, b: bytes | None) -> str | None:
        """Decode ``b``."""
        if b is None:
            return None
        return str(b, self.encoding, self.errors)


class JsonEncoder(Encoder):
    """Objects to compact UTF-8 JSON (``separators=(",", ":")``)."""

    def __init__(
        self,
        default: Callable[[Any], Any] | None = None,
        sort_keys: bool = False,
        ensure_ascii: bool = False,
    ) -> None:
        """``default`` converts objects json cannot (e.g. ``str`` for datetimes)."""
        self._encoder = json.JSONEncoder(
            separators=(",", ":"),
            default=default,
            sort_keys=sort_keys,
            ensure_ascii=ensure_ascii,
        )

    def to_message(self, data: Any) -> bytes | None:
        """JSON text of ``data`` as UTF-8 bytes; ``None`` stays a null message, not ``null``."""
        if data is None:
            return None
        try:
            return self._encoder.encode(data).encode("utf-8")
        except TypeError as exc:
            raise TypeError(
                f"JsonEncoder cannot encode {type(data).__name__}: {exc}; "
                "pass default=... to convert it"
            ) from exc


class JsonDecoder(Decoder):
    """UTF-8 JSON bytes to objects."""

    def __init__(self, object_hook: Callable[[dict], Any] | None = None) -> None:
        """``object_hook`` as for ``json.loads``."""
        self._decoder = json.JSONDecoder(object_hook=object_hook)

    def from_message(self, b: bytes | None) -> Any:
        """Parse ``b``; invalid JSON raises ``ValueError`` with the start of the bytes."""
        if b is None:
            return None
        try:
            return self._decoder.decode(str(b, "utf-8"))
        except ValueError as exc:
            raise ValueError(f"JsonDecoder: invalid JSON message {bytes(b[:60])!r}: {exc}") from exc


def for_topic(encoder: Any, topic: str) -> Any:
    """The encoder to use for ``topic``: ``encoder.for_topic(topic)`` when it has one (an
    encoder whose bytes depend on the topic, e.g. a Schema Registry serializer, which names
    its subject after it), else ``encoder`` itself.  Producers call this once per topic."""
    bind = getattr(encoder, "for_topic", None)
    return bind(topic) if bind is not None else encoder


def decode_function(dec: Any) -> Callable[[Any], Any] | None:
    """A decoder (or plain callable) as one function passing None through; None for
    DefaultDecoder, whose bytes a consumer hands out as they are (no call per record)."""
    if type(dec) is DefaultDecoder:
        return None
    fn = getattr(dec, "from_message", dec)

    def decode(b: bytes | None) -> Any:
        return None if b is None else fn(b)

    return decode
