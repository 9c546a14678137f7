"""AlterConfigs (key 33) v0-v2: replace a topic's whole set of config overrides."""

from __future__ import annotations

from typing import Any

from kclient.protocol.apis import ALTER_CONFIGS
from kclient.protocol.framing import Request

from ..config_changes import Change, alter_resources
from ..interface import Broker
from .registry import handles


def _replace(res: Any) -> Change:
    """The resource's configs become exactly those named (null values are dropped)."""
    new = {c.name: c.value for c in res.configs if c.value is not None}
    return lambda _broker, _topic, _current: new


@handles(ALTER_CONFIGS, "0-2")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Replace each resource's configs."""
    return alter_resources(broker, request, _replace)
