"""The caught-up reader's lane (``kclient.core.fetch_plain``) against the general path
(``read_response`` -> ``message_set`` -> ``message_columns``) on real mini-broker answers: the
same columns, next offset, watermarks and size where it takes an answer, and None wherever the
general path must decide (compressed or control batches, an offset inside a batch,
read_committed, a bad CRC, an error, an oversized first entry, two partitions).  Through the
fetcher (``Fetcher.complete_plain``) and ``kclient.Consumer``, which reads through it."""

from __future__ import annotations

import asyncio

import pytest

from kclient import Consumer
from kclient.core.columns import message_columns
from kclient.core.fetch import FetchSettings, PartitionFetch, fetch_body, read_response
from kclient.core.fetch_plain import plain_answer
from kclient.io.fetcher import Fetcher
from kclient.protocol.apis import FETCH
from kclient.protocol.records.reader import scan_entries
from kclient.structs import TopicPartition
from tests.core.test_plain_columns import broker  # noqa: F401 - the module's broker fixture
from tests.protocol.test_fetch_one import connect

COLUMNS = ("offsets", "timestamps", "timestamp_types", "keys", "values", "headers")


def answer(b, asked, settings):
    with connect(b) as conn:
        return conn.request(FETCH, fetch_body(asked, settings), 12)


def general(resp, asked, settings):
    ms = read_response(resp, [asked], settings)[0]
    return message_columns(ms), len(ms.buffer)


@pytest.mark.parametrize(
    ("topic", "partition", "offset"),
    [("p", 0, 0), ("p", 0, 3), ("p", 0, 5), ("p", 1, 0), ("p", 1, 2)],
)
def test_plain_answers_give_the_general_paths_columns(broker, topic, partition, offset):  # noqa: F811
    settings = FetchSettings(max_wait_ms=0)
    asked = PartitionFetch(topic, partition, offset)
    resp = answer(broker, [asked], settings)
    got = plain_answer(resp, asked, settings)
    assert got is not None
    cols, size = got
    want, want_size = general(resp, asked, settings)
    assert size == want_size > 0
    for name in COLUMNS:
        assert getattr(cols, name) == getattr(want, name), name
    assert cols.offsets[0] == offset
    assert (cols.next_offset, cols.high_watermark, cols.log_start_offset, cols.error) == (
        want.next_offset,
        want.high_watermark,
        want.log_start_offset,
        None,
    )
    assert (cols.topic, cols.partition, cols.fetch_offset) == (topic, partition, offset)


@pytest.mark.parametrize(
    ("why", "topic", "partition", "offset", "settings"),
    [
        ("control batches and aborted ones", "t", 0, 0, FetchSettings(max_wait_ms=0)),
        ("compressed batches", "z", 0, 0, FetchSettings(max_wait_ms=0)),
        ("an offset inside a batch", "p", 0, 1, FetchSettings(max_wait_ms=0)),
        ("read_committed", "p", 0, 0, FetchSettings(max_wait_ms=0, isolation_level=1)),
        ("an oversized first entry", "p", 0, 0, FetchSettings(max_wait_ms=0, max_buffer_size=40)),
        ("a partition error", "p", 7, 0, FetchSettings(max_wait_ms=0)),
        ("nothing to read", "p", 0, 6, FetchSettings(max_wait_ms=0)),
    ],
)
def test_anything_else_is_left_to_the_general_path(broker, why, topic, partition, offset, settings):  # noqa: F811
    asked = PartitionFetch(topic, partition, offset)
    assert plain_answer(answer(broker, [asked], settings), asked, settings) is None, why


def test_a_bad_crc_is_left_to_the_general_path_which_names_it(broker):  # noqa: F811
    settings = FetchSettings(max_wait_ms=0)
    asked = PartitionFetch("p", 0, 3)
    resp = answer(broker, [asked], settings)
    part = resp.responses[0].partitions[0]
    damaged = bytearray(part.records)
    last = scan_entries(damaged).entries[-1].position
    damaged[last + 17] ^= 0xFF  # the last batch's stored CRC (after offset, length, epoch, magic)
    part.records = memoryview(bytes(damaged))
    assert plain_answer(resp, asked, settings) is None
    cols, _ = general(resp, asked, settings)
    assert cols.values == [b"w0", b"w1"] and "CRC" in str(cols.error).upper()
    # without CRC checks the lane takes it, as the general path does
    lax = FetchSettings(max_wait_ms=0, validate_crc=False)
    got = plain_answer(resp, asked, lax)
    assert got is not None and got[0].values == general(resp, asked, lax)[0].values
    assert got[0].values == [b"w0", b"w1", b"x0"]


def test_two_partitions_or_another_partition_are_left_to_the_general_path(broker):  # noqa: F811
    settings = FetchSettings(max_wait_ms=0)
    both = [PartitionFetch("p", 0, 0), PartitionFetch("p", 1, 0)]
    resp = answer(broker, both, settings)
    assert plain_answer(resp, both[0], settings) is None
    one = answer(broker, [both[1]], settings)
    assert plain_answer(one, both[0], settings) is None  # the answer is not about p-0


def test_the_fetcher_gives_columns_for_plain_answers_and_message_sets_otherwise(broker):  # noqa: F811
    with connect(broker) as conn:
        f = Fetcher(conn, max_wait_ms=0, prefetch=True, session=True)
        plain = f.complete_plain(f.begin([PartitionFetch("p", 0, 3)]))
        assert type(plain) is tuple and plain[0].values == [b"w0", b"w1", b"x0"]
        assert f.requests_sent == 1  # caught up at the high watermark: nothing sent ahead
        ahead = f.complete_plain(f.begin([PartitionFetch("p", 0, 0)]))
        assert type(ahead) is tuple and ahead[0].values[:3] == [b"v0", b"v1", None]
        sets = f.complete_plain(f.begin([PartitionFetch("z", 0, 0)]))
        assert type(sets) is list and len(sets[0].entries) == 2
        assert f.session is not None and f.session.id != 0  # one session all along


def counting(monkeypatch, module, name, real):
    """``module.name`` replaced by ``real`` that notes, per call, whether it took the answer."""
    taken = []

    def counted(*args):
        got = real(*args)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(module, name, counted)
    return taken


def assert_read_through_the_lane(got, taken, no_headers):
    assert [r.value for r in got] == [b"v0", b"v1", None, b"w0", b"w1", b"x0"]
    assert [r.key for r in got] == [b"k0", None, b"k2", None, None, b"kx"]
    assert got[0].headers == [("h", b"1")] and got[3].headers == no_headers
    assert [r.offset for r in got] == list(range(6))
    assert any(taken)


def test_the_consumer_reads_the_same_records_through_the_lane(broker, monkeypatch):  # noqa: F811
    import kclient.io.fetcher as fetcher_module

    taken = counting(monkeypatch, fetcher_module, "plain_answer", plain_answer)
    tp = TopicPartition("p", 0)
    with Consumer({"bootstrap.servers": broker.bootstrap}) as c:
        c.assign([tp])
        c.seek(tp, 0)
        got = []
        for _ in range(50):
            got += c.poll(100).get(tp, [])
            if len(got) >= 6:
                break
    assert_read_through_the_lane(got, taken, [])  # (kafka-python's empty list)


def test_the_asyncio_consumer_reads_the_same_records_through_the_lane(broker, monkeypatch):  # noqa: F811
    import kclient.aio.fetcher as aio_fetcher
    from kclient.aio import AIOConsumer
    from kclient.core.fetch_plain import plain_part

    taken = counting(monkeypatch, aio_fetcher, "plain_part", plain_part)
    tp = TopicPartition("p", 0)

    async def main():
        async with AIOConsumer(bootstrap_servers=broker.bootstrap) as c:
            c.assign([tp])
            c.seek(tp, 0)
            got = []
            for _ in range(50):
                got += (await c.getmany(timeout_ms=100)).get(tp, [])
                if len(got) >= 6:
                    break
            return got

    assert_read_through_the_lane(asyncio.run(main()), taken, ())  # (aiokafka's empty tuple)
