"""Raw share-group requests for the mini-broker tests (heartbeat, fetch, acknowledge, configs)."""

from __future__ import annotations

from typing import Any

from kclient.protocol.apis import (
    INCREMENTAL_ALTER_CONFIGS,
    SHARE_ACKNOWLEDGE,
    SHARE_FETCH,
    SHARE_GROUP_HEARTBEAT,
)
from kclient.protocol.records import RecordsReader

GROUP_RESOURCE, SET = 32, 0
ACCEPT, RELEASE, REJECT = 1, 2, 3


class ShareMember:
    """One share-group member speaking raw requests over one connection."""

    def __init__(self, client: Any, group: str, member_id: str) -> None:
        self.client, self.group, self.member_id = client, group, member_id
        self.epoch, self.session_epoch = 0, 0

    def heartbeat(self, topics: list[str] | None = None, epoch: int | None = None) -> Any:
        r = self.client.request(
            SHARE_GROUP_HEARTBEAT,
            1,
            {
                "group_id": self.group,
                "member_id": self.member_id,
                "member_epoch": self.epoch if epoch is None else epoch,
                "rack_id": None,
                "subscribed_topic_names": topics,
            },
        )
        if r.error_code == 0:
            self.epoch = r.member_epoch
        return r

    def fetch(
        self,
        topic_id: bytes,
        partitions: list[int],
        acks: dict[int, list[tuple[int, int, int]]] | None = None,
        max_records: int = 500,
        wait_ms: int = 0,
        epoch: int | None = None,
    ) -> Any:
        """One ShareFetch (acknowledgements piggy-backed); the session epoch moves on."""
        acks = acks or {}
        body = {
            "group_id": self.group,
            "member_id": self.member_id,
            "share_session_epoch": self.session_epoch if epoch is None else epoch,
            "max_wait_ms": wait_ms,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "max_records": max_records,
            "batch_size": max_records,
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition_index": p,
                            "acknowledgement_batches": [
                                {"first_offset": a, "last_offset": b, "acknowledge_types": [t]}
                                for a, b, t in acks.get(p, [])
                            ],
                        }
                        for p in partitions
                    ],
                }
            ],
            "forgotten_topics_data": [],
        }
        r = self.client.request(SHARE_FETCH, 1, body)
        if r.error_code == 0 and epoch is None:
            self.session_epoch += 1
        return r

    def acknowledge(
        self, topic_id: bytes, acks: dict[int, list[tuple[int, int, int]]], epoch: int | None = None
    ) -> Any:
        r = self.client.request(
            SHARE_ACKNOWLEDGE,
            1,
            {
                "group_id": self.group,
                "member_id": self.member_id,
                "share_session_epoch": self.session_epoch if epoch is None else epoch,
                "topics": [
                    {
                        "topic_id": topic_id,
                        "partitions": [
                            {
                                "partition_index": p,
                                "acknowledgement_batches": [
                                    {"first_offset": a, "last_offset": b, "acknowledge_types": [t]}
                                    for a, b, t in batch
                                ],
                            }
                            for p, batch in acks.items()
                        ],
                    }
                ],
            },
        )
        if r.error_code == 0 and epoch is None:
            self.session_epoch += 1
        return r


def acquired(response: Any) -> dict[int, list[tuple[int, int, int]]]:
    """partition -> its acquired (first, last, delivery count) ranges."""
    return {
        p.partition_index: [
            (a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records
        ]
        for t in response.responses
        for p in t.partitions
        if p.acquired_records
    }


def values(response: Any) -> dict[int, list[tuple[int, bytes]]]:
    """partition -> (offset, value) of the acquired records in the answer."""
    out: dict[int, list[tuple[int, bytes]]] = {}
    for t in response.responses:
        for p in t.partitions:
            ranges = [(a.first_offset, a.last_offset) for a in p.acquired_records]
            for record in RecordsReader(p.records or b"").records():
                if any(a <= record.offset <= b for a, b in ranges):
                    out.setdefault(p.partition_index, []).append((record.offset, record.value))
    return out


def set_group_config(client: Any, group: str, **configs: str) -> Any:
    """IncrementalAlterConfigs SET on a GROUP resource (keys with dots as underscores)."""
    r = client.request(
        INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": GROUP_RESOURCE,
                    "resource_name": group,
                    "configs": [
                        {"name": k.replace("_", "."), "config_operation": SET, "value": v}
                        for k, v in configs.items()
                    ],
                }
            ],
            "validate_only": False,
        },
    )
    return r.responses[0]
