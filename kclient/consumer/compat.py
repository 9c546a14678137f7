"""What code moved from kafka-python or confluent-kafka calls on a consumer, and loud failures.

``ConsumerCompat`` gives :class:`kclient.Consumer` confluent-kafka's ``consume(num_messages,
timeout)`` and ``list_topics()``; :class:`Unreachable` turns "no broker answers" into a WARNING
at once and a :class:`BrokersUnreachableError` once it lasted the client's timeout, instead of
empty polls for ever.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any

from kclient.cluster import Cluster
from kclient.compat import ClusterMetadata, cluster_metadata
from kclient.errors import BrokersUnreachableError, KafkaConnectionError, NoBrokersAvailableError

__all__ = ["ConsumerCompat", "Unreachable"]

log = logging.getLogger("kclient.consumer")


class Unreachable:
    """Tracks whether any broker answered: WARNING on the first failure, then
    :class:`BrokersUnreachableError` once failures lasted ``timeout_ms`` or a poll's deadline
    passed without an answer."""

    def __init__(self, who: str, bootstrap: Sequence[tuple[str, int]], timeout_ms: int) -> None:
        self.who, self.bootstrap, self.timeout = who, list(bootstrap), timeout_ms / 1000.0
        self.since: float | None = None
        self.error: BaseException | None = None

    def failed(self, exc: BaseException) -> bool:
        """Note a failure; True when it is "no broker reachable" (then it was logged)."""
        if not isinstance(exc, (NoBrokersAvailableError, KafkaConnectionError)):
            return False
        self.error = exc
        if self.since is None:
            self.since = time.monotonic()
            log.warning(
                "%s: cannot reach any broker (%s): %s; retrying, giving up after "
                "%.0f s or at the poll's deadline",
                self.who,
                ", ".join(f"{h}:{p}" for h, p in self.tried()),
                exc,
                self.timeout,
            )
        return True

    def reached(self) -> None:
        """A broker answered."""
        self.since = self.error = None

    def tried(self) -> list[tuple[str, int]]:
        brokers = getattr(self.error, "brokers", None)
        if brokers:
            return [
                (str(b[0]), int(b[1])) if isinstance(b, (tuple, list)) else (str(b), 0)
                for b in brokers
            ]
        host = getattr(self.error, "host", None)
        return [(host, self.error.port)] if host else self.bootstrap  # type: ignore[union-attr]

    def check(self, deadline: float) -> None:
        """Raise once no broker answered for the timeout or until ``deadline``."""
        if self.since is None:
            return
        now = time.monotonic()
        if now >= deadline or now - self.since >= self.timeout:
            waited = now - self.since
            last = self.error
            why = last.args[0] if isinstance(last, NoBrokersAvailableError) and last.args else last
            raise BrokersUnreachableError(
                f"{self.who}: no broker reachable for {waited:.1f}s ({why})", self.tried()
            ) from self.error


class ConsumerCompat:
    """confluent-kafka's calls on top of ``poll()``."""

    cluster: Cluster

    def poll(
        self,
        *args: int,
        timeout_ms: int | None = None,
        max_records: int | None = None,
        timeout: float | None = None,
    ) -> dict[Any, list[Any]]:
        raise NotImplementedError  # pragma: no cover - Consumer defines it

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Any]:
        """Up to ``num_messages`` records within ``timeout`` seconds (-1 or None: no limit),
        as a list (confluent-kafka's ``consume``; kclient's records have attributes,
        ``r.value``, where confluent's Message has methods, ``m.value()``)."""
        if isinstance(num_messages, bool) or not isinstance(num_messages, int) or num_messages < 1:
            raise ValueError(f"consume(): num_messages must be an int >= 1, got {num_messages!r}")
        forever = timeout is None or timeout < 0
        deadline = math.inf if forever else time.monotonic() + float(timeout)  # type: ignore
        out: list[Any] = []
        while True:
            wait_ms = 1000 if forever else max(0, int((deadline - time.monotonic()) * 1000))
            for records in self.poll(
                timeout_ms=wait_ms, max_records=num_messages - len(out)
            ).values():
                out.extend(records)
            if len(out) >= num_messages or time.monotonic() >= deadline:
                break
        return out

    def list_topics(
        self, topic: str | None = None, timeout: float | None = None
    ) -> ClusterMetadata:
        """Brokers and topics of the cluster (confluent-kafka's ``list_topics``); a missing
        ``topic`` is not created.  ``timeout`` is accepted for compatibility (the request
        timeout applies)."""
        return cluster_metadata(self.cluster, topic)
