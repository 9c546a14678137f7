"""The value types of kclient's configuration keys (kclient.config's table uses them).

Each type's ``coerce`` turns a value given as a string (from a ``.properties`` file) or as a
Python object into the typed value, or raises ``BadValue`` naming what is allowed; ``allowed()``
says the same for documentation.
"""

from __future__ import annotations

import codecs
import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BadValue",
    "Int",
    "Bool",
    "Str",
    "Choice",
    "StrList",
    "Strategies",
    "Encoding",
    "Version",
    "HostPorts",
    "ZkConnect",
    "ClassRef",
    "Instance",
    "ENCODERS",
    "DECODERS",
    "PARTITIONERS",
]


class BadValue(ValueError):
    """A value a type cannot accept; carries the human description of what is allowed."""

    def __init__(self, allowed: str, detail: str = "") -> None:
        super().__init__(allowed)
        self.allowed, self.detail = allowed, detail


# --------------------------------------------------------------------------- value types


@dataclass(frozen=True)
class Int:
    """An integer, optionally bounded; strings like "5000" are accepted."""

    min: int | None = None
    max: int | None = None

    def allowed(self) -> str:
        """Human description, e.g. ``an integer >= 0``."""
        lo, hi = self.min, self.max
        if lo is not None and hi is not None:
            return f"an integer from {lo} to {hi}"
        if lo is not None:
            return f"an integer >= {lo}"
        return f"an integer <= {hi}" if hi is not None else "an integer"

    def coerce(self, value: Any) -> int:
        """The value as an int within bounds."""
        if isinstance(value, bool):
            raise BadValue(self.allowed())
        if isinstance(value, str):
            value = _parse_int(value.strip(), self.allowed())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int):
            raise BadValue(self.allowed())
        too_low = self.min is not None and value < self.min
        if too_low or (self.max is not None and value > self.max):
            raise BadValue(self.allowed())
        return value


def _parse_int(text: str, allowed: str) -> int:
    """``int(text)`` or a BadValue naming what is allowed."""
    try:
        return int(text)
    except ValueError:
        raise BadValue(allowed) from None


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


@dataclass(frozen=True)
class Bool:
    """A boolean; "true"/"false" (any case), yes/no, on/off and 1/0 are accepted."""

    def allowed(self) -> str:
        """Human description."""
        return "true or false"

    def coerce(self, value: Any) -> bool:
        """The value as a bool."""
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        text = value.strip().lower() if isinstance(value, str) else None
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise BadValue(self.allowed())


@dataclass(frozen=True)
class Str:
    """Free text."""

    def allowed(self) -> str:
        """Human description."""
        return "a string"

    def coerce(self, value: Any) -> str:
        """The value itself, if it is a str."""
        if not isinstance(value, str):
            raise BadValue(self.allowed())
        return value


@dataclass(frozen=True)
class Choice:
    """One of fixed values (case-insensitive), with value aliases (``all`` -> -1)."""

    values: tuple[Any, ...]
    aliases: Mapping[Any, Any] = field(default_factory=dict)

    def allowed(self) -> str:
        """Human description listing every accepted spelling."""
        shown = [str(v) for v in self.values]
        for alias, target in self.aliases.items():
            text = f"{alias} (= {target})"
            if str(alias) not in shown and text not in shown:
                shown.append(text)
        return "one of " + ", ".join(shown)

    def coerce(self, value: Any) -> Any:
        """The canonical value for ``value``."""
        if isinstance(value, bool):
            raise BadValue(self.allowed())
        key = value.strip().lower() if isinstance(value, str) else value
        if key in self.aliases:
            return self.aliases[key]
        for allowed in self.values:
            if key == allowed or (isinstance(key, str) and key == str(allowed)):
                return allowed
        raise BadValue(self.allowed())


@dataclass(frozen=True)
class StrList:
    """A comma-separated list (or a Python list) of names, stored as a tuple."""

    def allowed(self) -> str:
        """Human description."""
        return "a comma-separated list of names"

    def coerce(self, value: Any) -> tuple[str, ...]:
        """The names, stripped, empties dropped."""
        if isinstance(value, str):
            value = value.split(",")
        if not isinstance(value, (list, tuple, set, frozenset)) or not all(
            isinstance(v, str) for v in value
        ):
            raise BadValue(self.allowed())
        return tuple(v.strip() for v in value if v.strip())


_STRATEGY_NAMES = {
    "range": "range",
    "roundrobin": "roundrobin",
    "round-robin": "roundrobin",
    "cooperative-sticky": "cooperative-sticky",
    "org.apache.kafka.clients.consumer.rangeassignor": "range",
    "org.apache.kafka.clients.consumer.roundrobinassignor": "roundrobin",
    "org.apache.kafka.clients.consumer.cooperativestickyassignor": "cooperative-sticky",
}


@dataclass(frozen=True)
class Strategies:
    """``partition.assignment.strategy``: one assignor or a preference list (comma-separated
    or a Python list) of range / roundrobin / cooperative-sticky, or Java's class names of
    them; stored as the comma-joined protocol names."""

    def allowed(self) -> str:
        """Human description."""
        return (
            "range, roundrobin or cooperative-sticky (or Java's RangeAssignor / "
            "RoundRobinAssignor / CooperativeStickyAssignor class names), or a "
            "comma-separated preference list of them"
        )

    def coerce(self, value: Any) -> str:
        """The canonical comma-joined protocol names."""
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) for v in items):
            raise BadValue(self.allowed())
        names: list[str] = []
        for item in (v.strip().lower() for v in items if v.strip()):
            name = _STRATEGY_NAMES.get(item)
            if name is None:
                raise BadValue(self.allowed())
            if name not in names:
                names.append(name)
        if not names:
            raise BadValue(self.allowed())
        return ",".join(names)


@dataclass(frozen=True)
class Encoding:
    """A Python codec name (the 0.8 ``serializer.encoding``, e.g. UTF8)."""

    def allowed(self) -> str:
        """Human description."""
        return "a text encoding name such as utf-8"

    def coerce(self, value: Any) -> str:
        """The codec's canonical name."""
        try:
            return codecs.lookup(value).name
        except (LookupError, TypeError):
            raise BadValue(self.allowed()) from None


_VERSION = re.compile(r"^\d+\.\d+(\.\d+){0,2}$")


@dataclass(frozen=True)
class Version:
    """A Kafka broker version such as 0.8.2 or 2.1.0 (as librdkafka's broker.version.fallback)."""

    def allowed(self) -> str:
        """Human description."""
        return "a Kafka version such as 0.8.2, 0.9.0, 0.10.0 or 2.1.0"

    def coerce(self, value: Any) -> str:
        """The version string, checked."""
        if not isinstance(value, str) or not _VERSION.match(value.strip()):
            raise BadValue(self.allowed())
        return value.strip()


@dataclass(frozen=True)
class HostPorts:
    """``host1:port1,host2:port2`` -> ``((host, port), ...)``; 0.7's ``id:host:port`` accepted."""

    default_port: int = 9092

    def allowed(self) -> str:
        """Human description."""
        return "host:port[,host:port...] (e.g. 127.0.0.1:9092)"

    def coerce(self, value: Any) -> tuple[tuple[str, int], ...]:
        """The address list, each port checked; at least one address."""
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise BadValue(self.allowed())
        out = tuple(self._one(item) for item in items if not _blank(item))
        if not out:
            raise BadValue(self.allowed(), "no address given")
        return out

    def _one(self, item: Any) -> tuple[str, int]:
        """One address from ``"host:port"`` or a ``(host, port)`` pair."""
        if isinstance(item, (tuple, list)) and len(item) == 2:
            host, port = str(item[0]), item[1]
        elif isinstance(item, str):
            host, port = _split_host_port(item.strip(), self.default_port, self.allowed())
        else:
            raise BadValue(self.allowed())
        return host, _port(port, self.allowed())


def _blank(item: Any) -> bool:
    """An empty entry of a comma list (``"a:1,,b:2"``)."""
    return isinstance(item, str) and not item.strip()


def _split_host_port(text: str, default_port: int, allowed: str) -> tuple[str, Any]:
    """Split ``host:port``, ``[v6]:port``, 0.7's ``id:host:port`` and ``plaintext://host:port``."""
    if text.lower().startswith("plaintext://"):
        text = text[len("plaintext://") :]
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else default_port
    parts = text.split(":")
    if len(parts) == 3 and parts[0].isdigit():
        parts = parts[1:]
    if len(parts) == 1:
        return parts[0], default_port
    if len(parts) == 2 and parts[0]:
        return parts[0], parts[1]
    raise BadValue(allowed, f"cannot parse {text!r}")


def _port(port: Any, allowed: str) -> int:
    """A TCP port number 1..65535."""
    try:
        number = int(port)
    except (TypeError, ValueError):
        raise BadValue(allowed, f"bad port {port!r}") from None
    if not 0 < number < 65536:
        raise BadValue(allowed, f"port {number} out of range")
    return number


@dataclass(frozen=True)
class ZkConnect:
    """A ZooKeeper connect string ``host:port[,host:port...][/chroot]``, kept as a string."""

    def allowed(self) -> str:
        """Human description."""
        return "host:port[,host:port...][/chroot] (e.g. 127.0.0.1:2181/kafka)"

    def coerce(self, value: Any) -> str:
        """The connect string, each host:port checked."""
        if isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        if not isinstance(value, str) or not value.strip():
            raise BadValue(self.allowed())
        hosts, slash, chroot = value.strip().partition("/")
        for item in hosts.split(","):
            host, port = _split_host_port(item.strip(), 2181, self.allowed())
            if not host:
                raise BadValue(self.allowed(), f"no host in {item!r}")
            _port(port, self.allowed())
        return hosts + slash + chroot.rstrip("/") if chroot else hosts


ENCODERS = {
    "default": "kclient.encoders.DefaultEncoder",
    "bytes": "kclient.encoders.DefaultEncoder",
    "string": "kclient.encoders.StringEncoder",
    "json": "kclient.encoders.JsonEncoder",
    "kafka.serializer.DefaultEncoder": "kclient.encoders.DefaultEncoder",
    "kafka.serializer.StringEncoder": "kclient.encoders.StringEncoder",
    "org.apache.kafka.common.serialization.ByteArraySerializer": "kclient.encoders.DefaultEncoder",
    "org.apache.kafka.common.serialization.StringSerializer": "kclient.encoders.StringEncoder",
}
DECODERS = {
    "default": "kclient.encoders.DefaultDecoder",
    "bytes": "kclient.encoders.DefaultDecoder",
    "string": "kclient.encoders.StringDecoder",
    "json": "kclient.encoders.JsonDecoder",
    "kafka.serializer.DefaultDecoder": "kclient.encoders.DefaultDecoder",
    "kafka.serializer.StringDecoder": "kclient.encoders.StringDecoder",
    "org.apache.kafka.common.serialization.ByteArrayDeserializer": "kclient.encoders.DefaultDecoder",
    "org.apache.kafka.common.serialization.StringDeserializer": "kclient.encoders.StringDecoder",
}
# fmt: off
PARTITIONERS = {
    "default": "kclient.partitioner.DefaultPartitioner",
    "murmur2": "kclient.partitioner.DefaultPartitioner",
    "roundrobin": "kclient.partitioner.RoundRobinPartitioner",
    "javahash": "kclient.partitioner.JavaHashPartitioner",
    "kafka.producer.DefaultPartitioner": "kclient.partitioner.JavaHashPartitioner",
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner":
        "kclient.partitioner.DefaultPartitioner",
    "org.apache.kafka.clients.producer.RoundRobinPartitioner":
        "kclient.partitioner.RoundRobinPartitioner",
}
# fmt: on


@dataclass(frozen=True)
class ClassRef:
    """A class or an object, or a dotted path (``pkg.mod.Class`` or ``pkg.mod:Class``) to import.

    ``method`` is the method the class or object must have (``to_message``, ``partition``, ...).
    ``shortcuts`` maps short names and the Java class names of the 0.8 client to kclient classes.
    """

    method: str | None = None
    shortcuts: Mapping[str, str] = field(default_factory=dict)
    #: a plain callable (a function, a lambda, ``json.dumps``) stands in for an object with
    #: ``method``, as kafka-python and confluent-kafka take serializers
    plain_callable: bool = False

    def allowed(self) -> str:
        """Human description."""
        need = f" with a {self.method}() method" if self.method else ""
        names = [k for k in self.shortcuts if "." not in k]
        short = f", or one of {', '.join(names)}" if names else ""
        plain = ", or a plain callable" if self.plain_callable else ""
        return f"a class or object{need}, or a dotted path to one{short}{plain}"

    def coerce(self, value: Any) -> Any:
        """The imported class, or the object as given; its interface checked."""
        if isinstance(value, str):
            value = _import(self.shortcuts.get(value.strip(), value.strip()), self.allowed())
        if self.method and not callable(getattr(value, self.method, None)):
            if self.plain_callable and callable(value) and not isinstance(value, type):
                return value
            raise BadValue(self.allowed(), f"{value!r} has no {self.method}() method")
        return value


def _import(path: str, allowed: str) -> Any:
    """Import ``pkg.mod.Name`` or ``pkg.mod:Name``."""
    module_name, sep, attr = path.partition(":") if ":" in path else path.rpartition(".")
    if not module_name or not attr:
        raise BadValue(allowed, f"{path!r} is not a dotted path")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise BadValue(allowed, f"cannot import {path!r}: {exc}") from None


@dataclass(frozen=True)
class Instance:
    """An object of one class, given as is (``ssl.context``: an ``ssl.SSLContext``)."""

    cls: type

    def allowed(self) -> str:
        """Human description."""
        return f"a {self.cls.__module__}.{self.cls.__qualname__} object"

    def coerce(self, value: Any) -> Any:
        """The object, if it is an instance of the class."""
        if not isinstance(value, self.cls):
            raise BadValue(self.allowed())
        return value
