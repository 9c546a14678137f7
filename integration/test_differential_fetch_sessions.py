"""Differential case "fetch sessions" (see test_differential.py): incremental fetch sessions
(KIP-227) on Kafka 4.x and a mini-broker alike, each side in the session it handed out: a full
fetch opening one, incremental fetches listing a moved partition, forgetting one, answering
only partitions with something new, the session errors, closing with epoch -1, and a session
whose last partition is forgotten."""

from __future__ import annotations

from typing import Any

from kclient.protocol.apis import FETCH, PRODUCE

from .differential import Twin
from .differential_support import batch, check, create, produce_body

CASE = "fetch sessions"
TOPIC = "fetch-sessions"
ORDER = {"responses": "topic", "partitions": "partition_index"}
UNKNOWN_ID = 0x7FFF0001


def _body(
    parts: dict[int, int], sid: int, epoch: int, forget: tuple[int, ...] = ()
) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": sid,
        "session_epoch": epoch,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 16}
                    for p, o in parts.items()
                ],
            }
        ]
        if parts
        else [],
        "forgotten_topics_data": [{"topic": TOPIC, "partitions": list(forget)}] if forget else [],
    }


class _Sessions:
    """Each side's session id, from the last full fetch's answer."""

    def __init__(self, twin: Twin, version: int) -> None:
        self.twin, self.version, self.ids = twin, version, {"real": 0, "mini": 0}

    def fetch(
        self,
        label: str,
        parts: dict[int, int],
        epoch: int,
        forget: tuple[int, ...] = (),
        sid: int | None = None,
    ) -> Any:
        real, _ = self.twin.request(
            FETCH,
            self.version,
            lambda side: _body(parts, self.ids[side] if sid is None else sid, epoch, forget),
            label,
            order_by=ORDER,
        )
        if epoch == 0:
            self.ids = {side: self.twin.last[side].session_id for side in self.ids}
        return real


def test_fetch_sessions(twin4):
    twin4.case = CASE
    create(twin4, TOPIC, 3)
    for p in (0, 1):
        twin4.request(PRODUCE, 7, produce_body(TOPIC, batch(3), partition=p))
    for version in (7, 12):
        s = _Sessions(twin4, version)
        opened = s.fetch("full", {0: 0, 1: 0, 2: 0}, 0)
        assert opened["session_id"] == "<id>" and len(opened["responses"][0]["partitions"]) == 3
        s.fetch("partition 0 moved", {0: 3}, 1)
        s.fetch("partition 1 forgotten", {}, 2, forget=(1,))
        twin4.request(PRODUCE, 7, produce_body(TOPIC, batch(1, version), partition=2))
        new = s.fetch("new data on partition 2", {}, 3)
        assert [p["partition_index"] for p in new["responses"][0]["partitions"]] == [2]
        s.fetch("a wrong epoch", {}, 9)
        s.fetch("an unknown session", {0: 0}, 1, sid=UNKNOWN_ID)
        s.fetch("closed with epoch -1", {0: 1}, -1)
        s.fetch("after closing", {}, 4)
        s.fetch("full again", {0: 3}, 0)
        s.fetch("its last partition forgotten", {}, 1, forget=(0,))
        s.fetch("after that", {}, 2)
    check(CASE, twin4)
