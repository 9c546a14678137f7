"""Request handlers, one module per API; ``HANDLERS[api_key](broker, request)`` answers a request.

A handler returns a response body (a dict or Struct for the request's version), None (no
response, Produce with acks=0) or a ``concurrent.futures.Future`` resolving to a body.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import (
    api_versions,
    create_topics,
    delete_topics,
    describe_configs,
    describe_groups,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_fetch,
    produce,
    sync_group,
)

__all__ = ["HANDLERS"]

#: API key -> handler, for the APIs of kclient.protocol.apis.
HANDLERS: dict[int, Callable[[Any, Any], Any]] = {
    0: produce.handle,
    1: fetch.handle,
    2: list_offsets.handle,
    3: metadata.handle,
    8: offset_commit.handle,
    9: offset_fetch.handle,
    10: find_coordinator.handle,
    11: join_group.handle,
    12: heartbeat.handle,
    13: leave_group.handle,
    14: sync_group.handle,
    15: describe_groups.handle,
    16: list_groups.handle,
    18: api_versions.handle,
    19: create_topics.handle,
    20: delete_topics.handle,
    22: init_producer_id.handle,
    32: describe_configs.handle,
}
