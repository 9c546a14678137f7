"""The high-level consumer: ConsumerConnector, KafkaStream, TopicFilter (Kafka 0.8.2's API).

    from kclient import consumer
    conn = consumer.create({"zookeeper.connect": "127.0.0.1:2181", "group.id": "g1"})
    streams = conn.create_message_streams({"events": 2})
    for m in streams["events"][0]:
        m.topic, m.partition, m.offset, m.key, m.message
    conn.commit_offsets(); conn.shutdown()

With ``zookeeper.connect`` the group coordinates through ZooKeeper in Kafka 0.8's layout
(:class:`ZookeeperConsumerConnector`); without it, through the broker's group coordinator
(:class:`GroupConsumerConnector`), with the same API and assignment; under
``group.protocol=consumer`` (KIP-848) the connector is one member the broker assigns to
(:class:`ConsumerProtocolConnector`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kclient.config import load_config
from kclient.errors import InvalidConfigError

from .assignment import range_assign, roundrobin_assign
from .connector import ConsumerConnector, ConsumerGroupMetadata, generate_consumer_id
from .group_connector import GroupConsumerConnector
from .kafka_consumer import Consumer, ConsumerRebalanceListener, ConsumerRecord, OffsetAndTimestamp
from .protocol_connector import ConsumerProtocolConnector
from .stream import KafkaStream, MessageAndMetadata
from .topic_filter import Blacklist, TopicFilter, Whitelist

if TYPE_CHECKING:
    from .zk_connector import ZookeeperConsumerConnector

__all__ = [
    "create",
    "ConsumerConnector",
    "ConsumerGroupMetadata",
    "ZookeeperConsumerConnector",
    "GroupConsumerConnector",
    "ConsumerProtocolConnector",
    "KafkaStream",
    "MessageAndMetadata",
    "TopicFilter",
    "Whitelist",
    "Blacklist",
    "range_assign",
    "roundrobin_assign",
    "generate_consumer_id",
    "Consumer",
    "ConsumerRecord",
    "ConsumerRebalanceListener",
    "OffsetAndTimestamp",
]


def create(config: Mapping[str, Any] | None = None, **overrides: Any) -> ConsumerConnector:
    """A connector for ``config``: ZooKeeper-coordinated when ``zookeeper.connect`` is set,
    else coordinated by the broker's group coordinator (``group.protocol=consumer``: as one
    KIP-848 member, :class:`ConsumerProtocolConnector`)."""
    conf = load_config("consumer", config, **overrides)
    conf.require_one_of("zookeeper.connect", "metadata.broker.list")
    kip848 = conf["group.protocol"] == "consumer"
    if conf["zookeeper.connect"]:
        if kip848:
            raise InvalidConfigError(
                "group.protocol=consumer needs a broker-coordinated group: unset "
                "zookeeper.connect (ZooKeeper groups have no group protocol)",
                "group.protocol",
                "consumer",
            )
        from .zk_connector import ZookeeperConsumerConnector

        return ZookeeperConsumerConnector(conf)
    if kip848:
        return ConsumerProtocolConnector(conf)
    return GroupConsumerConnector(conf)


def __getattr__(name: str) -> Any:
    """ZookeeperConsumerConnector is imported when first named: kclient works without kazoo."""
    if name == "ZookeeperConsumerConnector":
        from .zk_connector import ZookeeperConsumerConnector

        return ZookeeperConsumerConnector
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
