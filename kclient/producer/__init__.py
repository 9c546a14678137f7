"""The producer: ``Producer``, ``ProducerData``, delivery reports and the two plug-in interfaces.

See ``docs/producer.md`` for configuration, delivery reports and hooks.
"""

from .callback import CallbackHandler, EventHandler
from .data import DeliveryReport, ProducerData, RecordMetadata
from .event_handler import DefaultEventHandler
from .future import DeliveryFuture
from .producer import Producer
from .send_thread import ProducerSendThread

__all__ = [
    "Producer",
    "ProducerData",
    "DeliveryReport",
    "RecordMetadata",
    "DeliveryFuture",
    "CallbackHandler",
    "EventHandler",
    "DefaultEventHandler",
    "ProducerSendThread",
]
