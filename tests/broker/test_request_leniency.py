"""Every request version the broker accepts, sent through a socket with trailing bytes and (in
flexible versions) unknown tagged fields, gets the answer the clean request gets.

Brokers run in lockstep pairs: the clean request goes to one, the altered one to its twin, so
requests that change state (Produce, JoinGroup, CreateTopics...) are compared fairly.
"""

from __future__ import annotations

import itertools
import re
import socket
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kclient.broker import MiniBroker
from kclient.broker.versions import accepted_versions, versions_markdown
from kclient.protocol.apis import API_VERSIONS, APIS
from kclient.protocol.framing import API_VERSIONS_KEY
from kclient.protocol.records import build_batch, build_message_set
from kclient.protocol.types import NULLABLE_STRING, read_tagged_fields
from tests.conftest import encode_with_unknown_tags, unknown_tag_section

DOCS = Path(__file__).resolve().parents[2] / "docs" / "protocol_versions.md"
ACCEPTED = accepted_versions()
SUFFIX = b"\x00\xff\x01trailing\x00\x00\x00\x00"
BROKER_CONFIG = {"group.initial.rebalance.delay.ms": 0, "auto.create.topics.enable": "true"}


def _records(produce_version: int) -> bytes:
    stamps = [1_700_000_000_000, 1_700_000_000_001]
    if produce_version < 2:
        return build_message_set([b"v0", b"v1"], [b"k", None], magic=0)
    if produce_version == 2:
        return build_message_set([b"v0", b"v1"], [b"k", None], stamps, magic=1)
    return build_batch([b"v0", b"v1"], [b"k", None], stamps)


def sample(api, version: int, n: int) -> dict:
    """A meaningful request body for ``api`` at ``version``; ``n`` names its groups/topics."""
    group = f"{api.name.lower()}-{n}"
    make = SAMPLES.get(api.name)
    return make(version, group, n) if make else {}


SAMPLES = {
    "Produce": lambda v, g, n: {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "t", "partition_data": [{"index": n % 2, "records": _records(v)}]}],
    },
    "Fetch": lambda v, g, n: {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "topics": [
            {
                "topic": "t",
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
    },
    "ListOffsets": lambda v, g, n: {
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "timestamp": -1},
                    {"partition_index": 1, "timestamp": -2},
                ],
            }
        ]
    },
    "Metadata": lambda v, g, n: {"topics": [{"name": "t"}, {"name": f"auto-{n}"}]},
    "OffsetCommit": lambda v, g, n: {
        "group_id": "committed",
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": n}]}],
    },
    "OffsetFetch": lambda v, g, n: {
        "group_id": "committed",
        "topics": [{"name": "t", "partition_indexes": [0, 1]}],
    },
    "FindCoordinator": lambda v, g, n: {"key": g},
    "JoinGroup": lambda v, g, n: {
        "group_id": g,
        "session_timeout_ms": 30000,
        "rebalance_timeout_ms": 30000,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\x00\x01"}],
    },
    "Heartbeat": lambda v, g, n: {"group_id": g, "generation_id": 1, "member_id": "m"},
    "LeaveGroup": lambda v, g, n: {
        "group_id": g,
        "member_id": "m",
        "members": [{"member_id": "m"}],
    },
    "SyncGroup": lambda v, g, n: {
        "group_id": g,
        "generation_id": 1,
        "member_id": "m",
        "assignments": [],
    },
    "CreateTopics": lambda v, g, n: {
        "timeout_ms": 5000,
        "topics": [
            {"name": g, "num_partitions": 2, "replication_factor": 1},
            {"name": "t", "num_partitions": 1, "replication_factor": 1},
        ],
    },
    "DeleteTopics": lambda v, g, n: {"timeout_ms": 5000, "topic_names": [f"doomed-{n}", "missing"]},
    "DescribeConfigs": lambda v, g, n: {
        "resources": [
            {"resource_type": 2, "resource_name": "t", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "0", "configuration_keys": ["log.retention.ms"]},
        ]
    },
    "DescribeGroups": lambda v, g, n: {"groups": ["committed", "joingroup-0", "missing"]},
    "ListGroups": lambda v, g, n: {},
    "ConsumerGroupHeartbeat": lambda v, g, n: {
        "group_id": g,
        "member_id": f"member-{n}",
        "member_epoch": 0,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": ["t"],
        "topic_partitions": [],
    },
    "ConsumerGroupDescribe": lambda v, g, n: {"group_ids": ["consumergroupheartbeat-0", "missing"]},
    "OffsetDelete": lambda v, g, n: {
        "group_id": "committed",
        "topics": [{"name": "t", "partitions": [{"partition_index": 1}]}],
    },
    "InitProducerId": lambda v, g, n: {"transaction_timeout_ms": 60000},
    # transactions of an id never initialized: INVALID_PRODUCER_ID_MAPPING / INVALID_TXN_STATE
    "AddPartitionsToTxn": lambda v, g, n: {
        "v3_and_below_transactional_id": g,
        "v3_and_below_producer_id": 5,
        "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": "t", "partitions": [0, 1]}],
        "transactions": [
            {
                "transactional_id": g,
                "producer_id": 5,
                "producer_epoch": 0,
                "verify_only": True,
                "topics": [{"name": "t", "partitions": [0]}],
            }
        ],
    },
    "AddOffsetsToTxn": lambda v, g, n: {
        "transactional_id": g,
        "producer_id": 5,
        "producer_epoch": 0,
        "group_id": "committed",
    },
    "EndTxn": lambda v, g, n: {
        "transactional_id": g,
        "producer_id": 5,
        "producer_epoch": 0,
        "committed": True,
    },
    "TxnOffsetCommit": lambda v, g, n: {
        "transactional_id": g,
        "group_id": "committed",
        "producer_id": 5,
        "producer_epoch": 0,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
    },
    # markers carry their broker's clock: into t-1, which no sample fetches
    "WriteTxnMarkers": lambda v, g, n: {
        "markers": [
            {
                "producer_id": 5,
                "producer_epoch": 0,
                "transaction_result": False,
                "topics": [{"name": "t", "partition_indexes": [1]}],
                "coordinator_epoch": 0,
            }
        ]
    },
}
_ACL_FILTER = {
    "resource_type_filter": 2,
    "resource_name_filter": "t",
    "pattern_type_filter": 3,
    "principal_filter": None,
    "host_filter": None,
    "operation": 1,
    "permission_type": 1,
}
# without an authorizer (as here) the ACL APIs answer SECURITY_DISABLED, as Kafka does
SAMPLES.update(
    {
        "DescribeAcls": lambda v, g, n: dict(_ACL_FILTER),
        "CreateAcls": lambda v, g, n: {
            "creations": [
                {
                    "resource_type": 2,
                    "resource_name": "t",
                    "resource_pattern_type": 3,
                    "principal": "User:alice",
                    "host": "*",
                    "operation": 4,
                    "permission_type": 3,
                }
            ]
        },
        "DeleteAcls": lambda v, g, n: {"filters": [dict(_ACL_FILTER)]},
    }
)
TXN_APIS = ("AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit")
# share groups: a join, a session opened without topics (their ids differ between twins), an
# acknowledgement closing a session never opened (SHARE_SESSION_NOT_FOUND), offsets altered
# then deleted in one group
SAMPLES.update(
    {
        "ShareGroupHeartbeat": lambda v, g, n: {
            "group_id": g,
            "member_id": f"m{n}",
            "member_epoch": 0,
            "subscribed_topic_names": ["t"],
        },
        "ShareGroupDescribe": lambda v, g, n: {"group_ids": ["sharegroupheartbeat-0", "missing"]},
        "ShareFetch": lambda v, g, n: {
            "group_id": g,
            "member_id": "m",
            "share_session_epoch": 0,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "max_records": 10,
            "batch_size": 10,
            "topics": [],
            "forgotten_topics_data": [],
        },
        "ShareAcknowledge": lambda v, g, n: {
            "group_id": g,
            "member_id": "m",
            "share_session_epoch": -1,
            "topics": [],
        },
        "DescribeShareGroupOffsets": lambda v, g, n: {
            "groups": [{"group_id": "shared", "topics": None}]
        },
        "AlterShareGroupOffsets": lambda v, g, n: {
            "group_id": "shared",
            "topics": [
                {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 0}]}
            ],
        },
        "DeleteShareGroupOffsets": lambda v, g, n: {
            "group_id": "shared",
            "topics": [{"topic_name": "t"}],
        },
    }
)


class Wire:
    """A raw socket to one broker: sends frame bytes as given, returns decoded answers."""

    def __init__(self, broker: MiniBroker):
        self.sock = socket.create_connection((broker.host, broker.port), timeout=20)
        self.port = broker.port
        self.corr = itertools.count(1)

    def frame(
        self, api, version: int, body: dict, variant: str, suffix: bytes = SUFFIX
    ) -> tuple[int, bytes]:
        """The request frame, clean or altered as ``variant`` says."""
        corr = next(self.corr)
        head = [struct.pack(">hhi", api.key, version, corr)]
        NULLABLE_STRING.write("leniency", head)
        flexible = api.is_flexible(version)
        if variant == "tagged":
            assert flexible
            payload = unknown_tag_section() + encode_with_unknown_tags(
                api.request_codec(version), body
            )
        else:
            payload = (b"\x00" if flexible else b"") + b"".join(api.encode_request(version, body))
        if variant == "trailing":
            payload += suffix
        data = b"".join(head) + payload
        return corr, struct.pack(">i", len(data)) + data

    def ask(
        self, api, version: int, body: dict, variant: str = "clean", suffix: bytes = SUFFIX
    ) -> dict:
        """Send one request and return its answer, decoded strictly, as plain data."""
        corr, frame = self.frame(api, version, body, variant, suffix)
        self.sock.sendall(frame)
        response = self._read(struct.unpack(">i", self._read(4))[0])
        assert struct.unpack_from(">i", response)[0] == corr
        pos = 4
        if api.is_flexible(version) and api.key != API_VERSIONS_KEY:
            tags, pos = read_tagged_fields(response, pos)
            assert tags == {}
        return api.decode_response(version, response, pos, strict=True).to_dict()

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            data += chunk
        return data


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalized(value, port: int):
    """An answer with what differs between twin brokers (port, generated member ids, topic
    ids) masked."""
    if isinstance(value, dict):
        return {
            k: "<port>"
            if k == "port" and v == port
            else "<topic id>"
            if k == "topic_id" and isinstance(v, bytes) and any(v)
            else normalized(v, port)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [normalized(v, port) for v in value]
    if isinstance(value, str):
        return _UUID.sub("<uuid>", value)
    return value


class Twins:
    """Two brokers fed the same requests, one clean and one altered."""

    def __init__(self, tmp_path_factory, name: str):
        self.brokers = [
            MiniBroker(
                log_dir=tmp_path_factory.mktemp(f"{name}-{side}"), config=BROKER_CONFIG
            ).start()
            for side in ("clean", "altered")
        ]
        for b in self.brokers:
            b.create_topic("t", partitions=2)
        self.wires = [Wire(b) for b in self.brokers]
        self.n = itertools.count()

    def compare(self, api, version: int, variant: str, suffix: bytes = SUFFIX) -> dict:
        """Ask both; the altered request must get the clean one's answer."""
        n = next(self.n)
        if api.name == "DeleteTopics":
            for broker in self.brokers:
                broker.create_topic(f"doomed-{n}")
        body = sample(api, version, n)
        clean, altered = self.wires
        want = normalized(clean.ask(api, version, body), clean.port)
        got = normalized(altered.ask(api, version, body, variant, suffix), altered.port)
        assert got == want
        return want

    def close(self) -> None:
        for w in self.wires:
            w.sock.close()
        for b in self.brokers:
            b.stop()


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """One pair of lockstep brokers per variant."""
    pairs = {v: Twins(tmp_path_factory, v) for v in ("trailing", "tagged", "suffix")}
    yield pairs
    for pair in pairs.values():
        pair.close()


CASES = [
    (api, v, variant)
    for api, v in ACCEPTED
    for variant in ("trailing", "tagged")
    if variant == "trailing" or api.is_flexible(v)
]


@pytest.mark.parametrize(
    "api,version,variant", CASES, ids=[f"{a.name}-v{v}-{var}" for a, v, var in CASES]
)
def test_altered_request_gets_the_clean_answer(twins, api, version, variant):
    answer = twins[variant].compare(api, version, variant)
    # the SASL APIs on a PLAINTEXT listener answer ILLEGAL_SASL_STATE, as Kafka does
    if "error_code" in answer and api.name not in (
        "Heartbeat",
        "LeaveGroup",
        "SyncGroup",
        "SaslHandshake",
        "SaslAuthenticate",
        "DescribeAcls",
        "ShareAcknowledge",
        *TXN_APIS,
    ):
        assert answer["error_code"] in (0, 79)  # JoinGroup v4+: MEMBER_ID_REQUIRED


def test_cases_cover_every_accepted_version_and_the_live_broker_agrees(twins):
    assert {(a.key, v) for a, v, _ in CASES} == {(a.key, v) for a, v in ACCEPTED}
    assert {(a.key, v) for a, v, var in CASES if var == "tagged"} == {
        (a.key, v) for a, v in ACCEPTED if a.is_flexible(v)
    }
    live = twins["trailing"].wires[0].ask(API_VERSIONS, 0, {})
    assert [
        (APIS[e["api_key"]], v)
        for e in live["api_keys"]
        for v in range(e["min_version"], e["max_version"] + 1)
    ] == ACCEPTED


def test_samples_do_real_work(twins):
    """The answers compared above are not all errors: data written, read and grouped."""
    pair = twins["trailing"]
    by_name = {a.name: a for a, _ in ACCEPTED}
    produced = pair.compare(by_name["Produce"], 3, "trailing")
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == 0
    fetched = pair.compare(by_name["Fetch"], 4, "trailing")
    assert len(fetched["responses"][0]["partitions"][0]["records"]) > 0
    meta = pair.compare(by_name["Metadata"], 9, "trailing")
    assert [len(t["partitions"]) for t in meta["topics"]][:1] == [2]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=st.sampled_from(ACCEPTED), suffix=st.binary(min_size=1, max_size=64))
def test_any_suffix_gets_the_clean_answer(twins, case, suffix):
    """A valid request plus any suffix: the broker answers as to the request alone."""
    api, version = case
    twins["suffix"].compare(api, version, "trailing", suffix)


def test_versions_doc_is_current():
    assert DOCS.read_text(encoding="utf-8") == versions_markdown(), (
        "stale: run python -m kclient.broker.versions docs/protocol_versions.md"
    )
