"""Topic config changes for AlterConfigs and IncrementalAlterConfigs, with Kafka's answers.

Both APIs compute a topic's new set of overrides and hand it to the cluster view, which
validates it (unknown key or bad value: INVALID_CONFIG) and applies it to the open logs at
once.  Broker resources are refused as Kafka refuses static configs: the mini-broker has no
dynamic broker configuration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kclient.protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from kclient.protocol.apis.describe_configs import BROKER_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE
from kclient.protocol.errors import (
    BrokerResponseError,
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    InvalidConfigurationError,
    InvalidRequestError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kclient.protocol.framing import Request

from .authorizer import allowed
from .interface import Broker

__all__ = ["alter_resources", "current_overrides", "config_refusal"]

#: (broker, topic, current overrides) -> the new overrides, or an exception with Kafka's code.
Change = Callable[[Broker, str, dict[str, str]], dict[str, str]]


def current_overrides(broker: Broker, topic: str) -> dict[str, str]:
    """A topic's overrides as DescribeConfigs reports them (cluster view plus stored)."""
    overrides = dict(broker.cluster.configs.get(topic) or {})
    overrides.update(broker.log_manager.topic_overrides(topic))
    return overrides


def _result(res: Any, code: int = 0, message: str | None = None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": res.resource_type,
        "resource_name": res.resource_name,
    }


def _alter_topic(broker: Broker, res: Any, change: Change, validate_only: bool) -> dict[str, Any]:
    """Apply ``change`` to one topic."""
    try:
        if broker.cluster.partitions(res.resource_name) is None:
            raise UnknownTopicOrPartitionError(f"The topic '{res.resource_name}' does not exist.")
        new = change(broker, res.resource_name, current_overrides(broker, res.resource_name))
        broker.cluster.alter_config(res.resource_name, new, validate_only)
    except BrokerResponseError as exc:
        return _result(res, exc.errno, exc.context)
    return _result(res)


def _alter_broker(broker: Broker, res: Any) -> dict[str, Any]:
    """Broker configs are static here, as Kafka answers for a non-dynamic key."""
    if res.resource_name not in ("", str(broker.node_id)):
        return _result(
            res,
            InvalidRequestError.errno,
            f"Unexpected broker id, expected {broker.node_id} or empty string, but "
            f"received {res.resource_name}",
        )
    keys = ", ".join(c.name for c in res.configs)
    return _result(
        res, InvalidRequestError.errno, f"Cannot update these configs dynamically: Set({keys})"
    )


def _alter_group(broker: Broker, res: Any, change: Change, validate_only: bool) -> dict[str, Any]:
    """Apply ``change`` to a group's dynamic configuration (its share.* keys), on every live
    broker (as Kafka's are cluster metadata: any broker takes the request)."""
    try:
        new = change(broker, "", broker.share.group_config(res.resource_name))
        if validate_only:
            broker.share.settings.for_group(new)
        else:  # every live broker's share partitions of the group run with it
            broker.share.set_group_config(res.resource_name, new)
            for other in broker.cluster.live_brokers():
                share = getattr(other, "share", None)
                if other is not broker and share is not None:
                    share.set_group_config(res.resource_name, new)
    except BrokerResponseError as exc:
        return _result(res, exc.errno, exc.context)
    except ValueError as exc:
        return _result(res, InvalidConfigurationError.errno, str(exc))
    return _result(res)


def config_refusal(
    broker: Broker, request: Request, resource_type: int, name: str, operation: AclOperation
) -> int:
    """The error code when the principal may not perform ``operation`` (DescribeConfigs,
    AlterConfigs) on a config resource (a topic, or a broker: the cluster), else 0."""
    if resource_type == TOPIC_RESOURCE:
        ok = allowed(broker, request, operation, ResourceType.TOPIC, name)
        return 0 if ok else TopicAuthorizationFailedError.errno
    if resource_type == BROKER_RESOURCE:
        ok = allowed(broker, request, operation, ResourceType.CLUSTER, CLUSTER_NAME)
        return 0 if ok else ClusterAuthorizationFailedError.errno
    if resource_type == GROUP_RESOURCE:
        ok = allowed(broker, request, operation, ResourceType.GROUP, name)
        return 0 if ok else GroupAuthorizationFailedError.errno
    return 0


def alter_resources(
    broker: Broker, request: Request, change_for: Callable[[Any], Change]
) -> dict[str, Any]:
    """The response body of an alter request: ``change_for(resource)`` says what to do to it
    (without AlterConfigs on it: Kafka's authorization error)."""
    body: Any = request.body
    responses = []
    for res in body.resources:
        refusal = config_refusal(
            broker, request, res.resource_type, res.resource_name, AclOperation.ALTER_CONFIGS
        )
        if refusal:
            responses.append(_result(res, refusal, "Authorization failed."))
        elif res.resource_type == TOPIC_RESOURCE:
            responses.append(_alter_topic(broker, res, change_for(res), bool(body.validate_only)))
        elif res.resource_type == BROKER_RESOURCE:
            responses.append(_alter_broker(broker, res))
        elif res.resource_type == GROUP_RESOURCE:
            responses.append(_alter_group(broker, res, change_for(res), bool(body.validate_only)))
        else:
            responses.append(
                _result(
                    res, InvalidRequestError.errno, f"Unexpected resource type {res.resource_type}"
                )
            )
    return {"throttle_time_ms": 0, "responses": responses}
