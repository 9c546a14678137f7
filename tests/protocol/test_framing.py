"""Framing and headers: a client and a server protocol wired together in memory."""

import struct

import pytest

from kclient.protocol.apis import API_VERSIONS, APIS, FETCH, METADATA, PRODUCE
from kclient.protocol.errors import ProtocolDecodeError, UnsupportedVersionError
from kclient.protocol.framing import ClientProtocol, ServerProtocol
from tests.conftest import encode_with_unknown_tags, unknown_tag_section


def test_metadata_v0_request_bytes_are_exact():
    client = ClientProtocol(client_id="c")
    corr, frame = client.send_request(METADATA, 0, {"topics": [{"name": "ab"}]})
    body = struct.pack(">hhih", 3, 0, corr, 1) + b"c" + struct.pack(">ih", 1, 2) + b"ab"
    assert frame == struct.pack(">i", len(body)) + body


def test_flexible_request_has_header_v2_and_api_versions_response_header_v0():
    client = ClientProtocol(client_id="kc")
    corr, frame = client.send_request(
        API_VERSIONS, 3, {"client_software_name": "kclient", "client_software_version": "1"}
    )
    # header v2: key, version, corr, int16-prefixed client id, empty tagged fields
    assert frame[4:17] == struct.pack(">hhih", 18, 3, corr, 2) + b"kc" + b"\x00"
    # body: compact strings (length+1 as uvarint) then the body's own empty tagged fields
    assert frame[17:] == b"\x08kclient" + b"\x021" + b"\x00"
    server = ServerProtocol(APIS)
    (req,) = server.receive_bytes(frame)
    assert req.header.flexible and req.body.client_software_name == "kclient"
    resp = server.encode_response(
        req.header,
        {
            "error_code": 0,
            "api_keys": [{"api_key": 0, "min_version": 0, "max_version": 9}],
            "throttle_time_ms": 0,
        },
    )
    # ApiVersions responses keep header v0 (no tagged fields after the correlation id)
    assert resp[4:8] == struct.pack(">i", corr) and resp[8:10] == b"\x00\x00"
    ((rcorr, decoded),) = client.receive_bytes(resp)
    assert rcorr == corr and decoded.api_keys[0].max_version == 9


def test_many_in_flight_fed_one_byte_at_a_time():
    client, server = ClientProtocol(), ServerProtocol(APIS)
    wire = b""
    sent = []
    for i in range(5):
        corr, frame = client.send_request(METADATA, 1, {"topics": [{"name": f"t{i}"}]})
        sent.append(corr)
        wire += frame
    assert client.in_flight == 5
    requests = []
    for b in wire:
        requests += server.receive_bytes(bytes([b]))
    assert [r.header.correlation_id for r in requests] == sent
    assert [r.body.topics[0].name for r in requests] == [f"t{i}" for i in range(5)]
    replies = b"".join(
        server.encode_response(r.header, {"brokers": [], "controller_id": i, "topics": []})
        for i, r in enumerate(requests)
    )
    got = []
    for i in range(0, len(replies), 7):
        got += client.receive_bytes(replies[i : i + 7])
    assert [(c, r.controller_id) for c, r in got] == list(zip(sent, range(5)))
    assert client.in_flight == 0


def test_acks_zero_produce_expects_no_response():
    client = ClientProtocol()
    client.send_request(PRODUCE, 3, {"acks": 0, "topic_data": []}, expect_response=False)
    assert client.in_flight == 0


def test_unknown_correlation_id_is_an_error():
    client = ClientProtocol()
    with pytest.raises(ProtocolDecodeError, match="correlation id 99"):
        client.receive_bytes(struct.pack(">ii", 4, 99))


@pytest.mark.parametrize("size", [-5, 200 * 1024 * 1024])
def test_lying_frame_size_is_rejected_before_allocation(size):
    server = ServerProtocol(APIS, max_frame=1024 * 1024)
    with pytest.raises(ProtocolDecodeError, match="frame size"):
        server.receive_bytes(struct.pack(">i", size) + b"\x00" * 8)


def test_unsupported_version_and_unknown_key_are_reported_not_raised():
    server = ServerProtocol(APIS)
    frame = struct.pack(">hhih", 1, 99, 5, -1)
    (req,) = server.receive_bytes(struct.pack(">i", len(frame)) + frame)
    assert isinstance(req.error, UnsupportedVersionError) and "Fetch v99" in str(req.error)
    assert req.header.correlation_id == 5 and req.header.client_id is None
    frame = struct.pack(">hhih", 999, 0, 6, -1)
    (req,) = server.receive_bytes(struct.pack(">i", len(frame)) + frame)
    assert "unknown api key 999" in str(req.error)


def test_truncated_body_raises_decode_error():
    client, server = ClientProtocol(), ServerProtocol(APIS)
    _, frame = client.send_request(
        FETCH,
        4,
        {
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 0, "fetch_offset": 5, "partition_max_bytes": 100}],
                }
            ]
        },
    )
    cut = frame[4:-3]
    with pytest.raises(ProtocolDecodeError):
        server.receive_bytes(struct.pack(">i", len(cut)) + cut)


def test_records_parts_pass_through_unjoined():
    server = ServerProtocol(APIS)
    frame = struct.pack(">hhih", 1, 4, 1, -1) + b"\x00" * 17 + struct.pack(">i", 0)
    (req,) = server.receive_bytes(struct.pack(">i", len(frame)) + frame)

    class Region:  # stands for a file region sent with sendfile
        def __len__(self):
            return 1000

    region = Region()
    parts = server.encode_response_parts(
        req.header,
        {
            "responses": [
                {
                    "topic": "t",
                    "partitions": [{"partition_index": 0, "high_watermark": 9, "records": region}],
                }
            ]
        },
    )
    assert any(p is region for p in parts)
    assert struct.unpack(">i", parts[0])[0] == sum(len(p) for p in parts[1:])


def _reframe(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame)) + frame


def test_client_tolerates_trailing_bytes_and_unknown_tags_in_responses():
    """A newer broker may add tags to the response header and body; bytes after are ignored."""
    client, server = ClientProtocol(), ServerProtocol(APIS)
    body = {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": 1, "host": "h", "port": 9092}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [],
    }
    corrs = [client.send_request(METADATA, 9, {"topics": None})[0] for _ in range(3)]
    (req,) = server.receive_bytes(ClientProtocol().send_request(METADATA, 9, {})[1])
    clean = server.encode_response(req.header, body)[4:]
    assert clean[4] == 0  # response header v1: an empty tag section after the correlation id
    with_header_tags = struct.pack(">i", corrs[1]) + unknown_tag_section() + clean[5:]
    codec = METADATA.response_codec(9)
    with_body_tags = struct.pack(">i", corrs[2]) + b"\x00" + encode_with_unknown_tags(codec, body)
    wire = _reframe(struct.pack(">i", corrs[0]) + clean[4:] + b"\x00junk")
    wire += _reframe(with_header_tags) + _reframe(with_body_tags + b"\x01")
    got = client.receive_bytes(wire)
    assert [c for c, _ in got] == corrs
    plain = [r.to_dict() for _, r in got]
    plain[2].pop("_tagged_fields")
    for broker in plain[2]["brokers"]:
        broker.pop("_tagged_fields")
    assert plain[0] == plain[1] == plain[2]
    assert plain[0]["brokers"][0]["port"] == 9092


def test_server_tolerates_trailing_bytes_and_unknown_tags_in_requests():
    client, server = ClientProtocol(client_id="c"), ServerProtocol(APIS)
    _, frame = client.send_request(METADATA, 9, {"topics": [{"name": "t"}]})
    head = frame[4 : 4 + 8 + 2 + 1]  # key, version, corr, client id "c"
    assert frame[4 + 11] == 0  # the header's empty tag section
    tagged_header = head + unknown_tag_section() + frame[4 + 12 :]
    (a, b, c) = server.receive_bytes(
        _reframe(frame[4:] + b"\xff" * 3) + _reframe(tagged_header) + frame
    )
    assert a.body == b.body == c.body and a.error is b.error is c.error is None
    assert a.body.topics[0].name == "t"


def test_frames_cut_from_pieces_of_any_size_and_reused_buffers():
    from kclient.protocol.framing import _Framer

    frames = [bytes(range(256)) * 40, b"", b"x" * 3, bytes(5000)]
    wire = b"".join(len(f).to_bytes(4, "big") + f for f in frames)
    for step in (1, 3, 4, 7, 4096, len(wire)):
        framer, got = _Framer(1 << 20), []
        buf = bytearray(step)
        for i in range(0, len(wire), step):
            piece = wire[i : i + step]
            buf[: len(piece)] = piece  # a receive buffer the caller reuses
            got += framer.feed(memoryview(buf)[: len(piece)])
            assert framer.buffered + sum(len(f) + 4 for f in got) == i + len(piece)
        assert got == frames and framer.bytes_needed() == 4, step


def test_frame_reader_receives_into_its_buffers_whatever_the_receive_sizes():
    """FrameReader (recv_into / BufferedProtocol): small frames read ahead several at a time,
    a frame larger than the read-ahead received into a buffer of its own exact size."""
    from kclient.protocol.framing import FrameReader

    frames = [bytes(range(256)) * 40, b"", b"x" * 3, bytes(5000), b"y" * 60, b"z" * 300]
    wire = b"".join(len(f).to_bytes(4, "big") + f for f in frames)
    for step in (1, 3, 4, 7, 64, 4096, len(wire)):
        reader, got, pos = FrameReader(1 << 20, read_ahead=128), [], 0
        while pos < len(wire):
            into = reader.buffer()
            assert len(into) > 0
            piece = wire[pos : pos + min(step, len(into))]
            into[: len(piece)] = piece
            pos += len(piece)
            done = reader.filled(len(piece))
            got += done
            assert reader.buffered + sum(len(f) + 4 for f in got) == pos, step
        assert got == frames and reader.buffered == 0, step
    big = FrameReader(1 << 20, read_ahead=64)
    big.buffer()[:8] = (1000).to_bytes(4, "big") + b"abcd"
    assert big.filled(8) == [] and len(big.buffer()) == 996  # the rest goes straight in
    with pytest.raises(ProtocolDecodeError, match="outside 0..100"):
        bad = FrameReader(100)
        bad.buffer()[:4] = (101).to_bytes(4, "big")
        bad.filled(4)


def test_client_protocol_received_decodes_answers_in_place():
    """read_buffer() / received() give the same answers as receive_bytes()."""
    client, server = ClientProtocol(), ServerProtocol(APIS)
    corrs, wire = [], b""
    for _ in range(3):
        corr, frame = client.send_request(METADATA, 9, {"topics": None})
        (req,) = server.receive_bytes(frame)
        wire += server.encode_response(req.header, {"brokers": [], "topics": []})
        corrs.append(corr)
    got = []
    for i in range(0, len(wire), 5):
        piece = wire[i : i + 5]
        into = client.read_buffer()
        into[: len(piece)] = piece
        got += client.received(len(piece))
    assert [c for c, _ in got] == corrs and got[0][1].topics == []
