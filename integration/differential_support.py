"""Shared pieces of the differential tests (integration/test_differential*.py): the twin
fixtures (Kafka and a mini-broker side by side), ``check`` against the documented differences,
and request bodies and waits every case uses."""

from __future__ import annotations

import os
import re
import time
from typing import Any

from kclient.broker import MiniBroker
from kclient.broker.txn_log import partition_for
from kclient.protocol.apis import (
    CREATE_TOPICS,
    FETCH,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    JOIN_GROUP,
    LIST_OFFSETS,
    OFFSET_FETCH,
)
from kclient.protocol.records import build_batch, build_message_set
from kclient.testing.kafka import KIP848_TEST_SPEED

from .differential import Twin
from .differential_cases import CASES, DIFFERENT_ON_PURPOSE

#: Record timestamps are given explicitly, so both brokers store the same bytes (recent ones:
#: time-based retention must not delete them).
T0 = (int(time.time()) - 3600) * 1000
MINI_CONFIG = {
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "group.initial.rebalance.delay.ms": "0",
    **KIP848_TEST_SPEED,
}


def twin_pair(tmp_path_factory, real, name):
    """A Twin of ``real`` (a KafkaServer) and a fresh mini-broker, closed after use."""
    with MiniBroker(log_dir=tmp_path_factory.mktemp(name), config=MINI_CONFIG) as mini:
        twin = Twin(real.bootstrap, mini.bootstrap, real.major)
        yield twin
        twin.close()


def check(case: str, *twins: Twin) -> None:
    """The case's differences are exactly the ones documented as intended (fnmatch patterns
    (``*`` wildcards) of DIFFERENT_ON_PURPOSE, each matching at least one)."""
    assert case in CASES, f"{case} is missing from differential_cases.CASES"
    found = [f for twin in twins for f in twin.found.get(case, [])]
    patterns = DIFFERENT_ON_PURPOSE.get(case, {})
    details = "\n".join(f"  {p}: real={r!r} mini={m!r}" for p, r, m in found)
    dump = os.environ.get("KCLIENT_DIFF_DUMP")
    if dump:  # triage: write every difference down instead of failing
        with open(dump, "a") as out:
            out.write(f"== {case}\n{details}\n")
        return
    unexplained = [p for p, _, _ in found if not any(_matches(p, pat) for pat in patterns)]
    assert not unexplained, f"differences in {case}:\n{details}"
    for pattern in patterns:
        assert any(_matches(p, pattern) for p, _, _ in found), (
            f"{case}: documented difference {pattern!r} no longer occurs"
        )


def _matches(path: str, pattern: str) -> bool:
    """``*`` matches anything; everything else literally."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), path) is not None


def create(twin: Twin, name: str, partitions: int = 1, **configs: str) -> None:
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()],
            }
        ],
        "timeout_ms": 30000,
    }
    real, mini = twin.request(CREATE_TOPICS, 4, body, name)
    assert real["topics"][0]["error_code"] == 0, real
    _wait_leader(twin, name, partitions)


def _wait_leader(twin: Twin, topic: str, partitions: int = 1) -> None:
    """Until the real broker leads every partition (ListOffsets answers without error)."""
    deadline = time.monotonic() + 30
    body = {
        "replica_id": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [{"partition_index": p, "timestamp": -1} for p in range(partitions)],
            }
        ],
    }
    while time.monotonic() < deadline:
        resp = twin.real.request(LIST_OFFSETS, body, 1)
        if all(p.error_code == 0 for t in resp.topics for p in t.partitions):
            return
        time.sleep(0.1)
    raise TimeoutError(f"{topic}: no leader on the real broker")


def wait_transaction_coordinator(twin: Twin) -> None:
    """Until the real broker's transaction coordinator hands out producer ids (FindCoordinator
    makes Kafka create its transaction state topic)."""
    deadline = time.monotonic() + 60
    body = {"transactional_id": None, "transaction_timeout_ms": 60000}
    while time.monotonic() < deadline:
        twin.real.request(FIND_COORDINATOR, {"key": "warm-up", "key_type": 1}, 1)
        if twin.real.request(INIT_PRODUCER_ID, body, 2).error_code == 0:
            return
        time.sleep(0.2)
    raise TimeoutError("transaction coordinator not ready on the real broker")


def wait_coordinator(twin: Twin, group: str) -> None:
    """Until the real broker's group coordinator is loaded for ``group`` (FindCoordinator
    makes Kafka create its offsets topic)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        twin.real.request(FIND_COORDINATOR, {"key": group, "key_type": 0}, 1)
        resp = twin.real.request(OFFSET_FETCH, {"group_id": group, "topics": None}, 3)
        if resp.error_code == 0:
            return
        time.sleep(0.1)
    raise TimeoutError(f"group {group}: coordinator not ready on the real broker")


def produce_body(topic: str, records: bytes, acks: int = 1, partition: int = 0) -> dict:
    return {
        "acks": acks,
        "timeout_ms": 10000,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": records}]}
        ],
    }


def fetch_body(topic: str, offset: int = 0, max_bytes: int = 1 << 20, partition: int = 0) -> dict:
    return {
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "fetch_offset": offset,
                        "partition_max_bytes": max_bytes,
                    }
                ],
            }
        ],
    }


def batch(n: int, start: int = 0, size: int = 20) -> bytes:
    return build_batch(
        [b"%0*d" % (size, start + i) for i in range(n)],
        [b"k%d" % (start + i) for i in range(n)],
        [T0 + 1000 * (start + i) for i in range(n)],
    )


def message_set(n: int, magic: int, start: int = 0) -> bytes:
    return build_message_set(
        [b"v%d" % (start + i) for i in range(n)],
        [b"k%d" % (start + i) for i in range(n)],
        [T0 + 1000 * (start + i) for i in range(n)],
        magic=magic,
    )


def records_for(version: int, n: int, start: int = 0) -> bytes:
    """The record format a producer of that Produce version writes."""
    if version >= 3:
        return batch(n, start)
    return message_set(n, 1 if version == 2 else 0, start)


def join(
    twin: Twin,
    version: int,
    group: str,
    member: str = "",
    session: int = 10000,
    protocol_type: str = "consumer",
    label: str = "",
) -> tuple[dict, dict]:
    body = {
        "group_id": group,
        "session_timeout_ms": session,
        "rebalance_timeout_ms": 10000,
        "member_id": member,
        "protocol_type": protocol_type,
        "protocols": [{"name": "range", "metadata": b"m"}],
    }
    return twin.request(JOIN_GROUP, version, body, label)


#: The real member of g-err must outlive a loaded run: Kafka drops a member that neither syncs
#: nor heartbeats within its rebalance timeout, and an Empty group accepts any protocol type
#: (so "inconsistent protocol type" would become MEMBER_ID_REQUIRED).
LONG_MS = 120_000


def _quiet_markers(response: Any) -> Any:
    """A Fetch answer with the time of each transaction marker blanked: the coordinator stamps
    a marker with its own clock (a marker: a batch with a producer epoch and no sequence)."""
    if not isinstance(response, dict):
        return response
    for topic in response.get("responses", []):
        for part in topic["partitions"]:
            for b in part["records"].get("batches", []):
                if b["base_sequence"] == -1 and b["producer_epoch"] >= 0:
                    b["max_timestamp"] = "<marker time>"
                    b["records"] = [(o, "<marker time>", k, v, h) for o, _, k, v, h in b["records"]]
    return response


def warm_transactional_id(twin: Twin, tid: str) -> None:
    """Until the real broker coordinates ``tid``: its coordinator hands out producer ids and
    has loaded the id's __transaction_state partition (an id of the same partition, of the 4
    kclient.testing runs Kafka with, gets a producer id)."""
    wait_transaction_coordinator(twin)
    warm = next(
        f"warm-{i}" for i in range(10_000) if partition_for(f"warm-{i}", 4) == partition_for(tid, 4)
    )
    deadline = time.monotonic() + 60
    while (
        twin.real.request(FIND_COORDINATOR, {"key": tid, "key_type": 1}, 3).error_code
        or twin.real.request(
            INIT_PRODUCER_ID, {"transactional_id": warm, "transaction_timeout_ms": 60000}, 4
        ).error_code
    ):
        assert time.monotonic() < deadline
        time.sleep(0.2)


def _txn_fetch(twin: Twin, label: str, topic: str = "txn") -> None:
    """Both partitions of ``topic``, read_committed and read_uncommitted, at v4 and v11."""
    for version in (4, 11):
        for isolation in (1, 0):
            body = fetch_body(topic)
            body["isolation_level"] = isolation
            body["topics"][0]["partitions"].append(
                dict(body["topics"][0]["partitions"][0], partition=1)
            )
            twin.request(
                FETCH, version, body, f"{label} isolation {isolation}", view=_quiet_markers
            )
    for isolation in (1, 0):
        for t in (-1, -2):
            twin.request(
                LIST_OFFSETS,
                5,
                {
                    "replica_id": -1,
                    "isolation_level": isolation,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [{"partition_index": p, "timestamp": t} for p in (0, 1)],
                        }
                    ],
                },
                f"{label} isolation {isolation} at {t}",
                order_by={"partitions": "partition_index"},
            )
