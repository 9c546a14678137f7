"""Broker-coordinated mode (no ZooKeeper): the same connector on the mini-broker and on tansu."""

import pytest

from kclient import consumer
from kclient.consumer.group_connector import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

from .helpers import drain, produce, produce_spread, wait_for


def group_config(bootstrap, group, **extra):
    conf = {
        "metadata.broker.list": bootstrap,
        "group.id": group,
        "consumer.timeout.ms": 300,
        "auto.offset.reset": "smallest",
        "auto.commit.enable": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
        "rebalance.backoff.ms": 200,
        "rebalance.max.retries": 10,
        "refresh.leader.backoff.ms": 50,
    }
    conf.update(extra)
    return conf


def test_consumer_protocol_roundtrip():
    sub = encode_subscription(["a", "b"], b'{"x":1}')
    assert sub[:2] == b"\x00\x00" and decode_subscription(sub) == (["a", "b"], b'{"x":1}')
    asg = encode_assignment({"t": [2, 0]}, b"u")
    assert decode_assignment(asg) == ({"t": [0, 2]}, b"u")
    assert decode_assignment(b"") == ({}, b"")


def test_group_mode_on_the_mini_broker(mini_broker, connectors):
    mini_broker.create_topic("gt", partitions=3)
    values = produce_spread(mini_broker.bootstrap, "gt", 3, 5)
    a = connectors(group_config(mini_broker.bootstrap, "gg", **{"consumer.id": "a"}))
    assert type(a).__name__ == "GroupConsumerConnector"
    sa = a.create_message_streams({"gt": 2})["gt"]
    assert a.owned_partitions() == {("gt", 0): "gg_a-0", ("gt", 1): "gg_a-0", ("gt", 2): "gg_a-1"}
    got = drain(sa[0], 10) + drain(sa[1], 5)
    assert {m.message.decode() for m in got} == values
    a.commit_offsets()
    # a second member joins: range over a-0, a-1, b-0 -> one partition each
    b = connectors(group_config(mini_broker.bootstrap, "gg", **{"consumer.id": "b"}))
    b.create_message_streams({"gt": 1})
    wait_for(
        lambda: a.owned_partitions() == {("gt", 0): "gg_a-0", ("gt", 1): "gg_a-1"},
        message="a after b joined",
    )
    assert b.owned_partitions() == {("gt", 2): "gg_b-0"}
    # b leaves: a gets everything back
    b.shutdown()
    wait_for(
        lambda: (
            a.owned_partitions() == {("gt", 0): "gg_a-0", ("gt", 1): "gg_a-0", ("gt", 2): "gg_a-1"}
        ),
        message="a after b left",
    )
    produce(mini_broker.bootstrap, "gt", [b"late"], partition=2)
    assert [m.message for m in drain(sa[1], 1)] == [b"late"]


def test_group_mode_offsets_and_whitelist(mini_broker, connectors):
    mini_broker.create_topic("wa", partitions=1)
    produce(mini_broker.bootstrap, "wa", [b"1", b"2", b"3"])
    c = connectors(group_config(mini_broker.bootstrap, "gw"))
    s = c.create_message_streams_by_filter(consumer.Whitelist("w.*"), 1)[0]
    assert [m.message for m in drain(s, 2)] == [b"1", b"2"]
    c.commit_offsets()
    mini_broker.create_topic("wb", partitions=1)
    wait_for(lambda: ("wb", 0) in c.owned_partitions(), message="new topic owned")
    produce(mini_broker.bootstrap, "wb", [b"new"])
    got = {(m.topic, m.message) for m in drain(s, 2)}
    assert got == {("wa", b"3"), ("wb", b"new")}
    c.shutdown()
    c2 = connectors(group_config(mini_broker.bootstrap, "gw"))
    s2 = c2.create_message_streams({"wa": 1})["wa"][0]
    assert [m.message for m in drain(s2, 1)] == [b"3"]  # resumes from the commit


def test_roundrobin_in_group_mode(mini_broker, connectors):
    mini_broker.create_topic("r1", partitions=3)
    mini_broker.create_topic("r2", partitions=3)
    conf = {"partition.assignment.strategy": "roundrobin"}
    a = connectors(group_config(mini_broker.bootstrap, "gr", **conf, **{"consumer.id": "a"}))
    a.create_message_streams({"r1": 1, "r2": 1})
    b = connectors(group_config(mini_broker.bootstrap, "gr", **conf, **{"consumer.id": "b"}))
    b.create_message_streams({"r1": 1, "r2": 1})
    threads = ["gr_a-0", "gr_b-0"]
    expected = consumer.roundrobin_assign(
        {"r1": threads, "r2": threads}, {"r1": [0, 1, 2], "r2": [0, 1, 2]}
    )
    wait_for(
        lambda: (
            {**a.owned_partitions(), **b.owned_partitions()} == expected
            and not set(a.owned_partitions()) & set(b.owned_partitions())
        ),
        message="round-robin assignment",
    )


@pytest.mark.tansu
def test_group_mode_on_tansu(tansu, connectors):
    from kclient.cluster import Cluster

    with Cluster(tansu.bootstrap) as cl:
        cl.create_topic("kc-tansu-g", partitions=2)
    values = produce_spread(tansu.bootstrap, "kc-tansu-g", 2, 3)
    a = connectors(group_config(tansu.bootstrap, "kc-tansu", **{"consumer.id": "a"}))
    sa = a.create_message_streams({"kc-tansu-g": 1})["kc-tansu-g"][0]
    assert {m.message.decode() for m in drain(sa, 6)} == values
    a.commit_offsets()
    b = connectors(group_config(tansu.bootstrap, "kc-tansu", **{"consumer.id": "b"}))
    b.create_message_streams({"kc-tansu-g": 1})
    wait_for(
        lambda: (
            set(a.owned_partitions()) == {("kc-tansu-g", 0)}
            and set(b.owned_partitions()) == {("kc-tansu-g", 1)}
        ),
        timeout=30,
        message="tansu rebalance",
    )
    b.shutdown()  # b leaves: a owns both partitions again
    wait_for(
        lambda: set(a.owned_partitions()) == {("kc-tansu-g", 0), ("kc-tansu-g", 1)},
        timeout=30,
        message="tansu rebalance after leave",
    )
    produce(tansu.bootstrap, "kc-tansu-g", [b"after-leave"], partition=1)
    assert [m.message for m in drain(sa, 1)] == [b"after-leave"]


def test_fetcher_follows_a_leader_move_and_a_dead_broker(mini_cluster, connectors):
    mini_cluster.create_topic("lm", partitions=2)
    produce(mini_cluster.bootstrap, "lm", [b"a0", b"a1"], partition=0)
    produce(mini_cluster.bootstrap, "lm", [b"b0"], partition=1)
    c = connectors(group_config(mini_cluster.bootstrap, "glm"))
    s = c.create_message_streams({"lm": 1})["lm"][0]
    assert sorted(m.message for m in drain(s, 3)) == [b"a0", b"a1", b"b0"]
    old = mini_cluster.leaders("lm")[0]
    new = next(i for i in range(3) if i not in mini_cluster.leaders("lm").values())
    mini_cluster.move_leader("lm", 0, new)
    mini_cluster.stop_broker(old)  # the old leader's fetcher connection breaks
    produce(mini_cluster.bootstrap, "lm", [b"a2"], partition=0)
    got = drain(s, 1)
    assert [(m.partition, m.offset, m.message) for m in got] == [(0, 2, b"a2")]


def test_group_mode_survives_coordinator_failover(mini_cluster, connectors):
    mini_cluster.create_topic("cf", partitions=3)
    group = "gcf"
    coord = mini_cluster.view.coordinator_for(group)[0]
    c = connectors(group_config(mini_cluster.bootstrap, group))
    s = c.create_message_streams({"cf": 1})["cf"][0]
    alive_part = next(p for p, leader in mini_cluster.leaders("cf").items() if leader != coord)
    produce(mini_cluster.bootstrap, "cf", [b"before"], partition=alive_part)
    assert [m.message for m in drain(s, 1)] == [b"before"]
    mini_cluster.stop_broker(coord)
    produce(mini_cluster.bootstrap, "cf", [b"after"], partition=alive_part)
    assert [m.message for m in drain(s, 1)] == [b"after"]
    # the heartbeat finds the new coordinator, which does not know the member: it rejoins
    wait_for(
        lambda: (
            c.coordinator.node_id not in (None, coord)
            and c._stable.is_set()
            and c.generation_id >= 1
        ),
        timeout=30,
        message="rejoined at the new coordinator",
    )
    c.commit_offsets()
    assert c.coordinator.node_id != coord


def test_config_errors():
    from kclient.errors import InvalidConfigError

    with pytest.raises(InvalidConfigError, match="zookeeper.connect' or 'metadata.broker.list"):
        consumer.create({"group.id": "g"})
    with pytest.raises(InvalidConfigError, match="group.id"):
        consumer.create({"metadata.broker.list": "127.0.0.1:1"})
    with pytest.raises(InvalidConfigError, match="auto.offset.reset"):
        consumer.create(
            {
                "metadata.broker.list": "127.0.0.1:1",
                "group.id": "g",
                "auto.offset.reset": "earliestest",
            }
        )


def test_streams_are_created_once_and_unreachable_brokers_fail_clearly(mini_broker, connectors):
    from kclient.errors import ConsumerRebalanceFailedError, IllegalStateError

    mini_broker.create_topic("once", partitions=1)
    c = connectors(group_config(mini_broker.bootstrap, "gonce"))
    c.create_message_streams({"once": 1})
    with pytest.raises(IllegalStateError, match="only once"):
        c.create_message_streams_by_filter(consumer.Whitelist("o.*"))
    dead = connectors(
        group_config("127.0.0.1:1", "gdead", **{"rebalance.max.retries": 1, "retry.backoff.ms": 10})
    )
    with pytest.raises(ConsumerRebalanceFailedError, match="can't rebalance"):
        dead.create_message_streams({"once": 1})


def test_plain_callables_as_deserializers(mini_broker, connectors):
    # kafka-python's value_deserializer=json.loads (issue 15): no Decoder class needed
    import json

    mini_broker.create_topic("js", partitions=1)
    produce(mini_broker.bootstrap, "js", [b'{"n": 1}', b'{"n": 2}'])
    c = connectors(
        group_config(mini_broker.bootstrap, "gjs"),
        value_deserializer=json.loads,
        key_deserializer=lambda b: b,
    )
    stream = c.create_message_streams({"js": 1})["js"][0]
    assert [m.message for m in drain(stream, 2)] == [{"n": 1}, {"n": 2}]


def test_metrics_lag_and_rebalances(mini_broker, connectors):
    # issue 15: known traffic -> counts (20 messages, 15 consumed: lag 5; one rebalance)
    import json

    mini_broker.create_topic("lagt", partitions=2)
    produce(mini_broker.bootstrap, "lagt", [b"a%d" % i for i in range(10)], partition=0)
    produce(mini_broker.bootstrap, "lagt", [b"b%d" % i for i in range(10)], partition=1)
    got: list = []
    c = connectors(
        group_config(mini_broker.bootstrap, "glag", **{"consumer.id": "only"}),
        statistics_interval_ms=50,
        stats_cb=got.append,
    )
    stream = c.create_message_streams({"lagt": 1})["lagt"][0]
    it = iter(stream)
    assert len([next(it) for _ in range(15)]) == 15

    def lag():
        m = c.metrics()
        parts = m["partitions"]
        return sum(p["lag"] or 0 for p in parts.values()), m

    wait_for(lambda: lag()[0] == 5, message="lag of 5")
    total, m = lag()
    assert {p["high_watermark"] for p in m["partitions"].values()} == {10}
    assert sum(p["consumed_offset"] for p in m["partitions"].values()) == 15
    assert m["rebalances"] == 1 and m["group_id"] == "glag"
    apis = {k: v for b in m["brokers"].values() for k, v in b["requests_by_api"].items()}
    assert apis["JoinGroup"] >= 1 and apis["SyncGroup"] >= 1 and apis["Fetch"] >= 1
    wait_for(lambda: len(got) >= 1, message="stats_cb")
    assert json.loads(got[-1])["type"] == "consumer"
