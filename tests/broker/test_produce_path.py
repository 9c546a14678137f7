"""The mini-broker's produce path: request frames read with one copy (kclient.broker.frames'
FrameReader), records validated once and copied once (assign_offsets with entries)."""

import itertools
import logging
import random
import socket
import struct
import time

import pytest

import kclient.broker.handlers.produce as produce_handler
import kclient.protocol.records.ops as ops
from kclient.broker import MiniBroker
from kclient.broker.frames import HEAD_READ, FrameReader
from kclient.broker.log import FileRegion, Log, LogConfig
from kclient.protocol.apis import APIS, FETCH, METADATA, PRODUCE
from kclient.protocol.errors import ProtocolDecodeError
from kclient.protocol.framing import ClientProtocol, ServerProtocol
from kclient.protocol.records import (
    GZIP,
    RecordsReader,
    assign_offsets,
    build_batch,
    build_message_set,
    validate_records,
)

MAX_FRAME = 100 * 1024 * 1024


# ------------------------------------------------------------------ helpers
class TrickleSocket:
    """A non-blocking socket stand-in handing out ``data`` in pieces of the given sizes
    (cycled); BlockingIOError when it has nothing more, like a drained socket."""

    def __init__(self, data: bytes, sizes=(1,)):
        self.data = memoryview(data)
        self.pos = 0
        self.sizes = itertools.cycle(sizes)
        self.via_recv = 0  # bytes handed out through recv() (copied by the reader)
        self.via_recv_into = 0  # bytes written straight into the reader's buffer

    def _take(self, want: int) -> memoryview:
        if self.pos >= len(self.data):
            raise BlockingIOError
        n = min(want, next(self.sizes), len(self.data) - self.pos)
        piece = self.data[self.pos : self.pos + n]
        self.pos += n
        return piece

    def recv(self, bufsize: int) -> bytes:
        piece = bytes(self._take(bufsize))
        self.via_recv += len(piece)
        return piece

    def recv_into(self, buffer, nbytes: int = 0) -> int:
        view = memoryview(buffer)
        piece = self._take(nbytes or len(view))
        view[: len(piece)] = piece
        self.via_recv_into += len(piece)
        return len(piece)


def read_all(reader: FrameReader, sock: TrickleSocket) -> list:
    """Drive the reader as the processor does (fill, take) until the socket is drained."""
    requests = []
    while True:
        try:
            assert reader.fill(sock)
        except BlockingIOError:
            return requests
        requests.extend(reader.take())


def new_reader(max_frame: int = MAX_FRAME) -> FrameReader:
    return FrameReader(ServerProtocol(APIS, max_frame).decode_frame, max_frame)


def produce_body(topic: str, records, acks: int = 1) -> dict:
    return {
        "acks": acks,
        "timeout_ms": 5000,
        "transactional_id": None,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }


def big_records(total: int, value_size: int = 100_000, per_batch: int = 5) -> bytes:
    """About ``total`` bytes of v2 batches (each under the default max.message.bytes)."""
    batches, size, i = [], 0, 0
    while size < total:
        values = [bytes([i % 251]) * value_size for _ in range(per_batch)]
        batches.append(build_batch(values, timestamp=1000 + i))
        size += len(batches[-1])
        i += 1
    return b"".join(batches)


def frames(*requests) -> tuple[list[bytes], bytes]:
    """Encode (api, version, body) requests; returns the frames and their concatenation."""
    client = ClientProtocol("reader-test")
    out = [client.send_request(api, version, body)[1] for api, version, body in requests]
    return out, b"".join(out)


def same_requests(got, wire: bytes) -> None:
    """``got`` decodes to what the generic framer makes of the same bytes."""
    want = ServerProtocol(APIS, MAX_FRAME).receive_bytes(wire)
    assert [r.header for r in got] == [r.header for r in want]
    assert [r.body for r in got] == [r.body for r in want]
    assert [r.size for r in got] == [r.size for r in want]


# ------------------------------------------------------------------ FrameReader
def test_requests_delivered_one_byte_at_a_time_decode():
    _, wire = frames(
        (METADATA, 1, {"topics": None}),
        (PRODUCE, 3, produce_body("t", build_batch([b"a", b"bc"] * 20))),
        (METADATA, 1, {"topics": [{"name": "x"}]}),
    )
    reader = new_reader()
    sock = TrickleSocket(wire, sizes=(1,))
    got = read_all(reader, sock)
    same_requests(got, wire)
    assert reader.frame is None and reader.chunk == b""


@pytest.mark.parametrize("sizes", [(1,), (3, 1, 2), (4,), (5,), (7, 13, 4096)])
def test_size_prefixes_split_anywhere_between_small_frames(sizes):
    _, wire = frames(*[(METADATA, 1, {"topics": [{"name": f"t{i}"}]}) for i in range(6)])
    same_requests(read_all(new_reader(), TrickleSocket(wire, sizes)), wire)


def test_five_megabyte_frame_in_pieces_is_received_into_one_buffer():
    records = big_records(5 * 1024 * 1024)
    (big,), _ = frames((PRODUCE, 3, produce_body("big", records)))
    _, small = frames((METADATA, 1, {"topics": None}))
    wire = big + small
    reader = new_reader()
    sock = TrickleSocket(wire, sizes=(1, 3, 70_000, 9, 200_000, 1_000_003))
    got = read_all(reader, sock)
    assert len(big) > 5 * 1024 * 1024
    same_requests(got, wire)
    data = got[0].body.topic_data[0].partition_data[0].records
    assert bytes(data) == records
    assert isinstance(data, memoryview) and isinstance(data.obj, bytearray)
    assert len(data.obj) == len(big) - 4  # decoded in place, in a buffer of its size
    # only what the between-frames reads fetched went through recv() (and a copy)
    assert sock.via_recv <= 2 * HEAD_READ
    assert sock.via_recv_into >= len(big) - HEAD_READ


def test_big_frames_back_to_back():
    wire_frames, wire = frames(
        *[(PRODUCE, 3, produce_body("b", big_records(300_000 + i))) for i in range(4)]
    )
    sock = TrickleSocket(wire, sizes=(65536, 100, 250_000))
    same_requests(read_all(new_reader(), sock), wire)
    assert sock.via_recv < 4 * (HEAD_READ + 4)


@pytest.mark.parametrize("size", [-1, -5, MAX_FRAME + 1, 0x7FFFFFFF])
def test_size_outside_the_limit_is_refused_before_allocating(size):
    reader = new_reader()
    sock = TrickleSocket(struct.pack(">i", size) + b"\0" * 100, sizes=(2, 1000))
    with pytest.raises(ProtocolDecodeError, match="outside"):
        read_all(reader, sock)
    assert reader.frame is None


def test_frame_smaller_than_a_header_is_refused():
    with pytest.raises(ProtocolDecodeError):
        read_all(new_reader(), TrickleSocket(struct.pack(">i", 3) + b"abc", sizes=(1,)))


def test_end_of_stream_in_the_middle_of_a_frame():
    class Closing(TrickleSocket):
        def _take(self, want):
            if self.pos >= len(self.data):
                return self.data[:0]
            return super()._take(want)

    reader = new_reader()
    sock = Closing(struct.pack(">i", 1_000_000) + b"\0" * 20_000, sizes=(5000,))
    results = []
    while reader.fill(sock):
        results.extend(reader.take())
    assert results == [] and reader.frame is not None and reader.got == 20_000


# ------------------------------------------------------------------ through a real socket
def _closed(s, timeout=5.0) -> bool:
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def _send_slowly(sock: socket.socket, data: bytes, sizes) -> None:
    pos, sizes = 0, itertools.cycle(sizes)
    while pos < len(data):
        n = next(sizes)
        sock.sendall(data[pos : pos + n])
        pos += n
        time.sleep(0.002)


def test_broker_decodes_a_request_sent_one_byte_at_a_time(mini_broker, raw_client):
    mini_broker.create_topic("slow")
    c = raw_client(mini_broker.bootstrap)
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    corr, frame = c.proto.send_request(PRODUCE, 3, produce_body("slow", build_batch([b"s"])))
    _send_slowly(c.sock, frame, (1,))
    got_corr, resp = c.receive()
    assert got_corr == corr
    assert resp.responses[0].partition_responses[0].error_code == 0
    corr, frame = c.proto.send_request(METADATA, 1, {"topics": None})
    _send_slowly(c.sock, frame, (1,))
    assert c.receive()[0] == corr


def test_broker_takes_a_five_megabyte_produce_in_pieces(mini_broker, raw_client):
    mini_broker.create_topic("big")
    c = raw_client(mini_broker.bootstrap)
    records = big_records(5 * 1024 * 1024)
    count = sum(1 for _ in RecordsReader(records))
    corr, frame = c.proto.send_request(PRODUCE, 3, produce_body("big", records))
    _send_slowly(c.sock, frame, (3, 1, 100_000, 1_500_001, 7))
    got_corr, resp = c.receive()
    assert got_corr == corr
    part = resp.responses[0].partition_responses[0]
    assert (part.error_code, part.base_offset) == (0, 0)
    assert mini_broker.log_manager.get_log("big", 0).log_end_offset == count
    fetched = c.request(
        FETCH,
        4,
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "max_bytes": 8 << 20,
            "isolation_level": 0,
            "topics": [
                {
                    "topic": "big",
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 8 << 20}
                    ],
                }
            ],
        },
    )
    recs = list(RecordsReader(bytes(fetched.responses[0].partitions[0].records)))
    assert [r.offset for r in recs] == list(range(count))
    assert [r.value for r in recs] == [r.value for r in RecordsReader(records)]


@pytest.mark.parametrize(
    "prefix, reason",
    [
        (struct.pack(">i", -5), "frame size -5 is outside"),
        (struct.pack(">i", 200 * 1024 * 1024), "is outside 0..104857600"),
        (struct.pack(">i", 3) + b"abc", "no header"),
    ],
)
def test_lying_length_closes_only_that_connection(mini_broker, raw_client, caplog, prefix, reason):
    mini_broker.create_topic("safe")
    good = raw_client(mini_broker.bootstrap)
    caplog.set_level(logging.WARNING, logger="kclient.broker.network")
    with socket.create_connection(("127.0.0.1", mini_broker.port), timeout=5) as s:
        for byte in prefix:  # size prefix split across reads
            s.sendall(bytes([byte]))
            time.sleep(0.005)
        assert _closed(s)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any(reason in r.getMessage() for r in caplog.records):
        time.sleep(0.01)
    assert any(
        "closing connection" in r.getMessage() and reason in r.getMessage() for r in caplog.records
    )
    resp = good.request(PRODUCE, 3, produce_body("safe", build_batch([b"ok"])))
    assert resp.responses[0].partition_responses[0].error_code == 0


def test_length_longer_than_what_is_sent_then_close(mini_broker, raw_client):
    """A client claiming a big frame and hanging up half-way does not disturb others."""
    mini_broker.create_topic("half")
    good = raw_client(mini_broker.bootstrap)
    with socket.create_connection(("127.0.0.1", mini_broker.port), timeout=5) as s:
        s.sendall(struct.pack(">i", 50 * 1024 * 1024) + b"\0" * 300_000)
    resp = good.request(PRODUCE, 3, produce_body("half", build_batch([b"fine"])))
    assert resp.responses[0].partition_responses[0].error_code == 0


def test_corrupt_batch_in_a_large_request_answers_corrupt_message(mini_broker, raw_client):
    mini_broker.create_topic("crc")
    c = raw_client(mini_broker.bootstrap)
    records = bytearray(big_records(2 * 1024 * 1024))
    records[len(records) // 2] ^= 0xFF  # inside some batch's CRC-covered bytes
    resp = c.request(PRODUCE, 3, produce_body("crc", bytes(records)))
    part = resp.responses[0].partition_responses[0]
    assert part.error_code == produce_handler.CORRUPT_MESSAGE
    assert mini_broker.log_manager.get_log("crc", 0).log_end_offset == 0
    resp = c.request(PRODUCE, 3, produce_body("crc", build_batch([b"good"])))
    assert resp.responses[0].partition_responses[0].base_offset == 0


# ------------------------------------------------------------------ validate once, copy once
@pytest.fixture
def validations(monkeypatch):
    """The sizes of the buffers validate_records is called on, by the handler and the log."""
    calls = []
    real = ops.validate_records

    def counting(buf, **kwargs):
        calls.append(len(buf))
        return real(buf, **kwargs)

    monkeypatch.setattr(ops, "validate_records", counting)
    monkeypatch.setattr(produce_handler, "validate_records", counting)
    return calls


def test_produce_validates_each_buffer_once(mini_broker, raw_client, validations):
    calls = validations
    mini_broker.create_topic("once")
    c = raw_client(mini_broker.bootstrap)
    records = big_records(1024 * 1024, value_size=10_000, per_batch=50)
    resp = c.request(PRODUCE, 3, produce_body("once", records))
    assert resp.responses[0].partition_responses[0].error_code == 0
    assert calls == [len(records)]


def test_converted_records_are_validated_again_by_the_log(tmp_path, raw_client, validations):
    """Up-converted bytes are new bytes: the log validates them itself."""
    calls = validations
    with MiniBroker(log_dir=tmp_path) as b:
        b.create_topic("conv")
        c = raw_client(b.bootstrap)
        legacy = build_message_set([b"a", b"b"], magic=1)
        resp = c.request(PRODUCE, 2, produce_body("conv", legacy))
        assert resp.responses[0].partition_responses[0].error_code == 0
        assert len(calls) == 2 and calls[0] == len(legacy)


def _mixed_buffers():
    yield build_batch([b"a", b"bb", b"ccc"], timestamp=5)
    yield b"".join(build_batch([b"x" * i] * i, timestamp=i, base_offset=9) for i in range(1, 6))
    yield build_batch([b"z" * 100] * 30, codec=GZIP, timestamp=7)
    yield build_message_set([b"p", b"q"], magic=1, timestamp=3)
    yield build_message_set([b"r", b"s", b"t"], magic=1, codec=GZIP, timestamp=4)
    yield build_message_set([b"u", b"v", b"w"], magic=0, codec=GZIP, base_offset=40)
    yield (
        build_message_set([b"m"], magic=0) + build_message_set([b"n", b"o"], magic=0, codec=GZIP)
    )


@pytest.mark.parametrize("buf", list(_mixed_buffers()))
@pytest.mark.parametrize("lat", [None, 99_000])
@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
def test_assign_offsets_with_and_without_entries_gives_identical_bytes(buf, lat, wrap):
    source = wrap(bytearray(buf)) if wrap is memoryview else wrap(buf)
    entries = validate_records(source)
    assert entries == validate_records(bytes(buf))  # a view reads the same as bytes
    plain = assign_offsets(buf, 1000, log_append_time=lat, partition_leader_epoch=4)
    given = assign_offsets(
        source, 1000, log_append_time=lat, partition_leader_epoch=4, entries=entries
    )
    assert bytes(given.data) == bytes(plain.data)
    assert given.entries == plain.entries and given.next_offset == plain.next_offset
    assert bytes(source) == buf  # the input is left alone
    offsets = [r.offset for r in RecordsReader(bytes(given.data))]
    assert offsets == list(range(1000, given.next_offset))


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
def test_assign_offsets_copies_v2_input_once_into_the_returned_bytearray(wrap):
    import tracemalloc

    raw = b"".join(build_batch([bytes([i]) * 1000] * 100, timestamp=1) for i in range(20))
    source = wrap(bytearray(raw)) if wrap is memoryview else wrap(raw)
    entries = validate_records(source)
    tracemalloc.start()
    try:
        result = assign_offsets(source, 5, entries=entries)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(result.data, bytearray) and len(result.data) == len(raw)
    # one copy of the ~2 MB input at most alive at once (two would need twice as much)
    assert len(raw) <= peak < 1.25 * len(raw), (peak, len(raw))
    assert bytes(source) == raw  # the input is left alone ...
    if wrap is not bytes:
        source[:1] = b"\xff"  # ... and the result does not share it
        assert result.data[0] == raw[0]
    assert [b.base_offset for b in RecordsReader(bytes(result.data)).batches()][:2] == [5, 105]


def test_log_append_with_validated_entries_writes_the_same_segment(tmp_path):
    rng = random.Random(7)
    buffers = [
        build_batch(
            [
                bytes([rng.randrange(256)]) * rng.randrange(1, 3000)
                for _ in range(rng.randrange(1, 20))
            ],
            timestamp=i,
        )
        for i in range(30)
    ]
    a = Log(tmp_path / "a-0", LogConfig(segment_bytes=64 * 1024))
    b = Log(tmp_path / "b-0", LogConfig(segment_bytes=64 * 1024))
    for buf in buffers:
        ia = a.append(buf, magic=2)
        view = memoryview(bytearray(buf))
        ib = b.append(view, magic=2, entries=validate_records(view))
        assert ia == ib
    files_a = sorted(p.name for p in a.directory.iterdir())
    assert files_a == sorted(p.name for p in b.directory.iterdir())
    for name in files_a:
        if name.endswith(".log"):
            assert (a.directory / name).read_bytes() == (b.directory / name).read_bytes()
    got = a.read(0, 1 << 20)
    assert isinstance(got, (FileRegion, bytes))
    a.close()
    b.close()
