"""Real outside servers for tests and benchmarks, each a context manager on free loopback ports:
tansu, ZooKeeper, the mini-broker in its own process, and Apache Kafka (KRaft or ZooKeeper mode).
"""

from __future__ import annotations

from .java_tools import KafkaTools, java_clients_problem
from .kafka import KafkaNode, KafkaServer
from .kafka_dist import (
    kafka_cache,
    kafka_java,
    kafka_problem,
    kafka_version,
    kafka_versions,
    run_kafka_tool,
    start_kafka_tool,
    tool_class,
)
from .servers import (
    MiniBrokerProcess,
    TansuServer,
    ZooKeeperServer,
    free_port,
    tansu_binary,
    wait_for_port,
    zookeeper_available,
)
from .topics import create_ready_topic, wait_until_served

__all__ = [
    "free_port",
    "wait_for_port",
    "tansu_binary",
    "TansuServer",
    "ZooKeeperServer",
    "MiniBrokerProcess",
    "zookeeper_available",
    "KafkaServer",
    "KafkaNode",
    "kafka_cache",
    "kafka_versions",
    "kafka_version",
    "kafka_problem",
    "kafka_java",
    "run_kafka_tool",
    "start_kafka_tool",
    "tool_class",
    "KafkaTools",
    "java_clients_problem",
    "create_ready_topic",
    "wait_until_served",
]
