"""Request handlers, one module per API; ``HANDLERS[api_key](broker, request)`` answers a request.

A handler returns a response body (a dict or Struct for the request's version), None (no
response, Produce with acks=0) or a ``concurrent.futures.Future`` resolving to a body.
"""
from __future__ import annotations

import importlib
import logging
from typing import Any, Callable

__all__ = ["HANDLERS", "MODULES"]

log = logging.getLogger("kclient.broker.handlers")

#: API key -> module name in this package.
MODULES: dict[int, str] = {
    0: "produce",
    1: "fetch",
    2: "list_offsets",
    3: "metadata",
    8: "offset_commit",
    9: "offset_fetch",
    10: "find_coordinator",
    11: "join_group",
    12: "heartbeat",
    13: "leave_group",
    14: "sync_group",
    18: "api_versions",
    19: "create_topics",
    20: "delete_topics",
}


def _load() -> dict[int, Callable[[Any, Any], Any]]:
    """Import every handler module (all fourteen are expected to exist)."""
    handlers = {}
    for key, name in MODULES.items():
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name not in (f"{__name__}.{name}", "kclient.broker.coordinator"):
                raise
            log.warning("no handler module %s: api key %d is not served", name, key)
            continue
        handlers[key] = module.handle
    return handlers


HANDLERS: dict[int, Callable[[Any, Any], Any]] = _load()
