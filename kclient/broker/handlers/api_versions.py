"""ApiVersions (key 18): the APIs this broker serves and their version ranges; from v3 also the
features it supports and has finalized (KIP-584): ``transaction.version`` 0-2, finalized at the
broker's ``transaction.version`` (clients use transactions v2 at level 2, KIP-890)."""

from __future__ import annotations

from typing import Any

from kclient.protocol.apis import API_VERSIONS
from kclient.protocol.apis.api_versions import feature_tags
from kclient.protocol.framing import Request

from ..interface import Broker
from ..network import api_versions_body
from ..txn_coordinator import TRANSACTION_VERSIONS, transaction_version
from .registry import handles, served_versions

#: the finalized features' epoch: the mini-broker's features change only with a restart
FEATURES_EPOCH = 1


@handles(API_VERSIONS, "0-3")
def handle(broker: Broker, request: Request) -> dict[str, Any]:
    """Every registered handler's API with the versions it declared it serves."""
    body = api_versions_body(served_versions())
    if request.header.api_version >= 3:
        coordinator = broker.txn_coordinator
        level = (
            coordinator.version if coordinator is not None else transaction_version(broker.config)
        )
        body["_tagged_fields"] = feature_tags(
            {"transaction.version": TRANSACTION_VERSIONS},
            {"transaction.version": (level, level)},
            FEATURES_EPOCH,
        )
    return body
