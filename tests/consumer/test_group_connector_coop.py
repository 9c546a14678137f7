"""GroupConsumerConnector with cooperative-sticky and static membership on the mini-broker,
beside a kclient.Consumer in the same group."""

import time

from kclient import Consumer

from ..waiting import still
from .helpers import drain, produce_spread, wait_for
from .test_group_connector import group_config


def test_connector_cooperative_sticky_with_a_modern_consumer(mini_broker, connectors):
    mini_broker.create_topic("cs", partitions=4)
    values = produce_spread(mini_broker.bootstrap, "cs", 4, 5)
    conf = group_config(
        mini_broker.bootstrap,
        "gcs",
        **{"consumer.id": "a", "partition.assignment.strategy": "cooperative-sticky"},
    )
    a = connectors(conf)
    streams = a.create_message_streams({"cs": 2})["cs"]
    wait_for(lambda: len(a.owned_partitions()) == 4, message="a owns everything")
    before = a.owned_partitions()
    got = drain(streams[0], 10) + drain(streams[1], 10)
    assert {m.message.decode() for m in got} == values
    a.commit_offsets()
    c = Consumer(
        {
            "bootstrap.servers": mini_broker.bootstrap,
            "group.id": "gcs",
            "partition.assignment.strategy": "cooperative-sticky",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
        }
    )
    try:
        c.subscribe(["cs"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(c.assignment()) != 1:
            c.poll(100)
        # a (two streams) keeps three of its partitions, c gets the fourth; nothing twice
        wait_for(lambda: len(a.owned_partitions()) == 3, message="a gave one up")
        mine = {(tp.topic, tp.partition) for tp in c.assignment()}
        assert len(mine) == 1 and not mine & set(a.owned_partitions())
        assert set(a.owned_partitions()) <= set(before)
        assert c.poll(500) == {}  # a committed everything before
    finally:
        c.close()


def test_connector_static_member_restart(mini_broker, connectors):
    mini_broker.create_topic("st", partitions=2)
    dyn = connectors(group_config(mini_broker.bootstrap, "gst", **{"consumer.id": "d"}))
    dyn.create_message_streams({"st": 1})
    wait_for(lambda: len(dyn.owned_partitions()) == 2, message="d owns both")
    static = group_config(
        mini_broker.bootstrap, "gst", **{"consumer.id": "s", "group.instance.id": "s-1"}
    )
    s = connectors(static)
    s.create_message_streams({"st": 1})
    wait_for(
        lambda: len(s.owned_partitions()) == 1 and len(dyn.owned_partitions()) == 1,
        message="one each",
    )
    wait_for(lambda: dyn.executor.idle, message="d's rebalance run returned (and counted)")
    gen, rebalances = dyn.generation_id, dyn.executor.rebalances
    s_parts = set(s.owned_partitions())
    s.shutdown()  # static: no LeaveGroup
    s2 = connectors(static)
    s2.create_message_streams({"st": 1})
    wait_for(lambda: set(s2.owned_partitions()) == s_parts, message="s2 took s's place")
    still(
        lambda: dyn.generation_id == gen and dyn.executor.rebalances == rebalances,
        1.0,
        "d neither rejoins nor rebalances for the static member's restart",
    )
    assert s2.generation_id == gen
