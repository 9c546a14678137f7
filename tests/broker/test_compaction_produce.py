"""Produce to a compacted topic: keyless records are refused with INVALID_RECORD (per-record
errors from Produce v8), nothing of the request is stored; keyed records and tombstones go in."""

from __future__ import annotations

import pytest

from kclient.protocol.apis import PRODUCE
from kclient.protocol.records import build_batch, build_message_set
from tests.needs import need_module

INVALID_RECORD = 87
confluent_kafka = need_module("confluent_kafka")


def _body(topic: str, records) -> dict:
    return {
        "acks": -1,
        "timeout_ms": 5000,
        "transactional_id": None,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }


@pytest.mark.parametrize("version", range(3, 10))
def test_keyless_records_refused_with_invalid_record(mini_broker, raw_client, version):
    mini_broker.create_topic("compacted", config={"cleanup.policy": "compact"})
    client = raw_client(mini_broker.bootstrap)
    batch = build_batch([b"a", b"b", b"c", b"d"], [b"k", None, b"k2", None])
    part = (
        client.request(PRODUCE, version, _body("compacted", batch))
        .responses[0]
        .partition_responses[0]
    )
    assert part.error_code == INVALID_RECORD
    if version >= 8:
        assert [e.batch_index for e in part.record_errors] == [1, 3]
        assert part.record_errors[0].batch_index_error_message == (
            "Compacted topic cannot accept message without key in topic partition compacted-0"
        )
        assert "2 record errors" in part.error_message
    log = mini_broker.log_manager.get_log("compacted", 0)
    assert log.log_end_offset == 0 and log.size == 0, "nothing of the request is stored"
    ok = client.request(
        PRODUCE, version, _body("compacted", build_batch([b"v", None], [b"k", b"k2"]))
    )
    assert ok.responses[0].partition_responses[0].error_code == 0
    assert log.log_end_offset == 2


@pytest.mark.parametrize("version,magic", [(0, 0), (2, 1)])
def test_keyless_message_sets_refused_too(mini_broker, raw_client, version, magic):
    mini_broker.create_topic("old", config={"cleanup.policy": "compact,delete"})
    client = raw_client(mini_broker.bootstrap)
    records = build_message_set([b"a", b"b"], [b"k", None], magic=magic, codec=1)
    part = (
        client.request(PRODUCE, version, _body("old", records)).responses[0].partition_responses[0]
    )
    assert part.error_code == INVALID_RECORD
    assert mini_broker.log_manager.get_log("old", 0).log_end_offset == 0


def test_delete_policy_takes_keyless_records(mini_broker, raw_client):
    mini_broker.create_topic("plain", config={"cleanup.policy": "delete"})
    client = raw_client(mini_broker.bootstrap)
    part = (
        client.request(PRODUCE, 8, _body("plain", build_batch([b"a"])))
        .responses[0]
        .partition_responses[0]
    )
    assert part.error_code == 0 and part.record_errors == []


def test_confluent_producer_sees_invalid_record(mini_broker):
    mini_broker.create_topic("cc", config={"cleanup.policy": "compact"})
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": mini_broker.bootstrap, "retries": 0, "message.timeout.ms": 10000}
    )
    errors = []
    producer.produce("cc", value=b"no key", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)  # its own batch: a batch is refused as a whole
    producer.produce(
        "cc", key=b"k", value=b"keyed", on_delivery=lambda err, msg: errors.append(err)
    )
    producer.flush(15)
    codes = sorted(str(e.code()) if e else "ok" for e in errors)
    assert len(errors) == 2 and "ok" in codes
    bad = next(e for e in errors if e is not None)
    assert bad.code() == confluent_kafka.KafkaError.INVALID_RECORD
    assert mini_broker.log_manager.get_log("cc", 0).log_end_offset == 1
