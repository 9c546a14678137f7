"""kclient.protocol.share_one: answers of every field's shape read as the generic decoder
reads them; a shape it leaves alone (tagged fields, a null array, a short frame) gives None,
and ClientProtocol then decodes the answer the generic way.  (Real Kafka answers:
integration/test_share_one.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from kclient.protocol import framing, share_one
from kclient.protocol.apis import SHARE_ACKNOWLEDGE, SHARE_FETCH
from kclient.protocol.framing import ClientProtocol

TOPIC = b"\x07" * 16


def _fetch_answer(**part: Any) -> dict[str, Any]:
    p = {
        "partition_index": 1,
        "error_code": 0,
        "error_message": None,
        "acknowledge_error_code": 0,
        "acknowledge_error_message": None,
        "current_leader": {"leader_id": 2, "leader_epoch": 5},
        "records": b"\x01\x02\x03",
        "acquired_records": [
            {"first_offset": 0, "last_offset": 9, "delivery_count": 1},
            {"first_offset": 12, "last_offset": 12, "delivery_count": 3},
        ],
        **part,
    }
    return {
        "throttle_time_ms": 4,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout_ms": 30000,
        "responses": [{"topic_id": TOPIC, "partitions": [p, {**p, "partition_index": 2}]}],
        "node_endpoints": [{"node_id": 2, "host": "h\u00e9", "port": 9092, "rack": "r1"}],
    }


def _ack_answer(**part: Any) -> dict[str, Any]:
    p = {
        "partition_index": 0,
        "error_code": 0,
        "error_message": None,
        "current_leader": {"leader_id": -1, "leader_epoch": -1},
        **part,
    }
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout_ms": 15000,
        "responses": [{"topic_id": TOPIC, "partitions": [p]}],
        "node_endpoints": [],
    }


CASES = [
    (SHARE_FETCH, v, body)
    for v in (1, 2)
    for body in (
        _fetch_answer(),
        _fetch_answer(records=None, acquired_records=[]),
        _fetch_answer(records=b"", error_code=6, error_message="not the leader"),
        _fetch_answer(acknowledge_error_code=87, acknowledge_error_message="x" * 300),
    )
] + [
    (SHARE_ACKNOWLEDGE, v, body)
    for v in (1, 2)
    for body in (_ack_answer(), _ack_answer(error_code=120, error_message="lost"))
]


@pytest.mark.parametrize("api,version,body", CASES)
def test_answers_read_as_the_generic_decoder_reads_them(api, version, body):
    frame = memoryview(b"".join(api.encode_response(version, body)))
    fast = share_one.reader_for(api.key, version)
    assert fast is not None
    got = fast(frame, 0)
    assert got is not None and got == api.decode_response(version, frame, 0)


def test_shapes_left_to_the_generic_decoder():
    tagged = _fetch_answer()
    tagged["responses"][0]["partitions"][1]["_tagged_fields"] = {0: b"x"}
    frame = b"".join(SHARE_FETCH.encode_response(2, tagged))
    assert share_one.read_share_fetch(memoryview(frame), 0) is None
    whole = b"".join(SHARE_FETCH.encode_response(2, _fetch_answer()))
    for cut in (5, 40, len(whole) - 1):
        assert share_one.read_share_fetch(memoryview(whole[:cut]), 0) is None
    assert share_one.read_share_fetch(memoryview(whole + b"\x00"), 0) is None
    assert share_one.reader_for(SHARE_FETCH.key, 0) is None
    # ClientProtocol falls back to the generic decoder, which keeps the tagged field
    proto = ClientProtocol("t")
    corr, _ = proto.send_request(
        SHARE_FETCH,
        2,
        {
            "member_id": "m",
            "share_session_epoch": 0,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "max_records": 1,
            "batch_size": 1,
            "topics": [],
            "forgotten_topics_data": [],
        },
    )
    header = corr.to_bytes(4, "big") + b"\x00"
    _, answer = proto.decode_frame(header + frame)
    assert answer.responses[0].partitions[1]._tagged_fields == {0: b"x"}


def _requests() -> list[tuple[Any, int, dict[str, Any]]]:
    batches = [
        {"first_offset": 0, "last_offset": 666, "acknowledge_types": [1]},
        {"first_offset": 700, "last_offset": 702, "acknowledge_types": [1, 2, 3]},
    ]
    topics = [
        {"topic_id": TOPIC, "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]},
        {
            "topic_id": b"\x08" * 16,
            "partitions": [
                {"partition_index": i, "acknowledgement_batches": batches} for i in range(3)
            ],
        },
    ]
    fetch = {
        "group_id": "g",
        "member_id": "m\u00e9",
        "share_session_epoch": 3,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 52428800,
        "max_records": 2000,
        "batch_size": 500,
        "share_acquire_mode": 1,
        "topics": topics,
        "forgotten_topics_data": [{"topic_id": TOPIC, "partitions": [1, 2]}],
    }
    ack = {"group_id": None, "member_id": "m", "share_session_epoch": -1, "topics": topics}
    return [
        (api, v, body)
        for v in (1, 2)
        for api, body in (
            (SHARE_FETCH, fetch),
            (SHARE_FETCH, {**fetch, "topics": [], "forgotten_topics_data": []}),
            (SHARE_ACKNOWLEDGE, ack),
            (SHARE_ACKNOWLEDGE, {**ack, "is_renew_ack": True}),
        )
    ]


@pytest.mark.parametrize("api,version,body", _requests())
def test_requests_written_as_the_generic_encoder_writes_them(api, version, body):
    fast = share_one.request_frame(api.key, version, 7, b"\x00\x01c\x00", body)
    parts = framing._encode_request_header(api, version, 7, "c")
    parts += api.encode_request(version, body)
    assert fast == framing._frame(parts)


def test_requests_left_to_the_generic_encoder():
    api, version, body = _requests()[1]
    assert share_one.request_frame(api.key, 0, 1, b"", body) is None
    assert share_one.request_frame(api.key, version, 1, b"", {**body, "x": 1}) is None
    assert share_one.request_frame(api.key, version, 1, b"", {**body, "topics": [{}]}) is None
    bad = {**body, "forgotten_topics_data": [{"topic_id": b"short", "partitions": []}]}
    assert share_one.request_frame(api.key, version, 1, b"", bad) is None
    with pytest.raises(ValueError, match="uuid"):  # the generic encoder names what is wrong
        ClientProtocol("c").send_request(api, version, bad)
