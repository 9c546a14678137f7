"""Produce requests and responses, written once for both producers.

Both senders (the threaded producer's event handler and AIOProducer's sender task) keep their
own pipelines, which are their hot paths; what a Produce request holds and what each partition's
answer means is here:

* :func:`magic_for` — the record format a Produce version carries;
* :func:`produce_body` — the request body from ``{topic: [(partition, records)]}``;
* :func:`partition_results` — per partition of a response: its error (None when written), base
  offset and log-append time;
* :func:`retriable` / :func:`refreshes_metadata` — whether a failed batch is retried, and
  whether the retry must wait for fresh metadata (the leader moved, the connection broke, the
  partition had no leader known);
* :func:`settle` — each partition's answer routed to its batch's outcome (written, failed,
  retried), sequence errors of idempotent batches as :mod:`kclient.core.idempotence` says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from kclient.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError, error_for_code

from .idempotence import FAIL, RESEND, SENT, IdempotentState, Sequenced

__all__ = [
    "magic_for",
    "produce_body",
    "partition_results",
    "retriable",
    "refreshes_metadata",
    "unanswered",
    "settle",
    "retry_verdict",
]


def magic_for(version: int) -> int:
    """The message format of Produce ``version``: v2 batches from v3, v1 messages at v2, else v0."""
    return 2 if version >= 3 else (1 if version == 2 else 0)


def produce_body(
    transactional_id: str | None,
    acks: int,
    timeout_ms: int,
    topic_data: Mapping[str, Sequence[tuple[int, Any]]],
) -> dict[str, Any]:
    """A Produce request body: ``topic_data`` maps a topic to ``(partition, records)`` pairs."""
    return {
        "transactional_id": transactional_id,
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topic_data": [
            {"name": t, "partition_data": [{"index": p, "records": r} for p, r in parts]}
            for t, parts in topic_data.items()
        ],
    }


def partition_results(
    resp: Any, node: int
) -> Iterator[tuple[str, int, KafkaError | None, int, int]]:
    """``(topic, partition, error or None, base offset, log-append time)`` per partition of a
    Produce response; the error names the partition, the broker and the broker's message."""
    for topic in resp.responses:
        name = topic.name
        for pr in topic.partition_responses:
            code = pr.error_code
            if not code:
                yield name, pr.index, None, pr.base_offset, pr.log_append_time_ms
                continue
            msg = pr.get("error_message")
            error = error_for_code(code)(
                f"topic {name!r} partition {pr.index} on broker {node}"
                + (f": {msg}" if msg else "")
            )
            yield name, pr.index, error, pr.base_offset, pr.log_append_time_ms


def unanswered(node: int, topic: str, partition: int) -> KafkaError:
    """The (retriable) error of a partition a Produce response left out."""
    return KafkaError(f"broker {node} did not answer for topic {topic!r} partition {partition}")


def still_appearing(exc: BaseException, waited: float, limit: float) -> bool:
    """Whether a producer keeps waiting for a topic the metadata does not show yet: ``exc``
    says it is unknown or leaderless (being created: auto-creation, or an admin just made
    it) and ``waited`` seconds are under ``limit`` (topic.metadata.propagation.max.ms).  Such
    a wait is not a retry of a send (Java waits max.block.ms for metadata, librdkafka
    topic.metadata.propagation.max.ms)."""
    return getattr(exc, "errno", None) in _APPEARING_CODES and waited < limit


#: UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE
_APPEARING_CODES = frozenset({3, 5})


def retriable(exc: BaseException) -> bool:
    """Whether a retry may cure ``exc`` (broker error codes and connection errors)."""
    return isinstance(exc, KafkaError) and bool(getattr(exc, "retriable", False))


def refreshes_metadata(exc: BaseException, sent: bool = True) -> bool:
    """Whether a batch retried after ``exc`` waits for a metadata refresh first: the leader
    moved (an invalid-metadata error), the connection broke or timed out, or the batch was
    never sent (no leader known, no connection)."""
    return (
        not sent
        or bool(getattr(exc, "invalid_metadata", False))
        or isinstance(exc, (KafkaConnectionError, KafkaTimeoutError))
    )


class Counted(Protocol):
    """A batch that counts its send attempts."""

    attempts: int


def retry_verdict(
    batch: Counted, exc: BaseException, sent: bool, force: bool, retries: int
) -> tuple[bool, bool]:
    """``(give up, refresh metadata first)`` for a batch that failed with ``exc``: a batch
    never sent counts an attempt here; it gives up when ``exc`` is not retriable (unless
    ``force``) or its attempts exceed ``retries``."""
    if not sent:
        batch.attempts += 1
    if not (force or retriable(exc)) or batch.attempts > retries:
        return True, False
    return False, refreshes_metadata(exc, sent)


class Retried(Sequenced, Protocol):
    """A batch a sender retries: a sequenced batch that counts its attempts."""

    attempts: int


_B = TypeVar("_B", bound=Retried)


def settle(
    resp: Any,
    node: int,
    batches: dict[tuple[str, int], _B],
    idem: IdempotentState | None,
    others: Callable[[_B], Iterable[Sequenced]],
    succeed: Callable[[_B, int, int], None],
    fail: Callable[[_B, BaseException], None],
    retry: Callable[[_B, BaseException, bool], None],
) -> None:
    """Route a Produce response's per-partition answers to the batches sent (``batches``: the
    answered ones are taken out): ``succeed(b, base, append_time)``, ``fail(b, exc)`` or
    ``retry(b, exc, force)``.

    An error of a sequenced batch goes by ``idem.sequence_error`` (``others(b)``: the batches
    still unacknowledged): waiting on an earlier batch (RESEND) is a forced retry that costs no
    attempt.  A partition the response left out is a forced retry (it is retriable), so both
    producers give every batch exactly one outcome per response.
    """
    for topic, partition, err, base, append_time in partition_results(resp, node):
        b = batches.pop((topic, partition), None)
        if b is None:
            continue
        if err is None:
            succeed(b, base, append_time)
            continue
        needs = (
            "" if idem is None or b.base_sequence < 0 else idem.sequence_error(b, err, others(b))
        )
        if needs == SENT:  # a 0.11 broker's "already have it"
            succeed(b, base, append_time)
        elif needs == FAIL:  # Java: abortable, the epoch bumped on abort
            fail(b, err)
        else:
            if needs == RESEND:  # waiting for an earlier batch costs no retry
                b.attempts -= 1
            retry(b, err, needs == RESEND)
    for b in batches.values():
        retry(b, unanswered(node, b.topic, b.partition), True)
