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
    opts = parse_read_options({"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": topic,
                               "kafka.max.partition.fetch.bytes": "1024"}, streaming=False)
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
