"""Produce validation as Kafka's LogValidator does it: a v2 batch whose CRC is right but whose
insides contradict its header is refused, nothing of it is stored, and the log carries on."""

import pytest

from kclient.broker import MiniBroker
from kclient.connection import BrokerConnection
from kclient.protocol.apis import FETCH, PRODUCE
from kclient.protocol.records import RecordsReader, build_batch
from tests.broker.bad_batches import BAD_BATCHES, T0, valid

INVALID_RECORD, CORRUPT_MESSAGE = 87, 2


def _produce(conn: BrokerConnection, records: bytes, version: int = 9):
    body = {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}],
    }
    return conn.request(PRODUCE, body, version).responses[0].partition_responses[0]


def _fetch_all(conn: BrokerConnection):
    body = {
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "topics": [
            {
                "topic": "t",
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
    }
    part = conn.request(FETCH, body, 11).responses[0].partitions[0]
    return part.high_watermark, [(r.offset, r.value) for r in RecordsReader(bytes(part.records))]


@pytest.fixture
def broker(tmp_path):
    with MiniBroker(log_dir=tmp_path / "b") as b:
        b.create_topic("t", partitions=1)
        yield b


@pytest.fixture
def conn(broker):
    host, port = broker.bootstrap.rsplit(":", 1)
    c = BrokerConnection(host, int(port)).connect()
    yield c
    c.close()


@pytest.mark.parametrize("label", sorted(BAD_BATCHES))
@pytest.mark.parametrize("version", [3, 7, 9])
def test_invalid_batch_is_refused_and_nothing_stored(conn, label, version):
    before = _produce(conn, valid(2))
    assert before.error_code == 0 and before.base_offset == 0
    refused = _produce(conn, BAD_BATCHES[label](), version)
    expected = CORRUPT_MESSAGE if "garbage" in label else INVALID_RECORD
    assert refused.error_code == expected, (label, refused)
    assert refused.base_offset == -1
    if version >= 8:
        assert (
            "invalid record batch" in refused.error_message or "decompress" in refused.error_message
        ), refused.error_message
    after = _produce(conn, valid(1))
    assert (after.error_code, after.base_offset) == (0, 2)  # the log end did not move
    hw, records = _fetch_all(conn)
    assert hw == 3 and [o for o, _ in records] == [0, 1, 2]


def test_one_bad_batch_refuses_its_whole_partition_request(conn):
    """A request whose records hold a good batch and then a bad one stores neither."""
    good = build_batch([b"a", b"b"], None, [T0, T0])
    refused = _produce(conn, good + BAD_BATCHES["negative lastOffsetDelta"]())
    assert refused.error_code == INVALID_RECORD
    assert _fetch_all(conn) == (0, [])


def test_refused_batches_leave_a_log_that_survives_restart(tmp_path):
    """The scenario of the issue: a negative lastOffsetDelta used to move the log end backwards
    (the next produce got base offset -44) and the restart then lost acknowledged data."""
    acked = []
    with MiniBroker(log_dir=tmp_path / "b") as b:
        b.create_topic("t", partitions=1)
        host, port = b.bootstrap.rsplit(":", 1)
        with BrokerConnection(host, int(port)).connect() as c:
            for label in (
                "negative lastOffsetDelta",
                "lastOffsetDelta 2^31-1",
                "record count larger than the records",
            ):
                assert _produce(c, valid(3)).error_code == 0
                acked += [b"value-0", b"value-1", b"value-2"]
                assert _produce(c, BAD_BATCHES[label]()).error_code == INVALID_RECORD
    with MiniBroker(log_dir=tmp_path / "b") as b:
        host, port = b.bootstrap.rsplit(":", 1)
        with BrokerConnection(host, int(port)).connect() as c:
            hw, records = _fetch_all(c)
    assert hw == len(acked)
    assert [v for _, v in records] == acked
    assert [o for o, _ in records] == list(range(len(acked)))


def test_valid_batches_of_every_shape_still_pass(conn):
    """Keys, headers, null values, every codec, long values: all accepted unchanged."""
    shapes = [
        build_batch(
            [b"v"] * 3,
            [b"k0", None, b"k2"],
            [T0, T0 + 5, T0 + 1],
            [[("h", b"x")], None, [("a", None)]],
        ),
        build_batch([None, b"", b"x" * 70_000], None, [T0] * 3),
    ] + [build_batch([b"c%d" % i for i in range(50)], None, [T0] * 50, codec=c) for c in range(5)]
    offset = 0
    for records in shapes:
        got = _produce(conn, records)
        assert (got.error_code, got.base_offset) == (0, offset)
        offset += len(list(RecordsReader(records)))
    assert _fetch_all(conn)[0] == offset
