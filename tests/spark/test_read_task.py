"""The read task (kclient.spark.reader.read_range) without Spark: leaders that moved, and the
columns it turns into Arrow batches."""

from kclient import Producer, ProducerData
from kclient.spark.arrow import arrow_schema
from kclient.spark.offsets import OffsetRange
from kclient.spark.options import parse_read_options
from kclient.spark.reader import read_range


def _setup(cluster, topic, n=300):
    cluster.create_topic(topic, 1)
    with Producer({"metadata.broker.list": cluster.bootstrap}) as p:  # sync: 10 batches
        for start in range(0, n, n // 10):
            p.send([ProducerData(topic, b"v%03d" % i) for i in range(start, start + n // 10)])
    opts = parse_read_options(
        {
            "kafka.bootstrap.servers": cluster.bootstrap,
            "subscribe": topic,
            "kafka.max.partition.fetch.bytes": "1024",
        },
        streaming=False,
    )
    leader = cluster.leaders(topic)[0]
    others = [i for i in range(3) if cluster.broker(i).node_id != leader]
    return opts, leader, others


def test_a_stale_leader_in_the_plan_is_followed(mini_cluster):
    opts, leader, others = _setup(mini_cluster, "stale")
    wrong = mini_cluster.broker(others[0]).bootstrap
    batches = list(read_range(OffsetRange("stale", 0, 0, 300, wrong), opts))
    assert all(b.schema == arrow_schema(False) for b in batches)
    offsets = [o for b in batches for o in b.column("offset").to_pylist()]
    assert offsets == list(range(300)) and len(batches) > 1


def test_a_leader_moving_mid_read_loses_and_repeats_nothing(mini_cluster):
    opts, leader, others = _setup(mini_cluster, "moving")
    it = read_range(OffsetRange("moving", 0, 0, 300, mini_cluster.broker(leader).bootstrap), opts)
    first = next(it)
    mini_cluster.move_leader("moving", 0, mini_cluster.broker(others[1]).node_id)
    rest = list(it)
    assert rest  # the move happened in the middle of the range
    values = [v for b in [first, *rest] for v in b.column("value").to_pylist()]
    assert values == [b"v%03d" % i for i in range(300)]


def _transactions(bootstrap, topic, open_one=False):
    """Committed c0-c4, aborted a0-a4, committed d0-d4; with ``open_one`` a producer left
    holding an open transaction (o0-o2, flushed), returned to be closed by the caller."""
    p = Producer(
        {
            "metadata.broker.list": bootstrap,
            "producer.type": "async",
            "transactional.id": f"spark-{topic}",
            "request.required.acks": -1,
        }
    )
    p.init_transactions()
    for tag, commit in (("c", True), ("a", False), ("d", True)):
        p.begin_transaction()
        p.send([ProducerData(topic, b"%s%d" % (tag.encode(), i), partition=0) for i in range(5)])
        p.commit_transaction() if commit else p.abort_transaction()
    if open_one:
        p.begin_transaction()
        p.send([ProducerData(topic, b"o%d" % i, partition=0) for i in range(3)])
        p.flush()
        return p
    p.close()
    return None


def read_values(bootstrap, topic, isolation):
    """Plan a batch read with kafka.isolation.level and run its tasks (no Spark)."""
    from kclient.spark.reader import plan_batch

    opts = parse_read_options(
        {
            "kafka.bootstrap.servers": bootstrap,
            "subscribe": topic,
            "kafka.isolation.level": isolation,
        },
        streaming=False,
    )
    ranges = plan_batch(opts)
    values = [v for r in ranges for b in read_range(r, opts) for v in b.column("value").to_pylist()]
    return values, [(r.start, r.end) for r in ranges]


def test_read_committed_leaves_out_aborted_transactions(mini_broker):
    _transactions(mini_broker.bootstrap, "txn-read")
    committed = [b"c%d" % i for i in range(5)] + [b"d%d" % i for i in range(5)]
    values, plan = read_values(mini_broker.bootstrap, "txn-read", "read_committed")
    assert values == committed and plan == [(0, 18)]  # 15 records and 3 markers
    values, _ = read_values(mini_broker.bootstrap, "txn-read", "read_uncommitted")
    assert sorted(values) == sorted(committed + [b"a%d" % i for i in range(5)])


def test_offsets_are_asked_per_leader_and_match_one_by_one(mini_cluster):
    """The planner's one ListOffsets per leader gives each partition's own offsets, with
    partitions spread over three brokers, and a stale leader falls back to the per-partition
    path that finds the right one."""
    from kclient.spark.planner import Planner

    mini_cluster.create_topic("spread", 6)
    with Producer({"metadata.broker.list": mini_cluster.bootstrap}) as p:
        p.send([ProducerData("spread", b"v", partition=i % 6) for i in range(6 * 7 + 3)])
    opts = parse_read_options(
        {"kafka.bootstrap.servers": mini_cluster.bootstrap, "subscribe": "spread"},
        streaming=True,
    )
    planner = Planner(opts)
    try:
        leaders = planner.partitions()
        assert len(set(leaders.values())) == 3
        one_by_one = planner.offset_at
        asked = []
        planner.offset_at = lambda *a: asked.append(a[0]) or one_by_one(*a)
        latest = planner.offsets_at(leaders, -1)
        assert latest == {("spread", i): 8 if i < 3 else 7 for i in range(6)}
        assert asked == []  # three requests, one per leader
        assert latest == {tp: one_by_one(tp, a, -1) for tp, a in leaders.items()}
        assert planner.offsets_at(leaders, -2) == dict.fromkeys(leaders, 0)
        wrong = next(a for a in leaders.values() if a != leaders[("spread", 0)])
        stale = {**leaders, ("spread", 0): wrong, ("spread", 1): wrong}
        assert planner.offsets_at(stale, -1) == latest
        counts = {a: list(stale.values()).count(a) for a in stale.values()}
        # asked one by one: the stale leader's group, and a leader left with one partition
        assert sorted(asked) == sorted(
            tp for tp, a in stale.items() if a == wrong or counts[a] == 1
        )
    finally:
        planner.close()
