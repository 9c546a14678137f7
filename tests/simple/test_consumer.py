"""SimpleConsumer against real brokers: the mini-broker and tansu, each call of the API.

Where tansu departs from Kafka (it never cuts a fetch through a batch, never answers
OFFSET_OUT_OF_RANGE, and its ListOffsets "latest" is the last batch's base offset + 1) the test
says so and checks what kclient makes of tansu's actual answer.
"""

import pytest

from kclient.errors import (
    KafkaConnectionError,
    MessageSizeTooLargeError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from kclient.protocol.apis import FETCH, LIST_OFFSETS
from kclient.protocol.records import build_batch
from kclient.simple import (
    ByteBufferMessageSet,
    FetchRequest,
    MessageAndOffset,
    OffsetRequest,
    SimpleConsumer,
)

VALUES = [b"value-%04d" % i for i in range(250)]
KEYS = [b"key-%d" % (i % 13) for i in range(250)]


def consumer(target, **kw):
    return SimpleConsumer(
        target.host, target.port, so_timeout=10000, buffer_size=65536, client_id="simple-test", **kw
    )


def read_all(c, topic, partition=0, offset=0, max_size=1 << 20):
    """The classic loop: fetch, iterate, continue at the last message's next_offset."""
    out = []
    while True:
        ms = c.fetch(FetchRequest(topic, partition, offset, max_size))
        got = list(ms)
        if not got:
            return out
        out += got
        offset = got[-1].next_offset


def test_fetch_reads_every_message_with_its_offset(target):
    topic = target.topic()
    target.produce_values(topic, 0, VALUES, KEYS, batch=100)
    with consumer(target) as c:
        got = read_all(c, topic)
    assert [m.offset for m in got] == list(range(250))
    assert [m.message.value for m in got] == VALUES
    assert [m.message.key for m in got] == KEYS
    assert all(m.next_offset == m.offset + 1 for m in got)
    assert all(isinstance(m, MessageAndOffset) and m.message is m for m in got)
    assert got[0].message.magic == 2 and got[0].message.timestamp > 0


def test_fetch_from_inside_a_batch_skips_the_offsets_before(target):
    topic = target.topic()
    target.produce_values(topic, 0, VALUES, batch=100)
    with consumer(target) as c:
        ms = c.fetch(FetchRequest(topic, 0, 150, 1 << 20))
        got = list(ms)
    assert ms.entries[0].offset == 100  # the broker sent the whole batch ...
    assert got[0].offset == 150  # ... the consumer skips what precedes 150
    assert [m.value for m in got] == VALUES[150:]
    assert ms.high_watermark == 250 and ms.next_offset == 250


def test_fetch_whose_buffer_ends_mid_message(target):
    topic = target.topic()
    batch = build_batch([b"x" * 100] * 10)
    for _ in range(3):
        target.produce(topic, 0, batch)
    size = len(batch)
    with consumer(target) as c:
        ms = c.fetch(FetchRequest(topic, 0, 0, size + size // 2))
        got = list(ms)
    if target.kind == "mini":
        # the broker cut the second batch: only the first is delivered
        assert ms.size_in_bytes == size + size // 2
        assert ms.valid_bytes == size and len(ms.entries) == 1
        assert ms.incomplete_size == size
        assert [m.offset for m in got] == list(range(10)) and ms.next_offset == 10
    else:
        # tansu returns whole batches only (it stops after the one crossing the limit)
        assert ms.valid_bytes == ms.size_in_bytes == 2 * size
        assert [m.offset for m in got] == list(range(20))


def test_fetch_of_old_format_ends_mid_message(mini):
    """Message format v0 through Fetch v2: the buffer ends inside a message set entry."""
    topic = mini.topic(config={"message.format.version": "0"})
    mini.produce_legacy(topic, 0, VALUES[:20], magic=0)
    with consumer(mini, fetch_version=2) as c:
        ms = c.fetch(FetchRequest(topic, 0, 0, 100))
        got = list(ms)
    entry = 12 + 14 + len(VALUES[0])
    assert ms.size_in_bytes == 100 and ms.valid_bytes == 2 * entry
    assert ms.incomplete_size == entry
    assert [(m.offset, m.value, m.message.magic) for m in got] == [
        (0, VALUES[0], 0),
        (1, VALUES[1], 0),
    ]


@pytest.mark.parametrize("version", [None, 2])
def test_oversized_message_is_read_by_growing_the_fetch(target, version):
    topic = target.topic()
    big = bytes(range(256)) * 200  # 51200 bytes
    target.produce(topic, 0, build_batch([big]))
    target.produce(topic, 0, build_batch([b"small"]))
    with consumer(target, fetch_version=version, max_buffer_size=1 << 20, prefetch=False) as c:
        ms = c.fetch(FetchRequest(topic, 0, 0, 1000))
        got = list(ms)
        sent = c.fetcher.requests_sent
    assert got[0].offset == 0 and got[0].value == big
    if target.kind == "mini" and version == 2:
        # Fetch v2 has no KIP-74: the partial entry's header says how big it is, so one retry
        # with the size doubled six times (1000 -> 64000 bytes) reads it
        assert sent == 2
    else:
        # Fetch v3+ (and tansu at any version) sends an oversized first batch whole
        assert sent == 1


@pytest.mark.parametrize("version", [None, 2])
def test_message_over_the_bound_raises_message_size_too_large(target, version):
    topic = target.topic()
    target.produce(topic, 0, build_batch([b"y" * 50000]))
    with consumer(target, fetch_version=version, max_buffer_size=16384) as c:
        with pytest.raises(MessageSizeTooLargeError) as info:
            c.fetch(FetchRequest(topic, 0, 0, 1000))
    err = info.value
    assert err.offset == 0 and err.topic == topic and err.partition == 0
    assert "max_buffer_size=16384" in str(err)


def test_offset_outside_the_log(target):
    topic = target.topic()
    target.produce_values(topic, 0, VALUES[:10], batch=10)
    with consumer(target) as c:
        if target.kind == "mini":
            with pytest.raises(OffsetOutOfRangeError) as info:
                c.fetch(FetchRequest(topic, 0, 500, 1 << 20))
            assert "at offset 500" in str(info.value) and info.value.offset == 500
        else:
            # tansu answers an empty set with no error, which kclient passes on as it is
            ms = c.fetch(FetchRequest(topic, 0, 500, 1 << 20))
            assert list(ms) == [] and ms.error is None and ms.high_watermark == 10
        assert [m.offset for m in c.fetch(FetchRequest(topic, 0, 9, 1 << 20))] == [9]


def test_multifetch_one_round_trip_results_in_request_order(target):
    a, b = target.topic(partitions=2), target.topic()
    target.produce_values(a, 0, VALUES[:30], batch=10)
    target.produce_values(a, 1, VALUES[30:50], batch=10)
    target.produce_values(b, 0, VALUES[50:55], batch=5)
    requests = [
        FetchRequest(b, 0, 2, 1 << 20),
        FetchRequest(a, 1, 0, 1 << 20),
        FetchRequest(a, 0, 25, 1 << 20),
    ]
    if target.kind == "mini":  # (tansu answers for partitions that do not exist)
        requests.append(FetchRequest(b, 1, 0, 1 << 20))  # no such partition
    with consumer(target, prefetch=False) as c:
        before = c.fetcher.requests_sent
        resp = c.multifetch(requests)
        assert c.fetcher.requests_sent == before + 1
    assert [(ms.topic, ms.partition) for ms in resp] == [(r.topic, r.partition) for r in requests]
    assert [m.value for m in resp[0]] == VALUES[52:55]
    assert [m.value for m in resp[1]] == VALUES[30:50]
    assert [m.offset for m in resp[2]] == list(range(25, 30))
    assert resp.high_watermark(a, 0) == 30 and resp.high_watermark(a, 1) == 20
    if target.kind == "mini":
        assert resp.has_error and isinstance(resp[3].error, UnknownTopicOrPartitionError)
        with pytest.raises(UnknownTopicOrPartitionError):
            list(resp[3])
        assert all(ms.error is None for ms in resp[:3])


def test_multifetch_keeps_each_partitions_error_to_itself(mini):
    topic = mini.topic(partitions=2)
    mini.produce_values(topic, 0, VALUES[:5], batch=5)
    mini.produce_values(topic, 1, VALUES[5:10], batch=5)
    with consumer(mini) as c:
        resp = c.multifetch([FetchRequest(topic, 0, 100, 4096), FetchRequest(topic, 1, 0, 4096)])
    assert isinstance(resp[0].error, OffsetOutOfRangeError) and resp[0].error_code == 1
    assert resp[1].error is None and [m.value for m in resp[1]] == VALUES[5:10]


def test_get_offsets_before_latest_and_earliest(target):
    topic = target.topic()
    for v in VALUES[:7]:  # one record per batch (tansu's "latest" is last batch base + 1)
        target.produce(topic, 0, build_batch([v]))
    with consumer(target) as c:
        assert c.get_offsets_before(topic, 0, OffsetRequest.LATEST_TIME, 1) == [7]
        assert c.get_offsets_before(topic, 0, OffsetRequest.EARLIEST_TIME, 1) == [0]
        latest = c.get_offsets_before(topic, 0, OffsetRequest.LATEST_TIME, 10)
        assert latest[0] == 7 and latest == sorted(latest, reverse=True)
        assert c.get_offsets_before(topic, 0, OffsetRequest.LATEST_TIME, 0) == []


def test_get_offsets_before_lists_segment_starts_descending(tmp_path):
    from kclient.broker import MiniBroker

    with MiniBroker(log_dir=tmp_path / "b") as broker:
        broker.create_topic("seg", 1, config={"segment.bytes": "2000"})
        from tests.simple.conftest import Target

        t = Target("mini", broker.bootstrap, broker)
        for _i in range(0, 60, 10):
            t.produce("seg", 0, build_batch([b"z" * 100] * 10))
        with consumer(t) as c:
            offsets = c.get_offsets_before("seg", 0, OffsetRequest.LATEST_TIME, 100)
            assert offsets[0] == 60 and offsets[-1] == 0 and len(offsets) > 2
            assert offsets == sorted(set(offsets), reverse=True)
            assert c.get_offsets_before("seg", 0, OffsetRequest.LATEST_TIME, 2) == offsets[:2]


def test_commit_and_fetch_offsets_through_the_coordinator(target):
    topic = target.topic(partitions=2)
    group = f"g-{topic}"
    with consumer(target) as c:
        coordinator = c.find_coordinator(group)
        assert coordinator.port > 0
        c.commit_offsets(group, {(topic, 0): 5, (topic, 1): (7, "meta")})
        got = c.fetch_offsets(group, [(topic, 0), (topic, 1)])
        assert got[(topic, 0)].offset == 5
        assert got[(topic, 1)].offset == 7
        # tansu stores no commit metadata
        assert got[(topic, 1)].metadata == ("meta" if target.kind == "mini" else "")
        other = c.fetch_offsets(f"{group}-none", [(topic, 0)])
        assert other[(topic, 0)].offset == -1


def test_close_and_context_manager(target):
    topic = target.topic()
    target.produce_values(topic, 0, VALUES[:3], batch=3)
    with consumer(target) as c:
        assert len(list(c.fetch(FetchRequest(topic, 0, 0)))) == 3
    with pytest.raises(KafkaConnectionError):
        c.fetch(FetchRequest(topic, 0, 0))
    c2 = consumer(target)
    c2.close()
    c2.close()  # closing twice is fine


def test_partition_led_by_another_broker_names_the_leader(mini_cluster):
    from kclient.errors import NotLeaderForPartitionError

    mini_cluster.create_topic("spread", partitions=3)
    leaders = mini_cluster.leaders("spread")
    here = mini_cluster.broker(0)
    partition = next(p for p, leader in leaders.items() if leader != 0)
    leader = mini_cluster.broker(leaders[partition])
    with SimpleConsumer(here.host, here.port, client_id="t") as c:
        with pytest.raises(NotLeaderForPartitionError) as info:
            c.fetch(FetchRequest("spread", partition, 0))
        err = info.value
        assert err.leader.node_id == leader.node_id and err.leader.port == leader.port
        assert f"led by broker {leader.node_id} at {leader.host}:{leader.port}" in str(err)
        with pytest.raises(NotLeaderForPartitionError, match=f"broker {leader.node_id}"):
            c.get_offsets_before("spread", partition, OffsetRequest.LATEST_TIME)
    with SimpleConsumer(leader.host, leader.port, client_id="t") as c:
        assert list(c.fetch(FetchRequest("spread", partition, 0))) == []


def test_prefetch_pipelines_the_classic_loop(target):
    topic = target.topic()
    target.produce_values(topic, 0, VALUES, batch=10)
    batch = len(build_batch(VALUES[:10]))
    with consumer(target) as c:
        got = read_all(c, topic, max_size=2 * batch)
        hits = c.fetcher.prefetch_hits
    with consumer(target, prefetch=False) as c:
        plain = read_all(c, topic, max_size=2 * batch)
    assert got == plain and [m.value for m in got] == VALUES
    assert hits >= 5


def test_prefetch_is_dropped_when_the_next_request_differs(mini):
    topic = mini.topic()
    mini.produce_values(topic, 0, VALUES, batch=10)
    with consumer(mini) as c:
        c.fetch(FetchRequest(topic, 0, 0, 500))  # speculates offset 10
        ms = c.fetch(FetchRequest(topic, 0, 200, 500))  # asks for something else
        assert [m.offset for m in ms][:1] == [200]
        assert c.fetcher.prefetch_misses == 1
        # other requests on the connection do not trip over a pending prefetch
        c.fetch(FetchRequest(topic, 0, 0, 500))
        assert c.get_offsets_before(topic, 0, OffsetRequest.LATEST_TIME) == [250]


def test_message_set_is_a_byte_buffer_message_set(mini):
    topic = mini.topic()
    mini.produce_values(topic, 0, VALUES[:4], batch=4)
    with consumer(mini) as c:
        ms = c.fetch(FetchRequest(topic, 0, 0))
    assert isinstance(ms, ByteBufferMessageSet)
    assert ms.valid_bytes == ms.size_in_bytes == len(build_batch(VALUES[:4]))
    assert "fetch_offset=0" in repr(ms) and ms.error_code == 0 and not ms.has_error


def test_old_broker_protocol(mini):
    """As against a 0.8.2 broker: no ApiVersions, Fetch/ListOffsets/Metadata v0."""
    topic = mini.topic(config={"message.format.version": "0"})
    mini.produce_values(topic, 0, VALUES[:40], batch=10)
    with consumer(mini, api_version_request=False, broker_version_fallback="0.8.2") as c:
        got = read_all(c, topic, max_size=300)
        assert c.connection.version(FETCH) == 0 and c.connection.version(LIST_OFFSETS) == 0
        assert c.get_offsets_before(topic, 0, OffsetRequest.LATEST_TIME, 3)[0] == 40
    assert [m.value for m in got] == VALUES[:40]
    assert {m.message.magic for m in got} == {0} and got[0].timestamp == -1


def test_reconnects_once_after_the_broker_restarts(mini):
    topic = mini.topic()
    mini.produce_values(topic, 0, VALUES[:20], batch=10)
    with consumer(mini) as c:
        assert len(list(c.fetch(FetchRequest(topic, 0, 0, 300)))) == 10  # speculates at 10
        mini.broker.stop()
        mini.broker.start()
        assert [m.offset for m in c.fetch(FetchRequest(topic, 0, 10))] == list(range(10, 20))
        assert c.get_offsets_before(topic, 0, OffsetRequest.LATEST_TIME) == [20]


def test_iterating_an_offset_range_keeps_one_fetch_ahead(target):
    # ten batches of ten; a 200-byte fetch size reads about one batch per round trip (tansu
    # sends more), and while the caller works through one the next is already on the wire:
    # every fetch but the first (and the one beyond the range) is a prefetch hit
    topic = target.topic()
    target.produce_values(topic, 0, VALUES[:100], batch=10)
    with consumer(target) as c:
        got = [
            (m.offset, m.value) for m in c.iter_messages(topic, 0, 5, max_size=200, end_offset=75)
        ]
        hits, sent = c.fetcher.prefetch_hits, c.fetcher.requests_sent
    assert got == [(i, VALUES[i]) for i in range(5, 75)]
    assert hits >= 2 and hits >= sent - 2, (hits, sent)
