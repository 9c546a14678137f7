"""IncrementalAlterConfigs (key 44) v0-v1: SET, DELETE, APPEND or SUBTRACT single keys.

As Kafka: a key named twice in one resource is INVALID_REQUEST; APPEND/SUBTRACT on a key that
is not a list is INVALID_CONFIG; an unknown operation is INVALID_REQUEST.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from kclient.protocol.apis import INCREMENTAL_ALTER_CONFIGS
from kclient.protocol.apis.incremental_alter_configs import APPEND, DELETE, SET, SUBTRACT
from kclient.protocol.errors import InvalidConfigurationError, InvalidRequestError
from kclient.protocol.framing import Request

from ..config_changes import Change, alter_resources
from ..interface import Broker
from .describe_configs import LIST, TOPIC_CONFIGS, effective_value
from .registry import handles


def _apply(current: dict[str, str], op: Any, effective: Callable[[str], str | None]) -> None:
    """One operation on the overrides, in place; APPEND and SUBTRACT start from the value in
    effect (the default when not overridden), as Kafka's do."""
    name, value = op.name, op.value
    if op.config_operation == SET:
        current[name] = value if value is not None else ""
    elif op.config_operation == DELETE:
        current.pop(name, None)
    elif op.config_operation in (APPEND, SUBTRACT):
        if name not in TOPIC_CONFIGS or TOPIC_CONFIGS[name][2] != LIST:
            verb = "append" if op.config_operation == APPEND else "subtract"
            raise InvalidConfigurationError(
                f"Config value {verb} is not allowed for config key: {name}"
            )
        base = current[name] if name in current else (effective(name) or "")
        items = [v for v in base.split(",") if v]
        given = [v for v in (value or "").split(",") if v]
        if op.config_operation == APPEND:
            items += [v for v in given if v not in items]
        else:
            items = [v for v in items if v not in given]
        current[name] = ",".join(items)
    else:
        raise InvalidRequestError(f"Unknown operation type {op.config_operation}")


def _incremental(res: Any) -> Change:
    """Apply the resource's operations in order to its current overrides."""

    def change(broker: Broker, topic: str, current: dict[str, str]) -> dict[str, str]:
        twice = [n for n, k in Counter(c.name for c in res.configs).items() if k > 1]
        if twice:
            raise InvalidRequestError(f"Error due to duplicate config keys: {', '.join(twice)}")
        new = dict(current)
        for op in res.configs:
            _apply(new, op, lambda key: effective_value(broker, topic, key))
        return new

    return change


@handles(INCREMENTAL_ALTER_CONFIGS, "0-1")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Apply each resource's operations."""
    return alter_resources(broker, request, _incremental)
