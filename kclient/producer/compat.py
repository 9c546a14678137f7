"""confluent-kafka's producer calls on kclient's Producer (``poll()``, ``len()``,
``list_topics()``), and :func:`delivery_callbacks`, which sorts what ``Producer(on_delivery=...)``
was given into the one per-message signature ``on_delivery(err, metadata)`` that
``produce(on_delivery=)`` uses."""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from typing import Any

from kclient._args import takes_two_args
from kclient.compat import ClusterMetadata, cluster_metadata

from .data import RecordMetadata

__all__ = ["ProducerCompat", "delivery_callbacks"]

log = logging.getLogger("kclient.producer")

#: how often poll() looks for new outcomes while it waits (seconds)
_TICK = 0.002


class ProducerCompat:
    """What code moved from confluent-kafka calls; the Producer provides ``stats``, ``queued``
    and ``context``."""

    stats: dict[str, int]
    context: Any

    @property
    def queued(self) -> int:
        raise NotImplementedError  # pragma: no cover - Producer defines it

    def _outcomes(self) -> int:
        s = self.stats
        return s["acknowledged"] + s["failed"]

    def poll(self, timeout: float | None = 0) -> int:
        """confluent-kafka's ``poll``: how many messages got their outcome (and delivery
        callbacks) since the previous poll(), waiting up to ``timeout`` seconds (None or
        negative: no limit) for one while messages are queued.  kclient calls delivery
        callbacks on its send thread as outcomes arrive, so poll() is never needed for them."""
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float))
        ):
            raise TypeError(f"poll() takes timeout in seconds, got {timeout!r}")
        seen = getattr(self, "_polled", 0)
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        now = self._outcomes()
        while now == seen and self.queued and (deadline is None or time.monotonic() < deadline):
            time.sleep(
                _TICK if deadline is None else max(0.0, min(_TICK, deadline - time.monotonic()))
            )
            now = self._outcomes()
        self._polled = now
        return now - seen

    def __len__(self) -> int:
        """Messages queued or in flight, not yet reported (confluent-kafka's ``len(p)``)."""
        return self.queued

    def __bool__(self) -> bool:
        """A producer is true even with nothing queued (``len()`` does not make it false)."""
        return True

    def list_topics(
        self, topic: str | None = None, timeout: float | None = None
    ) -> ClusterMetadata:
        """Brokers and topics (confluent-kafka's ``list_topics``); a missing ``topic`` is not
        created.  ``timeout`` is accepted for compatibility (the request timeout applies)."""
        return cluster_metadata(self.context.cluster, topic)


def delivery_callbacks(
    on_delivery: Callable[..., Any] | None, on_report: Callable[[Any], Any] | None
) -> Callable[[Any], Any] | None:
    """One callable taking a DeliveryReport (a partition batch) from the producer's two hooks:
    ``on_delivery(err, metadata)`` once per message, ``on_report(report)`` once per batch.

    A one-argument ``on_delivery`` is kclient 0.1's per-batch hook: it still works, as
    ``on_report``, with a DeprecationWarning."""
    if on_delivery is not None and not takes_two_args(on_delivery):
        warnings.warn(
            "Producer(on_delivery=f) calls f(err, metadata) once per message, as "
            "produce(on_delivery=) does; a one-argument f gets DeliveryReports: "
            "pass it as on_report=f",
            DeprecationWarning,
            stacklevel=3,
        )
        if on_report is not None:
            raise TypeError(
                "Producer() got two per-batch callbacks (on_report and a one-argument on_delivery)"
            )
        on_delivery, on_report = None, on_delivery
    if on_delivery is None:
        return on_report
    per_message = on_delivery

    def report(r: Any) -> None:
        err, base = r.error, r.base_offset
        ts = r.timestamp if r.timestamp >= 0 else r.create_time
        for i in range(len(r)):
            offset = base + i if err is None and base >= 0 else -1
            try:
                per_message(err, RecordMetadata(r.topic, r.partition, offset, ts))
            except Exception:
                log.exception("on_delivery callback raised")
        if on_report is not None:
            on_report(r)

    return report
