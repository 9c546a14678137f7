"""OneProduce (the sync lane's Produce codec) against the generic schema, byte for byte.

Every Produce version 0-12: the prepared frame equals ClientProtocol's generic frame for the
same request, and the answer reader agrees with the generic decoder on a success and declines
(None) every other shape, so the generic decoder takes it.
"""

from __future__ import annotations

import random
import struct

import pytest

from kclient.protocol.apis import PRODUCE
from kclient.protocol.framing import ClientProtocol, ServerProtocol
from kclient.protocol.produce_one import OneProduce
from kclient.protocol.records import RecordsReader
from kclient.protocol.records.v2_uniform import encode_v2_uniform

VERSIONS = range(PRODUCE.min_version, PRODUCE.max_version + 1)
RECORDS = bytes(range(256)) * 3  # any bytes: the codec does not look inside


def _generic_frame(version: int, client_id: str | None, txn: str | None, topic: str) -> bytes:
    proto = ClientProtocol(client_id)
    proto._next_corr = 77
    body = {
        "transactional_id": txn,
        "acks": -1,
        "timeout_ms": 1234,
        "topic_data": [{"name": topic, "partition_data": [{"index": 5, "records": RECORDS}]}],
    }
    return proto.send_request(PRODUCE, version, body)[1]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("client_id", "txn", "topic"),
    [("kclient", None, "orders"), (None, "tx-1", "t" * 200), ("ü-client", "", "ä.topic")],
)
def test_frame_is_the_generic_frame(
    version: int, client_id: str | None, txn: str | None, topic: str
) -> None:
    enc = OneProduce(version, client_id, txn, -1, 1234, topic, 5)
    expected = _generic_frame(version, client_id, txn if version >= 3 else None, topic)
    assert enc.frame(77, RECORDS) == expected
    assert enc.frame(77, bytearray(RECORDS)) == expected
    # and the broker's decoder reads it back as that request
    req = ServerProtocol({0: PRODUCE}).decode_frame(memoryview(expected)[4:])
    assert req.header.correlation_id == 77
    assert bytes(req.body.topic_data[0].partition_data[0].records) == RECORDS


def _answer(version: int, topic: str, **partition: object) -> tuple[bytes, int]:
    """A generic response body to (version), and where its body starts after the header."""
    part = {
        "index": 5,
        "error_code": 0,
        "base_offset": 123456789012,
        "log_append_time_ms": 1700000000000,
        "log_start_offset": 7,
        **partition,
    }
    parts = PRODUCE.encode_response(
        version,
        {"responses": [{"name": topic, "partition_responses": [part]}], "throttle_time_ms": 3},
    )
    return b"\x00\x00\x00\x01" + (b"\x00" if version >= 9 else b"") + b"".join(parts), 4 + (
        version >= 9
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_read_agrees_with_the_generic_decoder(version: int) -> None:
    enc = OneProduce(version, "kclient", None, 1, 1000, "orders", 5)
    frame, pos = _answer(version, "orders")
    generic = PRODUCE.decode_response(version, memoryview(frame), pos)
    pr = generic.responses[0].partition_responses[0]
    assert enc.read(memoryview(frame), pos) == (pr.base_offset, pr.log_append_time_ms)
    assert enc.read(frame, pos) == (123456789012, 1700000000000 if version >= 2 else -1)


@pytest.mark.parametrize("version", VERSIONS)
def test_read_declines_every_other_shape(version: int) -> None:
    enc = OneProduce(version, "kclient", None, 1, 1000, "orders", 5)
    declined = [
        _answer(version, "orders", error_code=6),  # NOT_LEADER_OR_FOLLOWER
        _answer(version, "orders", index=4),
        _answer(version, "orderz"),
    ]
    if version >= 8:
        declined.append(_answer(version, "orders", error_message="no"))
        declined.append(
            _answer(
                version,
                "orders",
                record_errors=[{"batch_index": 0, "batch_index_error_message": None}],
            )
        )
    frame, pos = _answer(version, "orders")
    declined.append((frame + b"\x00", pos))  # trailing bytes
    if version >= 9:
        # the body's tagged section not empty (e.g. node endpoints): one tag, 1 byte
        declined.append((frame[:-1] + b"\x01\x00\x01\x00", pos))
    for body, at in declined:
        assert enc.read(memoryview(body), at) is None


def test_versions_outside_produce_are_refused() -> None:
    with pytest.raises(ValueError, match="v13"):
        OneProduce(13, "c", None, 1, 1, "t", 0)


def test_the_protocol_hands_a_declined_answer_to_the_generic_decoder() -> None:
    proto = ClientProtocol("kclient")
    enc = OneProduce(9, "kclient", None, 1, 1000, "orders", 5)
    ok = proto.reserve(PRODUCE, 9, True, enc.read)
    bad = proto.reserve(PRODUCE, 9, True, enc.read)
    body, _ = _answer(9, "orders")
    err, _ = _answer(9, "orders", error_code=6)
    assert proto.decode_frame(struct.pack(">i", ok) + body[4:]) == (
        ok,
        (123456789012, 1700000000000),
    )
    corr, resp = proto.decode_frame(struct.pack(">i", bad) + err[4:])
    assert corr == bad and resp.responses[0].partition_responses[0].error_code == 6
    assert proto.in_flight == 0


@pytest.mark.parametrize("version", range(3, PRODUCE.max_version + 1))
def test_stamped_is_the_frame_of_its_one_record(version: int) -> None:
    """The prepared one-record frame, stamped in place, is byte for byte :meth:`frame` of
    the same record batch, whatever came before it (reused frames, many value lengths)."""
    enc = OneProduce(version, "kclient", None, 1, 1234, "stamped", 2)
    rng = random.Random(version)
    for i in range(40):
        value = rng.randbytes(rng.choice([0, 1, 100, 127, 128, 300, 5000, 20000, i]))
        ts = rng.randrange(1 << 41)
        frame, size = enc.stamped(value, ts)
        batch = encode_v2_uniform([value], len(value), 0, ts)
        assert size == len(batch)
        expected = bytearray(enc.frame(0, batch))
        expected[8:12] = frame[8:12]  # the correlation id is the sender's to write
        assert frame == expected, (version, len(value))
        (read,) = RecordsReader(batch).records()
        assert read.value == value and read.timestamp == ts


def test_stamped_refuses_versions_without_message_format_v2() -> None:
    with pytest.raises(ValueError, match="v2"):
        OneProduce(2, "kclient", None, 1, 1234, "t", 0).stamped(b"v", 1)
