"""Request handlers, one module per API, each registering itself with ``@handles(API, versions)``.

``HANDLERS[api].handle(broker, request)`` answers a request: a response body (a dict or Struct
for the request's version), None (no response, Produce with acks=0) or a
``concurrent.futures.Future`` resolving to a body.  Importing this package imports every handler
module, so :data:`HANDLERS` (and the ApiVersions answer derived from it) is complete.
"""
from __future__ import annotations

from . import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    alter_share_group_offsets,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_share_group_offsets,
    delete_topics,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_share_group_offsets,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
    sync_group,
    txn_offset_commit,
    write_txn_markers,
)
from .registry import HANDLERS, Handler, Registration, handles, served_versions

__all__ = ["HANDLERS", "HANDLER_MODULES", "Handler", "Registration", "handles",
           "served_versions"]

#: Every handler module (importing one registers its handler).
HANDLER_MODULES = (
    add_offsets_to_txn, add_partitions_to_txn, end_txn, txn_offset_commit, write_txn_markers,
    alter_configs, api_versions, create_partitions, create_topics, delete_groups, delete_records,
    incremental_alter_configs, delete_topics, describe_cluster, describe_configs,
    describe_groups, fetch, find_coordinator, heartbeat, init_producer_id, join_group,
    leave_group, list_groups, list_offsets, metadata, offset_commit, offset_delete,
    offset_fetch, produce, sasl_authenticate, sasl_handshake, sync_group, create_acls,
    delete_acls, describe_acls, consumer_group_heartbeat, consumer_group_describe,
    share_group_heartbeat, share_group_describe, share_fetch, share_acknowledge,
    describe_share_group_offsets, alter_share_group_offsets, delete_share_group_offsets,
)
