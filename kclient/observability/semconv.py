"""The OpenTelemetry messaging semantic conventions' names kclient uses, old and new.

The messaging conventions renamed several Kafka attributes (``messaging.kafka.message.offset``
became ``messaging.kafka.offset``, ``messaging.kafka.consumer.group`` became
``messaging.consumer.group.name``, ``messaging.operation`` became ``messaging.operation.type``
plus ``messaging.operation.name``, ...).  ``OTEL_SEMCONV_STABILITY_OPT_IN`` (a comma-separated
list, read when a client is made) chooses, as OpenTelemetry's instrumentations do:

* unset or ``messaging``: the current names (the default: kclient has no older users to keep);
* ``messaging/dup``: both, for a migration where dashboards read either;
* ``messaging/old``: only the names of semantic conventions 1.24 (what older instrumentations
  such as opentelemetry-instrumentation-confluent-kafka 0.48b0 emit).

This module imports nothing of OpenTelemetry: it only maps names.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

__all__ = ["Names", "names", "OPT_IN_ENV", "SYSTEM"]

OPT_IN_ENV = "OTEL_SEMCONV_STABILITY_OPT_IN"
SYSTEM = "kafka"

#: attribute -> its name before the rename (None: the attribute is new, nothing to emit)
_OLD: dict[str, str | None] = {
    "messaging.operation.type": "messaging.operation",
    "messaging.operation.name": None,
    "messaging.destination.partition.id": "messaging.kafka.destination.partition",
    "messaging.kafka.offset": "messaging.kafka.message.offset",
    "messaging.consumer.group.name": "messaging.kafka.consumer.group",
    "messaging.client.id": "messaging.client_id",
}
#: operation type -> its old value (``send`` was ``publish``)
_OLD_TYPE = {"send": "publish"}


class Names:
    """Turns kclient's attribute dicts (current names) into what the opt-in asks for."""

    def __init__(self, mode: str) -> None:
        if mode not in ("new", "dup", "old"):
            raise ValueError(f"semantic convention mode must be new, dup or old, not {mode!r}")
        self.mode = mode
        self.new, self.old = mode != "old", mode != "new"

    def attributes(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """``attrs`` (current names, None values dropped) in the chosen names."""
        return dict(self._pairs(attrs))

    def _pairs(self, attrs: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        for k, v in attrs.items():
            if v is None:
                continue
            if k not in _OLD:
                yield k, v
                continue
            if self.new:
                yield k, v
            old = _OLD[k]
            if self.old and old is not None:
                yield old, _old_value(k, v)

    def receive_kind_is_client(self) -> bool:
        """New conventions: a poll is a CLIENT span; the old ones made it CONSUMER."""
        return self.mode == "new"


def _old_value(key: str, value: Any) -> Any:
    if key == "messaging.operation.type":
        return _OLD_TYPE.get(value, value)
    if key == "messaging.destination.partition.id":
        return int(value)  # the old attribute was an int, the new one a string
    return value


def mode_from_env(value: str | None) -> str:
    """``new``, ``dup`` or ``old`` from an ``OTEL_SEMCONV_STABILITY_OPT_IN`` value."""
    opts = {o.strip() for o in (value or "").split(",") if o.strip()}
    if "messaging/dup" in opts:
        return "dup"
    if "messaging/old" in opts:
        return "old"
    return "new"


def names() -> Names:
    """The Names the environment asks for now (read once per client, at its construction)."""
    return Names(mode_from_env(os.environ.get(OPT_IN_ENV)))
