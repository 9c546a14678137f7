"""kclient: a Python client SDK for Kafka-protocol clusters (the classic documented Kafka API).

from kclient import Producer, ProducerData, consumer
from kclient.simple import SimpleConsumer, FetchRequest, OffsetRequest
from kclient.broker import MiniBroker, MiniCluster
"""

from typing import TYPE_CHECKING, Any

from . import errors, simple
from ._version import __version__
from .cluster import Cluster
from .config import load_config
from .connection import BrokerConnection
from .encoders import (
    Decoder,
    DefaultDecoder,
    DefaultEncoder,
    Encoder,
    JsonDecoder,
    JsonEncoder,
    StringDecoder,
    StringEncoder,
)
from .errors import (
    ConsumerTimeoutError,
    FailedToSendMessageError,
    InvalidConfigError,
    KafkaError,
    QueueFullError,
)
from .partitioner import DefaultPartitioner, JavaHashPartitioner, Partitioner, RoundRobinPartitioner
from .producer import (
    CallbackHandler,
    DeliveryFuture,
    DeliveryReport,
    EventHandler,
    Producer,
    ProducerData,
    RecordMetadata,
)
from .simple import FetchRequest, OffsetRequest, SimpleConsumer
from .structs import AcknowledgeType, ShareConsumerRecord

if TYPE_CHECKING:
    from . import consumer
    from .admin import AdminClient, NewTopic, TopicPartition
    from .aio import AIOConsumer, AIOProducer, AIOShareConsumer
    from .consumer import (
        Blacklist,
        Consumer,
        ConsumerConnector,
        ConsumerGroupMetadata,
        ConsumerRebalanceListener,
        ConsumerRecord,
        KafkaStream,
        MessageAndMetadata,
        TopicFilter,
        Whitelist,
    )
    from .consumer.share_consumer import ShareConsumer
    from .schema_registry import AsyncSchemaRegistryClient, SchemaRegistryClient

_CONSUMER_NAMES = (
    "Blacklist Consumer ConsumerConnector ConsumerGroupMetadata ConsumerRebalanceListener "
    "ConsumerRecord KafkaStream MessageAndMetadata TopicFilter Whitelist"
)
#: name -> the module it is imported from on first use
_LAZY = {
    "AIOProducer": "aio",
    "AIOConsumer": "aio",
    "AIOShareConsumer": "aio",
    "SchemaRegistryClient": "schema_registry",
    "AsyncSchemaRegistryClient": "schema_registry",
    "AdminClient": "admin",
    "NewTopic": "admin",
    "TopicPartition": "admin",
    "ShareConsumer": "consumer.share_consumer",
    **dict.fromkeys(_CONSUMER_NAMES.split(), "consumer"),
}


def __getattr__(name: str) -> Any:
    """Names whose modules are imported on first use only: the consumers and the admin client
    (a process that only produces, or a Spark planner, skips their import time), kclient.aio
    (and asyncio), the registry clients; ``kclient.consumer`` the module likewise."""
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(f"kclient.{_LAZY[name]}"), name)
    if name == "consumer":
        return importlib.import_module("kclient.consumer")
    raise AttributeError(f"module 'kclient' has no attribute {name!r}")


__all__ = [
    "Producer",
    "ProducerData",
    "DeliveryReport",
    "DeliveryFuture",
    "RecordMetadata",
    "CallbackHandler",
    "EventHandler",
    "SimpleConsumer",
    "FetchRequest",
    "OffsetRequest",
    "consumer",
    "ConsumerConnector",
    "ConsumerGroupMetadata",
    "KafkaStream",
    "MessageAndMetadata",
    "TopicFilter",
    "Whitelist",
    "Blacklist",
    "Consumer",
    "ConsumerRecord",
    "ConsumerRebalanceListener",
    "TopicPartition",
    "Partitioner",
    "DefaultPartitioner",
    "JavaHashPartitioner",
    "RoundRobinPartitioner",
    "Encoder",
    "Decoder",
    "DefaultEncoder",
    "DefaultDecoder",
    "StringEncoder",
    "StringDecoder",
    "JsonEncoder",
    "JsonDecoder",
    "KafkaError",
    "InvalidConfigError",
    "FailedToSendMessageError",
    "QueueFullError",
    "ConsumerTimeoutError",
    "errors",
    "simple",
    "Cluster",
    "BrokerConnection",
    "load_config",
    "__version__",
    "AdminClient",
    "NewTopic",
    "AIOProducer",
    "AIOConsumer",
    "SchemaRegistryClient",
    "AsyncSchemaRegistryClient",
    "ShareConsumer",
    "ShareConsumerRecord",
    "AcknowledgeType",
    "AIOShareConsumer",
]
