"""DeleteTopics (key 20): delete topics by name, with a per-topic error code."""

from __future__ import annotations

from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import DELETE_TOPICS
from kclient.protocol.errors import (
    BrokerResponseError,
    TopicAuthorizationFailedError,
    TopicDeletionDisabledError,
)
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..interface import Broker, body_of
from .registry import handles


def _delete(broker: Broker, request: Request, name: str) -> dict[str, Any]:
    """Delete one topic (without Delete on it: TOPIC_AUTHORIZATION_FAILED and its files kept);
    returns its response entry."""
    if not allowed(broker, request, AclOperation.DELETE, ResourceType.TOPIC, name):
        return {
            "name": name,
            "error_code": TopicAuthorizationFailedError.errno,
            "error_message": "Authorization failed.",
        }
    if not broker.config.get_bool("delete.topic.enable"):
        return {
            "name": name,
            "error_code": TopicDeletionDisabledError.errno,
            "error_message": "delete.topic.enable is false",
        }
    try:
        broker.cluster.delete_topic(name)
    except BrokerResponseError as exc:
        return {"name": name, "error_code": exc.errno, "error_message": exc.context}
    return {"name": name, "error_code": 0, "error_message": None}


@handles(DELETE_TOPICS, "0-5")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Delete every named topic."""
    return {
        "throttle_time_ms": 0,
        "responses": [_delete(broker, request, name) for name in body_of(request).topic_names],
    }
