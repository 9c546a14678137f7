"""kclient: a Python client SDK for Kafka-protocol clusters (the classic documented Kafka API).

from kclient import Producer, ProducerData, consumer
from kclient.simple import SimpleConsumer, FetchRequest, OffsetRequest
from kclient.broker import MiniBroker, MiniCluster
"""

from typing import TYPE_CHECKING, Any

from . import consumer, errors, simple
from ._version import __version__
from .admin import AdminClient, NewTopic, TopicPartition
from .cluster import Cluster
from .config import load_config
from .connection import BrokerConnection
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
    from .aio import AIOConsumer, AIOProducer, AIOShareConsumer
    from .schema_registry import AsyncSchemaRegistryClient, SchemaRegistryClient

#: name -> the module it is imported from on first use
_LAZY = {
    "AIOProducer": "aio",
    "AIOConsumer": "aio",
    "AIOShareConsumer": "aio",
    "SchemaRegistryClient": "schema_registry",
    "AsyncSchemaRegistryClient": "schema_registry",
}


def __getattr__(name: str) -> Any:
    """AIOProducer and AIOConsumer import kclient.aio (and asyncio), the registry clients
    kclient.schema_registry, on first use only."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"kclient.{_LAZY[name]}"), name)
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
