"""The high-level consumer: ConsumerConnector, KafkaStream, TopicFilter (Kafka 0.8.2's API)."""
from .assignment import range_assign, roundrobin_assign
from .stream import KafkaStream, MessageAndMetadata
from .topic_filter import Blacklist, TopicFilter, Whitelist

__all__ = ["KafkaStream", "MessageAndMetadata", "TopicFilter", "Whitelist", "Blacklist",
           "range_assign", "roundrobin_assign"]
