"""A mixed group on the mini-broker: kclient.Consumer and Java's KafkaConsumer, both with the
cooperative-sticky assignor; each leads once.  Partitions split without overlap and every
record is consumed exactly once."""

import struct
import time
import uuid

import pytest

from kclient.consumer.group_protocol import decode_subscription_full
from kclient.testing import KafkaTools, java_clients_problem, kafka_problem
from tests.needs import missing

from .coop_scenario import DRIVERS, members
from .helpers import produce_spread
from .java_member import ConfluentMember, JavaMember, run_mixed_group, run_static_beside_java

pytestmark = pytest.mark.kafka


def kclient_conf(bootstrap):
    return {
        "bootstrap.servers": bootstrap,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 200,
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 300,
        "fetch.wait.max.ms": 100,
        "partition.assignment.strategy": "cooperative-sticky",
    }


def check_static_beside_java(run):
    """The restarted static member took its place without a rebalance: Java heard nothing and
    kept its partitions; the restarted member got its predecessor's; a third one fenced it."""
    from kclient.errors import FencedInstanceIdError

    assert run["java_events_after"] == run["java_events_before"], "java saw a rebalance"
    assert run["java_owned_after"] == run["java_owned"]
    assert not run["java_owned"] & run["k_owned"]
    assert run["k2_events"][0] == ("assigned", sorted(run["k_owned"]))
    assert isinstance(run["fenced"], FencedInstanceIdError), run["fenced"]
    assert "group.instance.id 'inst-k'" in str(run["fenced"])
    assert not run["k_errors"]


def check_mixed(run):
    assert sum(len(o) for o in run["offsets"].values()) == run["sent"]
    for p, offs in run["offsets"].items():
        assert offs == list(range(len(offs))), f"partition {p}: duplicates or a gap"
    for phase, (mine, theirs) in run["phases"].items():
        assert not mine & theirs, phase
        assert len(mine) == len(theirs) == 2, phase
    # cooperative on the kclient side: never an eager revoke-all while it kept partitions
    kinds = [k for k, _ in run["kclient_events"]]
    assert "lost" not in kinds


@pytest.mark.parametrize("driver", DRIVERS)
def test_mixed_group_with_the_java_cooperative_sticky_consumer(mini_broker, driver):
    problem = kafka_problem("4") or java_clients_problem()
    if problem:
        missing(problem)
    topic = f"mixed-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=4)
    rounds = iter(range(100))

    def produce(n):
        produce_spread(mini_broker.bootstrap, topic, 4, n, prefix=f"r{next(rounds)}")

    seen = []

    def java_subscription(phase, group, java):
        """The Java member's Subscription as the coordinator holds it: Java 4 writes v3 with
        its owned partitions and generation, and the generation again as its user data."""
        summary = mini_broker.coordinator.group_summary(group)
        for m in summary["members"]:
            sub = decode_subscription_full(m["member_metadata"])
            if not sub.user_data.startswith(b"\x00\x00\x00") or len(sub.user_data) != 4:
                continue  # kclient's (generation + JSON)
            seen.append(sub)
            assert sub.version == 3 and sub.topics == [topic]
            assert sub.owned_partitions == {topic: sorted(java.owned)}
            assert sub.generation_id >= 1
            assert sub.user_data == struct.pack(">i", sub.generation_id)

    tools = KafkaTools(mini_broker.bootstrap)
    run = run_mixed_group(
        lambda group: JavaMember(tools, topic, group),
        topic,
        4,
        kclient_conf(mini_broker.bootstrap),
        produce,
        java_subscription,
        make=members(driver),
    )
    check_mixed(run)
    assert len(seen) == 1


@pytest.mark.parametrize("driver", DRIVERS)
def test_mixed_group_with_confluent_kafka_cooperative_sticky(mini_broker, driver):
    topic = f"mixed-rdk-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=4)
    rounds = iter(range(100))

    def produce(n):
        produce_spread(mini_broker.bootstrap, topic, 4, n, prefix=f"r{next(rounds)}")

    run = run_mixed_group(
        lambda group: ConfluentMember(mini_broker.bootstrap, topic, group),
        topic,
        4,
        kclient_conf(mini_broker.bootstrap),
        produce,
        make=members(driver),
    )
    check_mixed(run)


@pytest.mark.parametrize("driver", DRIVERS)
def test_java_static_member_restarts_without_a_rebalance(mini_broker, driver):
    """The mini-broker's static membership with Java's consumer: a static Java member closes
    (no LeaveGroup) and a new one with its group.instance.id takes its place; the kclient
    member (the leader) hears nothing and keeps its generation."""

    from .helpers import wait_for

    JAVA_RANGE = "org.apache.kafka.clients.consumer.RangeAssignor"
    problem = kafka_problem("4") or java_clients_problem()
    if problem:
        missing(problem)
    topic = f"static-j-{uuid.uuid4().hex[:6]}"
    group = f"static-j-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=4)
    produce_spread(mini_broker.bootstrap, topic, 4, 5)
    tools = KafkaTools(mini_broker.bootstrap)
    events: list = []
    k = members(driver)(
        "k",
        dict(
            kclient_conf(mini_broker.bootstrap),
            **{"group.id": group, "partition.assignment.strategy": "range"},
        ),
        events,
    )
    k.start(topic)
    j1 = j2 = None
    try:
        wait_for(lambda: len(k.partitions()) == 4, timeout=30, message="kclient owns all")
        j1 = JavaMember(tools, topic, group, JAVA_RANGE, instance_id="java-1")
        try:
            wait_for(
                lambda: len(j1.owned) == 2 and len(k.partitions()) == 2,
                timeout=60,
                message="java and kclient share",
            )
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}: java {j1.lines[-20:]}, kclient {k.partitions()} {events} {k.errors}"
            ) from None
        owned, gen = set(j1.owned), k.consumer.group_metadata().generation_id
        k_events = list(events)
        j1.close()
        j2 = JavaMember(tools, topic, group, JAVA_RANGE, instance_id="java-1")
        wait_for(lambda: j2.owned == owned, timeout=60, message="java restarted in place")
        time.sleep(1.0)
        gen_lines = [line for line in j2.lines if line.startswith("generation ")]
        assert events == k_events, "the kclient member's listener was called"
        assert k.consumer.group_metadata().generation_id == gen
        assert gen_lines == [f"generation {gen}"]
        assert not k.errors
    finally:
        for j in (j1, j2):
            if j is not None:
                j.close()
        k.stop()


def test_group_connector_with_the_java_cooperative_consumer(mini_broker):
    """A two-stream GroupConsumerConnector (cooperative-sticky, the leader) and a Java member:
    the connector keeps three partitions, hands one over in two phases; records read once."""
    from kclient import consumer

    from .helpers import drain, wait_for
    from .test_group_connector import group_config

    problem = kafka_problem("4") or java_clients_problem()
    if problem:
        missing(problem)
    topic, group = f"cj-{uuid.uuid4().hex[:6]}", f"cj-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=4)
    produce_spread(mini_broker.bootstrap, topic, 4, 5, prefix="first")
    conn = consumer.create(
        group_config(
            mini_broker.bootstrap,
            group,
            **{"consumer.id": "a", "partition.assignment.strategy": "cooperative-sticky"},
        )
    )
    java = None
    try:
        streams = conn.create_message_streams({topic: 2})[topic]
        first = drain(streams[0], 10) + drain(streams[1], 10)
        assert len(first) == 20
        conn.commit_offsets()
        before = set(conn.owned_partitions())
        java = JavaMember(KafkaTools(mini_broker.bootstrap), topic, group)
        wait_for(
            lambda: len(java.owned) == 1 and len(conn.owned_partitions()) == 3,
            timeout=60,
            message="the connector handed one partition to java",
        )
        mine = {p for _, p in conn.owned_partitions()}
        assert set(conn.owned_partitions()) <= before and not mine & java.owned
        # java got the partition only in the follow-up rebalance (generation 3: 1 was the
        # connector alone, 2 the round where the connector still owned it and revoked it)
        at = next(
            i
            for i, line in enumerate(java.lines)
            if line.startswith("assigned ") and line != "assigned "
        )
        wait_for(lambda: len(java.lines) > at + 1, message="java's generation line")
        assert java.lines[at + 1] == "generation 3", java.lines
        produce_spread(mini_broker.bootstrap, topic, 4, 5, prefix="second")
        later: list = []
        deadline = time.monotonic() + 30
        while len(later) < 15 and time.monotonic() < deadline:
            for stream in streams:
                later += drain(stream)
        wait_for(lambda: len(java.records) >= 5, timeout=30, message="java read its share")
        assert sorted(m.partition for m in later) == sorted(p for p in mine for _ in range(5))
        assert {m.offset for m in later} == set(range(5, 10))
        (jp,) = java.owned
        assert sorted((p, o) for p, o, _ in java.records) == [(jp, o) for o in range(5, 10)]
    finally:
        if java is not None:
            java.close()
        conn.shutdown()


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_static_kclient_member_restarts_beside_java(mini_broker, strategy, driver):
    problem = kafka_problem("4") or java_clients_problem()
    if problem:
        missing(problem)
    topic = f"static-k-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=4)
    produce_spread(mini_broker.bootstrap, topic, 4, 5)
    run = run_static_beside_java(
        KafkaTools(mini_broker.bootstrap),
        topic,
        4,
        kclient_conf(mini_broker.bootstrap),
        strategy,
        members(driver),
    )
    check_static_beside_java(run)
