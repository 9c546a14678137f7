"""kclient.Consumer (the modern poll-loop consumer) on the mini-broker."""

import threading
import time
import uuid

import pytest

from kclient import Consumer, ConsumerRecord, TopicPartition
from kclient.errors import IllegalStateError

from .helpers import produce, produce_spread, wait_for


def conf(broker, group=None, **extra):
    c = {
        "bootstrap.servers": broker.bootstrap,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
        "rebalance.backoff.ms": 100,
        "fetch.wait.max.ms": 50,
    }
    if group:
        c["group.id"] = group
    c.update(extra)
    return c


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def poll_values(c, want, timeout=20.0):
    """Poll until ``want`` records arrived; their values in order per partition."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        for records in c.poll(200).values():
            got.extend(records)
    return got


def closing(kind):
    """A factory of ``kind`` consumers, each closed (without committing) afterwards."""
    made = []

    def make(*args, **kw):
        c = kind(*args, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close(autocommit=False)


@pytest.fixture
def consumers():
    yield from closing(Consumer)


@pytest.fixture(params=["threaded", "asyncio"])
def both(request):
    """Consumers of either driver: kclient.Consumer, or AIOConsumer driven from this thread
    (poll is getmany), for the behaviour both expose."""
    from .aio_member import BlockingAIOConsumer

    yield from closing(Consumer if request.param == "threaded" else BlockingAIOConsumer)


def set_member_id(c, member_id):
    """As if the coordinator forgot the member (its session expired)."""
    if isinstance(c, Consumer):
        c.membership.member_id = member_id
    else:
        c.aio._group.state.member_id = member_id


def test_assign_without_group_and_poll_max_records(mini_broker, consumers):
    topic = name("t")
    mini_broker.create_topic(topic, partitions=1)
    produce(mini_broker.bootstrap, topic, [f"v{i}" for i in range(10)], partition=0, key="k")
    c = consumers(conf(mini_broker), value_deserializer=bytes.decode)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    assert c.assignment() == {tp}
    first = c.poll(5000, max_records=3)
    assert list(first) == [tp] and [r.value for r in first[tp]] == ["v0", "v1", "v2"]
    r = first[tp][0]
    assert (
        isinstance(r, ConsumerRecord)
        and (r.topic, r.partition, r.offset, r.key) == (topic, 0, 0, b"k")
        and r.timestamp > 0
        and r.headers == []
    )
    assert c.position(tp) == 3
    rest = poll_values(c, 7)
    assert [r.offset for r in rest] == list(range(3, 10))
    assert c.poll(100) == {}
    with pytest.raises(IllegalStateError):
        c.commit()  # no group.id: nowhere to commit


def test_seek_pause_resume(mini_broker, consumers):
    topic = name("t")
    mini_broker.create_topic(topic, partitions=2)
    produce_spread(mini_broker.bootstrap, topic, 2, 5)
    c = consumers(conf(mini_broker), value_deserializer=lambda b: b.decode())
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    c.assign([p0, p1])
    c.pause(p1)
    assert c.paused() == {p1}
    got = poll_values(c, 5)
    assert {r.partition for r in got} == {0} and c.poll(300) == {}  # p1 stays silent
    assert c.position(p1) == 0
    c.resume(p1)
    assert c.paused() == set()
    assert [r.value for r in poll_values(c, 5)] == [f"m-1-{i}" for i in range(5)]
    c.seek(p0, 3)
    assert [r.offset for r in poll_values(c, 2)] == [3, 4]
    c.seek_to_beginning(p1)
    assert c.position(p1) == 0
    c.seek_to_end()
    assert c.position(p0) == 5 and c.position(p1) == 5
    assert c.poll(200) == {}
    assert c.beginning_offsets([p0]) == {p0: 0} and c.end_offsets([p0, p1]) == {p0: 5, p1: 5}
    # pausing keeps already fetched records for later, seeking drops them
    c.seek(p0, 0)
    c.poll(2000, max_records=1)
    c.pause(p0)
    assert c.poll(200) == {}
    c.resume(p0)
    assert [r.offset for r in poll_values(c, 4)] == [1, 2, 3, 4]
    with pytest.raises(IllegalStateError):
        c.seek(TopicPartition(topic, 7), 0)


def test_per_partition_commit_and_committed(mini_broker, consumers):
    topic, group = name("t"), name("g")
    mini_broker.create_topic(topic, partitions=2)
    produce_spread(mini_broker.bootstrap, topic, 2, 4)
    c = consumers(conf(mini_broker, group))
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    c.assign([p0, p1])
    assert c.committed(p0) is None
    poll_values(c, 8)
    c.commit({p0: 2})
    assert c.committed(p0) == 2 and c.committed(p1) is None
    done = threading.Event()
    seen = []
    fut = c.commit_async(callback=lambda offsets, exc: (seen.append((offsets, exc)), done.set()))
    fut.result(10)
    assert done.wait(10) and seen == [({p0: 4, p1: 4}, None)]
    assert c.committed(p0) == 4 and c.committed(p1) == 4
    c.commit({p1: 1})
    c.close()
    # a new consumer in the group starts at the committed offsets
    d = consumers(conf(mini_broker, group))
    d.assign([p0, p1])
    assert d.position(p0) == 4 and d.position(p1) == 1
    assert [r.offset for r in poll_values(d, 3)] == [1, 2, 3]


def test_offsets_for_times(mini_broker, both):
    from confluent_kafka import Producer

    topic = name("t")
    mini_broker.create_topic(topic, partitions=1)
    p = Producer({"bootstrap.servers": mini_broker.bootstrap})
    base = 1_700_000_000_000
    for i in range(5):
        p.produce(topic, value=f"v{i}".encode(), partition=0, timestamp=base + 1000 * i)
    assert p.flush(10) == 0
    c = both(conf(mini_broker))
    tp = TopicPartition(topic, 0)
    found = c.offsets_for_times({tp: base + 2500})
    assert found[tp] is not None and found[tp].offset == 3 and found[tp].timestamp == base + 3000
    assert c.offsets_for_times({tp: base + 10_000}) == {tp: None}


def test_subscribe_and_iterate(mini_broker, consumers):
    topic, group = name("t"), name("g")
    mini_broker.create_topic(topic, partitions=3)
    values = produce_spread(mini_broker.bootstrap, topic, 3, 3)
    c = consumers(
        topic, **conf(mini_broker, group), consumer_timeout_ms=1500, value_deserializer=bytes.decode
    )
    got = [r.value for r in c]  # ends after 1.5 s without records
    assert sorted(got) == sorted(values)
    assert c.assignment() == {TopicPartition(topic, p) for p in range(3)}
    assert c.subscription() == {topic}


class Recorder:
    def __init__(self, who, log):
        self.who, self.log = who, log

    def on_partitions_revoked(self, partitions):
        self.log.append((self.who, "revoked", sorted(p.partition for p in partitions)))

    def on_partitions_assigned(self, partitions):
        self.log.append((self.who, "assigned", sorted(p.partition for p in partitions)))

    def on_partitions_lost(self, partitions):
        self.log.append((self.who, "lost", sorted(p.partition for p in partitions)))


def test_listener_order_over_a_two_member_rebalance(mini_broker, both):
    topic, group = name("t"), name("g")
    mini_broker.create_topic(topic, partitions=4)
    log = []
    a = both(conf(mini_broker, group))
    a.subscribe([topic], listener=Recorder("a", log))
    wait_for(
        lambda: a.poll(100) is not None and len(a.assignment()) == 4,
        timeout=20,
        message="a owns every partition",
    )
    assert log == [("a", "assigned", [0, 1, 2, 3])]
    meta = a.group_metadata()
    assert meta.group_id == group and meta.generation_id >= 1 and meta.member_id
    b = both(conf(mini_broker, group))
    b.subscribe(pattern=topic.replace("-", "."), listener=Recorder("b", log))
    stop = threading.Event()

    def loop(c):
        while not stop.is_set():
            c.poll(100)

    threads = [threading.Thread(target=loop, args=(c,), daemon=True) for c in (a, b)]
    for t in threads:
        t.start()
    try:
        wait_for(
            lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2,
            timeout=30,
            message="two members, two partitions each",
        )
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    a_events = [e for e in log if e[0] == "a"]
    assert a_events[:3] == [
        ("a", "assigned", [0, 1, 2, 3]),
        ("a", "revoked", [0, 1, 2, 3]),
        ("a", "assigned", sorted(p.partition for p in a.assignment())),
    ]
    assert [e for e in log if e[0] == "b"][-1] == (
        "b",
        "assigned",
        sorted(p.partition for p in b.assignment()),
    )
    # every partition is owned by exactly one member
    assert a.assignment() | b.assignment() == {TopicPartition(topic, p) for p in range(4)}
    assert not a.assignment() & b.assignment()
    # b leaves on close: a is told to rebalance and gets all four back
    b.close()
    wait_for(
        lambda: a.poll(100) is not None and len(a.assignment()) == 4,
        timeout=30,
        message="a owns all again",
    )
    assert log[-2:] == [("a", "revoked", sorted(log[-2][2])), ("a", "assigned", [0, 1, 2, 3])]


def test_fenced_member_reports_lost(mini_broker, both):
    topic, group = name("t"), name("g")
    mini_broker.create_topic(topic, partitions=2)
    log = []
    a = both(conf(mini_broker, group))
    a.subscribe([topic], listener=Recorder("a", log))
    wait_for(
        lambda: a.poll(100) is not None and len(a.assignment()) == 2,
        timeout=20,
        message="a assigned",
    )
    set_member_id(a, "not-a-member")
    wait_for(lambda: a.poll(100) is not None and len(log) >= 3, timeout=20, message="a rejoined")
    assert log[:3] == [("a", "assigned", [0, 1]), ("a", "lost", [0, 1]), ("a", "assigned", [0, 1])]


def test_shares_a_group_with_the_group_connector(mini_broker, consumers):
    """Same group protocol as GroupConsumerConnector: both members split the partitions."""
    from kclient import consumer as legacy

    topic, group = name("t"), name("g")
    mini_broker.create_topic(topic, partitions=4)
    conn = legacy.create(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "group.id": group,
            "consumer.id": "old",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
            "rebalance.backoff.ms": 200,
            "rebalance.max.retries": 10,
            "auto.commit.enable": False,
        }
    )
    try:
        conn.create_message_streams({topic: 1})
        assert len(conn.owned_partitions()) == 4
        c = consumers(topic, **conf(mini_broker, group))
        stop = threading.Event()
        t = threading.Thread(
            target=lambda: [c.poll(100) for _ in iter(stop.is_set, True)], daemon=True
        )
        t.start()
        try:
            wait_for(
                lambda: len(c.assignment()) == 2 and len(conn.owned_partitions()) == 2,
                timeout=30,
                message="two and two",
            )
        finally:
            stop.set()
            t.join(10)
        mine = {(tp.topic, tp.partition) for tp in c.assignment()}
        assert not mine & set(conn.owned_partitions())
        assert mine | set(conn.owned_partitions()) == {(topic, p) for p in range(4)}
    finally:
        conn.shutdown()


def test_pattern_subscription_picks_up_new_topics_and_metrics(mini_broker, both):
    prefix, group = name("pat"), name("g")
    mini_broker.create_topic(f"{prefix}-a", partitions=1)
    produce(mini_broker.bootstrap, f"{prefix}-a", ["a0"], partition=0)
    log = []
    c = both(conf(mini_broker, group), value_deserializer=bytes.decode)
    c.subscribe(pattern=f"{prefix}-.*", listener=Recorder("c", log))
    assert [r.value for r in poll_values(c, 1)] == ["a0"]
    assert c.subscription() == {f"{prefix}-a"}
    c.commit()  # else the rejoin reads a0 again (no committed offset)
    mini_broker.create_topic(f"{prefix}-b", partitions=2)
    produce(mini_broker.bootstrap, f"{prefix}-b", ["b0"], partition=1)
    got = poll_values(c, 1, timeout=20)
    assert [(r.topic, r.value) for r in got] == [(f"{prefix}-b", "b0")]
    assert c.assignment() == {
        TopicPartition(f"{prefix}-a", 0),
        TopicPartition(f"{prefix}-b", 0),
        TopicPartition(f"{prefix}-b", 1),
    }
    assert [e[1] for e in log] == ["assigned", "revoked", "assigned"]
    m = c.metrics()
    assert m["rebalances"] == 2
    part = m["partitions"][f"{prefix}-b/1"]
    assert part["position"] == 1 and part["high_watermark"] == 1 and part["lag"] == 0
    c.unsubscribe()
    assert c.assignment() == set() and log[-1][1] == "revoked"
    with pytest.raises(IllegalStateError):
        c.poll(0)


def test_close_auto_commits_and_commit_async_reports_errors(mini_broker, consumers):
    topic, group = name("t"), name("g")
    mini_broker.create_topic(topic, partitions=1)
    produce(mini_broker.bootstrap, topic, [f"v{i}" for i in range(6)], partition=0)
    tp = TopicPartition(topic, 0)
    c = consumers(
        topic,
        **conf(
            mini_broker, group, **{"enable.auto.commit": True, "auto.commit.interval.ms": 600000}
        ),
    )
    assert [r.offset for r in poll_values(c, 4)][:4] == [0, 1, 2, 3]
    c.seek(tp, 4)
    c.close()  # auto-commit: the position, 4
    d = consumers(topic, **conf(mini_broker, group))
    assert [r.offset for r in poll_values(d, 2)] == [4, 5]
    assert d.committed(tp) == 4
    d.membership.member_id = "fenced"  # as if the coordinator forgot us
    seen = []
    fut = d.commit_async(callback=lambda offsets, exc: seen.append((offsets, exc)))
    with pytest.raises(Exception) as info:
        fut.result(10)
    assert seen and seen[0][0] == {tp: 6} and seen[0][1] is info.value
    assert d.committed(tp) == 4


def test_fetch_max_bytes_bounds_each_fetch_and_everything_still_arrives(mini_broker, both):
    # twelve batches of one 1000-byte record each; a 2500-byte response holds at most two, and
    # with one chunk queued (AIOConsumer prefetches) a poll returns at most one response's
    topic = name("fmb")
    mini_broker.create_topic(topic, partitions=1)
    for i in range(12):
        produce(mini_broker.bootstrap, topic, [b"%04d" % i + b"x" * 996], partition=0)
    c = both(conf(mini_broker, **{"fetch.max.bytes": 2500, "queued.max.message.chunks": 1}))
    c.assign([TopicPartition(topic, 0)])
    sizes, got = [], []
    deadline = time.monotonic() + 20
    while len(got) < 12 and time.monotonic() < deadline:
        for records in c.poll(200, max_records=100).values():
            sizes.append(len(records))
            got += [r.value[:4] for r in records]
    assert got == [b"%04d" % i for i in range(12)]
    assert max(sizes) <= 2 and len(sizes) >= 6, sizes


def test_read_committed_leaves_out_aborted_transactions(mini_broker, both):
    from kclient import Producer, ProducerData

    topic = name("tx")
    mini_broker.create_topic(topic, partitions=1)
    with Producer(
        {
            "metadata.broker.list": mini_broker.bootstrap,
            "producer.type": "sync",
            "transactional.id": name("tid"),
            "request.required.acks": -1,
        }
    ) as p:
        p.init_transactions()
        for tag, commit in (("c1", True), ("ab", False), ("c2", True)):
            p.begin_transaction()
            p.send([ProducerData(topic, f"{tag}-{i}".encode(), partition=0) for i in range(3)])
            p.commit_transaction() if commit else p.abort_transaction()
    want = [f"{t}-{i}" for t in ("c1", "c2") for i in range(3)]
    c = both(
        conf(mini_broker, **{"isolation.level": "read_committed"}), value_deserializer=bytes.decode
    )
    c.assign([TopicPartition(topic, 0)])
    assert [r.value for r in poll_values(c, len(want))] == want
    u = both(conf(mini_broker), value_deserializer=bytes.decode)
    u.assign([TopicPartition(topic, 0)])
    assert sorted(r.value for r in poll_values(u, 9)) == sorted(
        want + [f"ab-{i}" for i in range(3)]
    )


def test_assignment_strategy_preference_lists_and_java_names(mini_broker, both):
    """Java's assignor class names map to the protocol names, in preference order; the
    rebalance is cooperative only when every configured assignor is (Java's rule)."""
    java = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
    mixed = both(conf(mini_broker, name("g"), **{"partition.assignment.strategy": f"{java},range"}))
    assert (mixed.strategies, mixed.cooperative) == (["cooperative-sticky", "range"], False)
    coop = both(conf(mini_broker, name("g"), **{"partition.assignment.strategy": [java]}))
    assert (coop.strategies, coop.cooperative) == (["cooperative-sticky"], True)


def test_partitions_on_three_leaders_and_a_leader_move(mini_cluster, both):
    # a fetch per leader, all on the wire before any answer is read; a partition whose leader
    # moves answers NOT_LEADER, the metadata is refreshed and reading goes on at the new one
    topic = name("lead")
    leaders = mini_cluster.create_topic(topic, partitions=3)
    assert sorted(leaders.values()) == [0, 1, 2]
    for p in range(3):
        produce(mini_cluster.bootstrap, topic, [f"p{p}-{i}" for i in range(5)], partition=p)
    c = both(conf(mini_cluster), value_deserializer=bytes.decode)
    c.assign([TopicPartition(topic, p) for p in range(3)])
    got = poll_values(c, 15)
    assert sorted(r.value for r in got) == sorted(f"p{p}-{i}" for p in range(3) for i in range(5))
    if isinstance(c, Consumer):
        assert sorted(c._fetchers) == [0, 1, 2]
    old = leaders[0]
    mini_cluster.move_leader(topic, 0, (old + 1) % 3)
    produce(mini_cluster.bootstrap, topic, ["moved-0", "moved-1"], partition=0)
    more = poll_values(c, 2)
    assert [(r.partition, r.offset, r.value) for r in more] == [
        (0, 5, "moved-0"),
        (0, 6, "moved-1"),
    ]
