"""A mixed group on the mini-broker: kclient.Consumer and Java's KafkaConsumer, both with the
cooperative-sticky assignor; each leads once.  Partitions split without overlap and every
record is consumed exactly once."""
import uuid

import pytest

from kclient.testing import KafkaTools, java_clients_problem, kafka_problem

from .helpers import produce_spread
from .java_member import ConfluentMember, run_mixed_group, run_mixed_java_group

pytestmark = pytest.mark.kafka


def kclient_conf(bootstrap):
    return {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
            "enable.auto.commit": True, "auto.commit.interval.ms": 200,
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 300,
            "fetch.wait.max.ms": 100, "partition.assignment.strategy": "cooperative-sticky"}


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


def test_mixed_group_with_the_java_cooperative_sticky_consumer(mini_broker):
    problem = kafka_problem("4") or java_clients_problem()
    if problem:
        pytest.skip(problem)
    topic = f"mixed-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=4)
    rounds = iter(range(100))

    def produce(n):
        produce_spread(mini_broker.bootstrap, topic, 4, n, prefix=f"r{next(rounds)}")
    run = run_mixed_java_group(KafkaTools(mini_broker.bootstrap), topic, 4,
                               kclient_conf(mini_broker.bootstrap), produce)
    check_mixed(run)


def test_mixed_group_with_confluent_kafka_cooperative_sticky(mini_broker):
    topic = f"mixed-rdk-{uuid.uuid4().hex[:6]}"
    mini_broker.create_topic(topic, partitions=4)
    rounds = iter(range(100))

    def produce(n):
        produce_spread(mini_broker.bootstrap, topic, 4, n, prefix=f"r{next(rounds)}")
    run = run_mixed_group(lambda group: ConfluentMember(mini_broker.bootstrap, topic, group),
                          topic, 4, kclient_conf(mini_broker.bootstrap), produce)
    check_mixed(run)
