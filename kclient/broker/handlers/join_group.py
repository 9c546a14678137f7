"""JoinGroup (key 11) v0-v7: enter a group's rebalance; answered once the join phase ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import JOIN_GROUP
from kclient.protocol.errors import GroupAuthorizationFailedError
from kclient.protocol.framing import Request

from ..authorizer import allowed
from ..coordinator import then
from ..group import NOT_COORDINATOR, JoinRequest, join_error
from ..interface import Broker, body_of, is_local_coordinator
from .registry import handles


def _for_version(version: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Fit a coordinator reply to a version (protocol_name is only nullable from v7)."""

    def adapt(body: dict[str, Any]) -> dict[str, Any]:
        body = dict(body, throttle_time_ms=0)
        if version < 7 and body["protocol_name"] is None:
            body["protocol_name"] = ""
        return body

    return adapt


@handles(JOIN_GROUP, "0-7")
def handle(broker: Broker, request: Request) -> Any:
    """Join the group on the coordinator; returns a Future while the rebalance is under way."""
    body, version = body_of(request), request.header.api_version
    adapt = _for_version(version)
    if not allowed(broker, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return adapt(join_error(GroupAuthorizationFailedError.errno, body.member_id))
    if not is_local_coordinator(broker, body.group_id):
        return adapt(join_error(NOT_COORDINATOR, body.member_id))
    req = JoinRequest(
        group_id=body.group_id,
        member_id=body.member_id or "",
        protocol_type=body.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in body.protocols],
        session_timeout_ms=body.session_timeout_ms,
        rebalance_timeout_ms=body.rebalance_timeout_ms if version >= 1 else -1,
        client_id=request.header.client_id or "",
        client_host="/" + request.client_host if request.client_host else "",
        group_instance_id=getattr(body, "group_instance_id", None),
        require_known_member=version >= 4,
    )
    return then(broker.coordinator.join_group(req), adapt)
