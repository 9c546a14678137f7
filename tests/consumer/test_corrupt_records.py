"""A corrupt batch in the log does not stall anyone: the records after it are delivered.

The batch is made corrupt the way disks do it: valid data written through the mini-broker, then
one byte flipped in the segment file (the broker serves segment bytes as they are).
"""

from __future__ import annotations

import pytest

from kclient import Producer, ProducerData
from kclient.consumer import create as create_consumer
from kclient.errors import ConsumerTimeoutError, CorruptRecordError
from kclient.protocol.records import RecordsReader
from kclient.simple import FetchRequest, SimpleConsumer


@pytest.fixture
def corrupt_log(mini_broker):
    """Topic ``c`` (1 partition): five batches of ten (offsets 0-49), the third (20-29) with a
    flipped byte in a value."""
    with Producer({"metadata.broker.list": mini_broker.bootstrap}) as p:
        for i in range(5):
            p.send([ProducerData("c", b"value-%02d" % (i * 10 + j)) for j in range(10)])
    path = mini_broker.log_dir / "c-0" / ("0" * 20 + ".log")
    spans = RecordsReader(path.read_bytes()).entries
    assert len(spans) == 5
    with open(path, "r+b") as f:
        f.seek(spans[2].position + spans[2].size - 5)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0x5A]))
    return mini_broker


def _connector(broker, **extra):
    return create_consumer(
        {
            "metadata.broker.list": broker.bootstrap,
            "group.id": "corrupt",
            "auto.offset.reset": "smallest",
            "consumer.timeout.ms": 3000,
            "auto.commit.enable": False,
            **extra,
        }
    )


def _offsets_until_timeout(stream) -> list[int]:
    got = []
    with pytest.raises(ConsumerTimeoutError):
        for m in stream:
            got.append(m.offset)
    return got


def test_group_stream_raises_once_then_delivers_the_rest(corrupt_log):
    conn = _connector(corrupt_log)
    try:
        stream = conn.create_message_streams({"c": 1})["c"][0]
        got = []
        with pytest.raises(CorruptRecordError) as info:
            for m in stream:
                got.append(m.offset)
        assert got == list(range(20))
        err = info.value
        assert (err.topic, err.partition, err.offset, err.next_offset) == ("c", 0, 20, 30)
        assert "c-0" in str(err) and "at offset 20" in str(err)
        rest = _offsets_until_timeout(stream)
        assert rest == list(range(30, 50))
        assert conn.fetcher is not None and conn.fetcher.corrupt_entries == 1
    finally:
        conn.shutdown()


def test_group_stream_skips_with_skip_corrupt(corrupt_log, caplog):
    conn = _connector(corrupt_log, **{"consumer.skip.corrupt": True})
    try:
        stream = conn.create_message_streams({"c": 1})["c"][0]
        got = _offsets_until_timeout(stream)
        assert got == list(range(20)) + list(range(30, 50))
        assert conn.fetcher is not None and conn.fetcher.corrupt_entries == 1
        assert any(
            "skip.corrupt" in r.getMessage() and "at offset 20" in r.getMessage()
            for r in caplog.records
        )
    finally:
        conn.shutdown()


def test_simple_consumer_names_where_to_go_on(corrupt_log):
    with SimpleConsumer(corrupt_log.host, corrupt_log.port, so_timeout=10000) as c:
        ms = c.fetch(FetchRequest("c", 0, 0, 1 << 20))
        got = []
        with pytest.raises(CorruptRecordError) as info:
            for m in ms:
                got.append(m.offset)
        assert got == list(range(20))
        err = info.value
        assert (err.topic, err.partition, err.offset, err.next_offset) == ("c", 0, 20, 30)
        # fetching into the corrupt batch raises at once, with the same way out
        with pytest.raises(CorruptRecordError) as again:
            c.fetch(FetchRequest("c", 0, 25, 1 << 20))
        assert again.value.next_offset == 30
        rest = [m.offset for m in c.fetch(FetchRequest("c", 0, err.next_offset, 1 << 20))]
        assert rest == list(range(30, 50))


def _poll_threaded(broker, steps):
    """Run ``steps(poll, seek)`` on a kclient.Consumer assigned partition c-0."""
    from kclient import Consumer
    from kclient.structs import TopicPartition

    tp = TopicPartition("c", 0)
    with Consumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([tp])
        return steps(lambda: c.poll(2000).get(tp, []), lambda off: c.seek(tp, off))


def _poll_asyncio(broker, steps):
    """The same with AIOConsumer, each poll a getmany run to completion on one loop."""
    import asyncio

    from kclient.aio import AIOConsumer
    from kclient.structs import TopicPartition

    tp = TopicPartition("c", 0)
    loop = asyncio.new_event_loop()
    c = AIOConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    try:
        loop.run_until_complete(c.start())
        c.assign([tp])
        return steps(
            lambda: loop.run_until_complete(c.getmany(timeout_ms=2000)).get(tp, []),
            lambda off: c.seek(tp, off),
        )
    finally:
        loop.run_until_complete(c.stop())
        loop.close()


@pytest.mark.parametrize("poller", [_poll_threaded, _poll_asyncio], ids=["threaded", "asyncio"])
def test_poll_delivers_the_records_before_a_corrupt_entry_then_names_it(corrupt_log, poller):
    def steps(poll, seek):
        got: list[int] = []
        with pytest.raises(CorruptRecordError) as info:
            for _ in range(20):
                got += [r.offset for r in poll()]
        err = info.value
        seek(err.next_offset)
        rest: list[int] = []
        while len(rest) < 20:
            batch = poll()
            assert batch, "nothing after the corrupt entry"
            rest += [r.offset for r in batch]
        return got, err, rest

    got, err, rest = poller(corrupt_log, steps)
    assert got == list(range(20))
    assert (err.topic, err.partition, err.offset, err.next_offset) == ("c", 0, 20, 30)
    assert rest == list(range(30, 50))
