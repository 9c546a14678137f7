"""kclient.protocol.fetch_one: the one-partition Fetch v12 reader gives the generic decoder's very
answer for real mini-broker answers (plain, compressed, transaction markers, an error code),
declines what it does not know (aborted transactions listed, two partitions, an empty
incremental answer, other versions), and a Fetcher using it hands out the same message sets
as one decoding every answer the generic way."""

from __future__ import annotations

import random
from functools import partial

import pytest

from kclient.broker import MiniBroker
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.core.fetch import FetchSettings, PartitionFetch, fetch_body
from kclient.io.fetcher import Fetcher
from kclient.protocol import compression
from kclient.protocol.apis import FETCH, PRODUCE
from kclient.protocol.fetch_one import ONE_PARTITION_VERSION, read_one_partition, reader_for
from kclient.protocol.records import build_batch
from kclient.protocol.schema import Struct
from kclient.protocol.speedups import load_speedup
from tests.broker.txn_support import TXN_CONFIG, committed_aborted_open
from tests.needs import c_twin

_walk = load_speedup("kclient.protocol.records._walk")
#: the Python reader and, when built, its C twin (kclient/protocol/records/_walk.pyx)
READERS = {"python": read_one_partition}
if _walk is not None:
    READERS["c"] = partial(_walk.read_one_partition, struct_cls=Struct)


@pytest.fixture(params=sorted(READERS))
def reader(request):
    return READERS[request.param]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """t-0: c0 c1 (committed) marker, a0 (aborted) marker, plain, o0 (open); z-0: one gzip
    batch, one zstd batch; z-1: two plain records; s-0, s-1, s-2: one record whose batch's
    length takes one, two and three varint bytes in the answer."""
    b = MiniBroker(log_dir=tmp_path_factory.mktemp("fetch-one"), config=TXN_CONFIG).start()
    b.create_topic("t", 1)
    b.create_topic("z", 2)
    b.create_topic("s", 3)
    committed_aborted_open(b, "t", "tx")
    with connect(b) as conn:
        writes = [
            ("z", 0, [b"k%d" % i * 20 for i in range(5)], compression.GZIP),
            ("z", 0, [b"k%d" % i * 20 for i in range(5)], compression.ZSTD),
            ("z", 1, [b"k%d" % i * 20 for i in range(5)], 0),
            ("s", 0, [b"x"], 0),  # about 70 bytes
            ("s", 1, [b"x" * 1000], 0),
            ("s", 2, [b"x" * 20000], 0),  # over 16 KiB
        ]
        for topic, partition, values, codec in writes:
            batch = build_batch(values, codec=codec)
            body = {
                "acks": -1,
                "timeout_ms": 10000,
                "topic_data": [
                    {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
                ],
            }
            part = conn.request(PRODUCE, body).responses[0].partition_responses[0]
            assert part.error_code == 0
    yield b
    b.close()


def connect(b):
    host, port = b.bootstrap.rsplit(":", 1)
    return BrokerConnection(host, int(port), ConnectionSettings(client_id="fetch-one")).connect()


def answer(b, asked, isolation=0, version=ONE_PARTITION_VERSION):
    """One Fetch's answer as the generic decoder gives it, and the frame it came in."""
    seen = []

    def capture(view, pos):
        seen.append((bytes(view), pos))
        return None  # the generic decoder's answer

    with connect(b) as conn:
        body = fetch_body(asked, FetchSettings(max_wait_ms=0, isolation_level=isolation))
        resp = conn.receive(conn.send(FETCH, body, version, reader=capture))
    frame, pos = seen[0]
    return resp, memoryview(frame), pos


@pytest.mark.parametrize(
    ("asked", "isolation"),
    [
        ([PartitionFetch("z", 0, 0)], 0),  # gzip and zstd batches
        ([PartitionFetch("z", 1, 2)], 0),  # from inside a batch
        ([PartitionFetch("t", 0, 0)], 0),  # transaction markers, read_uncommitted
        ([PartitionFetch("t", 0, 5)], 1),  # read_committed past the aborted one: none listed
        ([PartitionFetch("t", 0, 99)], 0),  # offset out of range: the error code
        ([PartitionFetch("z", 7, 0)], 0),  # unknown partition
        ([PartitionFetch("z", 1, 5)], 0),  # at the end: no records
        ([PartitionFetch("s", 0, 0)], 0),  # records' length: a one-byte varint
        ([PartitionFetch("s", 1, 0)], 0),  # two bytes
        ([PartitionFetch("s", 2, 0)], 0),  # three bytes
    ],
    ids=[
        "compressed",
        "mid-batch",
        "markers",
        "committed",
        "out-of-range",
        "unknown",
        "end",
        "length-1",
        "length-2",
        "length-3",
    ],
)
def test_the_reader_gives_the_generic_answer(broker, asked, isolation, reader):
    resp, view, pos = answer(broker, asked, isolation)
    fast = reader(view, pos)
    assert fast is not None
    assert fast == resp
    assert fast.to_dict() == resp.to_dict()  # records compared as bytes


@pytest.mark.parametrize(
    ("asked", "isolation", "version"),
    [
        ([PartitionFetch("t", 0, 0)], 1, 12),  # read_committed: the aborted one listed
        ([PartitionFetch("z", 0, 0), PartitionFetch("z", 1, 0)], 0, 12),  # two partitions
        ([PartitionFetch("z", 0, 0), PartitionFetch("t", 0, 0)], 0, 12),  # two topics
    ],
    ids=["aborted-listed", "two-partitions", "two-topics"],
)
def test_the_reader_declines_other_answers(broker, asked, isolation, version, reader):
    resp, view, pos = answer(broker, asked, isolation, version)
    assert reader(view, pos) is None
    assert resp.responses  # the generic decoder read it


def test_only_v12_has_a_reader_and_short_frames_are_declined(broker, reader):
    chosen = reader_for(ONE_PARTITION_VERSION)
    if _walk is None:
        assert chosen is read_one_partition
    else:  # the C twin, bound to the Struct class
        assert chosen.func is _walk.read_one_partition and chosen.keywords == {"struct_cls": Struct}
    assert reader_for(11) is None
    _, view, pos = answer(broker, [PartitionFetch("z", 1, 0)])
    for cut in (pos + 5, pos + 20, len(view) - 1):
        assert reader(view[:cut], pos) is None


@c_twin(_walk, "the C Fetch v12 reader")
@pytest.mark.parametrize("seed", range(60))
def test_the_c_twin_reads_damaged_frames_as_the_python_reader(broker, seed):
    """Random cuts and bytes changed in real answers: the same tree or None from both."""
    rng = random.Random(seed)
    asked = rng.choice([[PartitionFetch("z", 1, 0)], [PartitionFetch("s", 1, 0)]])
    _, view, pos = answer(broker, asked)
    frame = bytearray(view)
    for _ in range(rng.choice([0, 1, 2])):
        frame[rng.randrange(pos, len(frame))] = rng.randrange(256)
    frame = frame[: rng.choice([len(frame), rng.randrange(pos, len(frame) + 1)])]
    fast = READERS["c"](memoryview(bytes(frame)), pos)
    slow = read_one_partition(memoryview(bytes(frame)), pos)
    assert (fast is None) == (slow is None)
    if fast is not None:
        assert fast == slow
        assert fast.to_dict() == slow.to_dict()


@pytest.mark.parametrize("isolation", [0, 1])
def test_a_fetcher_with_the_reader_hands_out_the_generic_message_sets(broker, isolation):
    def sets(version):
        with connect(broker) as conn:
            f = Fetcher(
                conn, max_wait_ms=0, version=version, session=True, isolation_level=isolation
            )
            out = []
            for asked in (
                [("t", 0, 0)],
                [("t", 0, 3)],
                [("z", 0, 0)],
                [("z", 1, 1)],
                [("t", 0, 99)],
            ):
                for _ in range(2):  # the second in the session is incremental
                    for ms in f.fetch([PartitionFetch(*a) for a in asked]):
                        err = ms.error
                        out.append(
                            (
                                ms.high_watermark,
                                ms.last_stable_offset,
                                ms.next_offset,
                                type(err).__name__ if err else None,
                                [(m.offset, m.message.key, m.message.value) for m in ms]
                                if err is None
                                else [],
                            )
                        )
            f.close()
            return out

    fast, generic = sets(ONE_PARTITION_VERSION), sets(11)
    assert fast == generic
    assert any(row[4] for row in fast) and any(row[3] for row in fast)


def generic_frame(client_id, corr, body):
    """The frame the generic schema encoder writes for a Fetch v12 ``body``."""
    from kclient.protocol.framing import _encode_request_header, _frame

    parts = _encode_request_header(FETCH, 12, corr, client_id)
    return _frame(parts + FETCH.encode_request(12, body))


def p(partition, offset, size=1 << 20):
    return PartitionFetch("t", partition, offset, size)


@pytest.mark.parametrize(
    "body",
    [
        fetch_body([p(0, 5)], FetchSettings()),
        fetch_body(
            [p(0, 0), p(3, 1 << 40), PartitionFetch("ünï", 2, 7, 100)],
            FetchSettings(max_wait_ms=0, min_bytes=9, max_bytes=1234, isolation_level=1),
        ),
        {
            **fetch_body([], FetchSettings()),
            "session_id": 77,
            "session_epoch": 12,
            "forgotten_topics_data": [{"topic": "gone", "partitions": [0, 4]}],
            "rack_id": "rack-a",
        },
        {
            **fetch_body([], FetchSettings(max_wait_ms=1)),
            "topics": [
                {
                    "topic": "x",
                    "partitions": [
                        {
                            "partition": 1,
                            "current_leader_epoch": 3,
                            "fetch_offset": 9,
                            "last_fetched_epoch": 2,
                            "log_start_offset": 4,
                            "partition_max_bytes": 10,
                        }
                    ],
                }
            ],
        },
    ],
    ids=["one-partition", "three-partitions-two-topics", "session-forgets", "every-field"],
)
@pytest.mark.parametrize("client_id", ["consumer-1", None, ""])
def test_the_prepared_request_writes_the_generic_encoders_bytes(body, client_id):
    from kclient.protocol.framing import ClientProtocol

    proto = ClientProtocol(client_id)
    proto._next_corr = 4242
    corr, frame = proto.send_request(FETCH, 12, body)
    assert corr == 4242
    assert proto._fetch_frame(FETCH, 12, corr, body) == frame  # written the prepared way
    assert frame == generic_frame(client_id, corr, body)


def test_a_body_the_prepared_request_does_not_know_goes_the_generic_way():
    from kclient.protocol.framing import ClientProtocol

    proto = ClientProtocol("c")
    bad = {**fetch_body([p(0, 1)], FetchSettings()), "no_such_field": 1}
    assert proto._fetch_frame(FETCH, 12, 0, bad) is None
    with pytest.raises(ValueError, match="Fetch v12 request.*no_such_field"):
        proto.send_request(FETCH, 12, bad)
    missing = {"topics": [{"topic": "t", "partitions": [{"partition": 0}]}]}
    assert proto._fetch_frame(FETCH, 12, 0, missing) is None  # the generic defaults: zeros
    corr, frame = proto.send_request(FETCH, 12, missing)
    assert frame == generic_frame("c", corr, missing)
    odd = fetch_body([p(0, 1)], FetchSettings())
    odd["topics"][0]["partitions"][0]["leader"] = 1  # a partition field Fetch does not have
    assert proto._fetch_frame(FETCH, 12, 0, odd) is None
    with pytest.raises(ValueError, match="leader"):
        proto.send_request(FETCH, 12, odd)
    short = {"max_wait_ms": 5, "topics": []}  # the generic encoder's defaults for the rest
    assert proto._fetch_frame(FETCH, 12, 0, short) is None
    corr, frame = proto.send_request(FETCH, 12, short)
    assert frame == generic_frame("c", corr, short)
    older = fetch_body([p(0, 1)], FetchSettings())
    assert proto._fetch_frame(FETCH, 11, 0, older) is None
