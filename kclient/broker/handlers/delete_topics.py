"""DeleteTopics (key 20): delete topics by name, with a per-topic error code."""
from __future__ import annotations

from typing import Any

from kclient.protocol.errors import BrokerResponseError, TopicDeletionDisabledError
from kclient.protocol.framing import Request


def _delete(broker: Any, name: str) -> dict:
    """Delete one topic; returns its response entry."""
    if not broker.config.get_bool("delete.topic.enable"):
        return {"name": name, "error_code": TopicDeletionDisabledError.errno,
                "error_message": "delete.topic.enable is false"}
    try:
        broker.cluster.delete_topic(name)
    except BrokerResponseError as exc:
        return {"name": name, "error_code": exc.errno, "error_message": str(exc)}
    return {"name": name, "error_code": 0, "error_message": None}


def handle(broker: Any, request: Request) -> dict:
    """Delete every named topic."""
    return {"throttle_time_ms": 0,
            "responses": [_delete(broker, name) for name in request.body.topic_names]}
