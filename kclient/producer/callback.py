"""The two plug-in interfaces of the producer: CallbackHandler and EventHandler.

``CallbackHandler`` (0.7's ``kafka.producer.async.CallbackHandler``) is called at each stage of
the async queue pipeline, in this order for every message::

    before_enqueue(data)             caller's thread; returns the data to queue (None drops it)
    after_enqueue(data, added)       caller's thread; added is False when the queue refused it
    after_dequeuing_existing_data(data)   send thread, per message taken off the queue;
                                     returns the list of messages to put in the batch
    before_sending_data(batch)       send thread, per batch; returns the batch to send
    on_delivery(report)              send thread, per partition batch (kclient's addition:
                                     acknowledged offsets or the error)
    last_batch_before_close()        send thread, once at close; returns messages to send last
    close()                          once, after everything is sent

In sync mode ``before_sending_data``, ``on_delivery`` and ``close`` are called (there is no queue).
Hooks that are not overridden cost nothing: the producer checks once which ones a handler defines.

``EventHandler`` (0.8's ``kafka.producer.async.EventHandler``) does the real work: serialize,
partition, group by broker, compress and send with retries.  ``handle(events)`` returns the
delivery reports.  The default implementation is
:class:`kclient.producer.event_handler.DefaultEventHandler`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .data import DeliveryReport, ProducerData

__all__ = ["CallbackHandler", "EventHandler", "overridden_hooks", "HOOKS"]

HOOKS = (
    "before_enqueue",
    "after_enqueue",
    "after_dequeuing_existing_data",
    "before_sending_data",
    "on_delivery",
    "last_batch_before_close",
    "close",
)


class CallbackHandler:
    """Hooks into the async producer's queue pipeline; override the ones you need."""

    def init(self, config: Mapping[str, Any]) -> None:
        """Called once with the producer's config before any other hook."""

    def before_enqueue(self, data: ProducerData) -> ProducerData | None:
        """Before a message is queued; return it (or a replacement), or None to drop it."""
        return data

    def after_enqueue(self, data: ProducerData, added: bool) -> None:
        """After a message was queued (``added``) or refused by a full queue (not ``added``)."""

    def after_dequeuing_existing_data(self, data: ProducerData) -> list[ProducerData]:
        """The send thread took ``data`` off the queue; return what goes into the batch."""
        return [data]

    def before_sending_data(self, batch: list[ProducerData]) -> list[ProducerData]:
        """A batch is about to be handed to the EventHandler; return the batch to send."""
        return batch

    def on_delivery(self, report: DeliveryReport) -> None:
        """A partition batch was acknowledged (``report.error is None``) or failed for good."""

    def last_batch_before_close(self) -> list[ProducerData]:
        """At close, after the queue is drained: extra messages to send in a last batch."""
        return []

    def close(self) -> None:
        """The producer is closed; everything has been sent or reported."""


def overridden_hooks(handler: Any) -> frozenset[str]:
    """Names of the hooks ``handler`` defines differently from the no-op base class."""
    if handler is None:
        return frozenset()
    out = set()
    for name in HOOKS:
        impl = getattr(type(handler), name, None)
        if impl is None:
            impl = getattr(handler, name, None)  # a plain object with instance attributes
            if impl is not None:
                out.add(name)
            continue
        if impl is not getattr(CallbackHandler, name, None):
            out.add(name)
    return frozenset(out)


class EventHandler:
    """Serializes, partitions and sends batches of messages; returns their delivery reports."""

    def init(self, context: Any) -> None:
        """Called once by the producer with a :class:`~kclient.producer.producer.ProducerContext`
        (config, cluster, encoders, partitioner) before any ``handle``."""

    def handle(self, events: Sequence[ProducerData]) -> list[DeliveryReport]:
        """Send ``events`` (retrying as configured); a report for every message, ok or failed."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections."""
