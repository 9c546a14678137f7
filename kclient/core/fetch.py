"""The fetch pipeline's protocol half: Fetch requests built, answers read, oversized entries grown.

Every reader (SimpleConsumer, the connectors' fetcher threads, kclient.Consumer, AIOConsumer, the
Spark reader) fetches through these functions, so what a Fetch asks and what its answer means is
written once:

* :func:`fetch_body` - one Fetch request for partitions at offsets, bounded by the per-partition
  size (``max.partition.fetch.bytes``) and the response size (``fetch.max.bytes``), with the
  long-poll (``fetch.min.bytes`` / ``fetch.wait.max.ms``) and the isolation level;
* :func:`read_response` - the answer as one :class:`ByteBufferMessageSet` per partition asked
  for, in order: records (read_committed leaves out aborted transactions and what is past the
  last stable offset), the high watermark, and the partition's error as an exception naming the
  topic, partition and offset (a corrupt entry's error names its own offset);
* :func:`grow_oversized` - which partitions to ask again with a larger size because their first
  entry did not fit, and the error once it would pass ``max_buffer_size``;
* :func:`fetch` - the conversation doing all three: one request, the retries for oversized
  entries, the result.

The drivers move the bytes: ``kclient.io.fetcher.Fetcher`` on a connection (and keeps the next
request on the wire while the caller decodes), ``kclient.aio.fetcher`` as a task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from kclient.protocol.apis import FETCH
from kclient.protocol.compression import DEFAULT_MAX_DECOMPRESSED
from kclient.protocol.errors import (
    BrokerResponseError,
    MessageSizeTooLargeError,
    OffsetOutOfRangeError,
    error_for_code,
)
from kclient.protocol.records.reader import next_fetch_offset

from .message_set import ByteBufferMessageSet, error_set
from .steps import Conversation, Request

if TYPE_CHECKING:
    from kclient.protocol.messages import FetchResponse, FetchResponsePartition

__all__ = [
    "PartitionFetch",
    "FetchSettings",
    "fetch_body",
    "topics_body",
    "read_response",
    "message_set",
    "end_of",
    "grow_oversized",
    "may_grow",
    "next_fetches",
    "fetch",
    "refetch_oversized",
    "needs_reset",
    "DEFAULT_MAX_BUFFER_SIZE",
    "ISOLATION_LEVELS",
]

#: ``isolation.level`` to the Fetch request's isolation_level (1: read_committed, KIP-98)
ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}

#: Default bound for growing a fetch size around an oversized message.
DEFAULT_MAX_BUFFER_SIZE = 64 * 1024 * 1024
_INT32_MAX = 0x7FFFFFFF


class PartitionFetch(NamedTuple):
    """One partition to fetch: from ``offset``, at most ``max_bytes`` of records."""

    topic: str
    partition: int
    offset: int
    max_bytes: int = 1 << 20


@dataclass(frozen=True, slots=True)
class FetchSettings:
    """How a reader fetches: the long-poll, the response bound, isolation, decoding limits.

    ``max_bytes`` None bounds a response by the sum of its partitions' sizes;
    ``isolation_level`` 1 is read_committed."""

    max_wait_ms: int = 100
    min_bytes: int = 1
    max_bytes: int | None = None
    isolation_level: int = 0
    validate_crc: bool = True
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
    max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == 1


class FetchSession(Protocol):
    """What :func:`fetch` needs of a fetch session (:mod:`kclient.core.fetch_session`)."""

    known: dict[tuple[str, int], tuple[int, int, int]]

    def body(
        self, asked: Sequence[PartitionFetch], settings: FetchSettings, version: int
    ) -> dict[str, Any]: ...

    def answer(self, resp: FetchResponse) -> bool: ...

    def failed(self) -> None: ...


def partition_fetches(requests: Sequence[Any]) -> tuple[PartitionFetch, ...]:
    """``requests`` as PartitionFetch tuples, refusing a partition listed twice or a size <= 0."""
    out = tuple(requests)
    for r in out:  # (a loop, no comprehension: a consumer's every fetch comes through here)
        if type(r) is not PartitionFetch:
            out = tuple([r if type(r) is PartitionFetch else PartitionFetch(*r) for r in out])
            break
    seen: set[tuple[str, int]] = set()
    for r in out:
        if (r.topic, r.partition) in seen:
            raise ValueError(f"{r.topic}-{r.partition} is listed twice in one fetch")
        seen.add((r.topic, r.partition))
        if r.max_bytes <= 0:
            raise ValueError(
                f"fetch size {r.max_bytes} for {r.topic}-{r.partition} is not positive"
            )
    return out


def topics_body(requests: Sequence[PartitionFetch]) -> list[dict[str, Any]]:
    """A Fetch request's ``topics``: ``requests`` grouped by topic, in order."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for r in requests:
        topics.setdefault(r.topic, []).append(
            {
                "partition": r.partition,
                "fetch_offset": r.offset,
                "partition_max_bytes": min(r.max_bytes, _INT32_MAX),
            }
        )
    return [{"topic": t, "partitions": ps} for t, ps in topics.items()]


def fetch_body(
    requests: Sequence[PartitionFetch],
    settings: FetchSettings,
    listed: Sequence[PartitionFetch] | None = None,
) -> dict[str, Any]:
    """The Fetch request for ``requests`` (checked by :func:`partition_fetches` first),
    sessionless (a :class:`~kclient.core.fetch_session.FetchSession` makes it a session's,
    listing only ``listed`` of them: those the session does not have yet)."""
    total = sum(min(r.max_bytes, _INT32_MAX) for r in requests)
    limit = settings.max_bytes if settings.max_bytes is not None else total
    return {
        "replica_id": -1,
        "max_wait_ms": settings.max_wait_ms,
        "min_bytes": settings.min_bytes,
        "max_bytes": min(limit, _INT32_MAX),
        "isolation_level": settings.isolation_level,
        "session_id": 0,
        "session_epoch": -1,
        "topics": topics_body(requests if listed is None else listed),
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def partitions_of(resp: FetchResponse) -> dict[tuple[str, int], FetchResponsePartition]:
    """The answer's partitions by (topic, partition)."""
    return {(t.topic, p.partition_index): p for t in resp.responses for p in t.partitions}


def message_set(
    part: FetchResponsePartition, topic: str, partition: int, offset: int, settings: FetchSettings
) -> ByteBufferMessageSet:
    """One partition's answer (fetched from ``offset``) as a message set, its error named."""
    err: BrokerResponseError | None = None
    if part.error_code:
        err = error_for_code(part.error_code)(f"{topic}-{partition} at offset {offset}")
        err.topic, err.partition, err.offset = topic, partition, offset
    committed = settings.isolation_level == 1  # settings.read_committed, without the call
    return ByteBufferMessageSet(
        part.records or b"",
        offset,
        topic=topic,
        partition=partition,
        high_watermark=part.high_watermark,
        last_stable_offset=part.last_stable_offset,
        log_start_offset=part.log_start_offset,
        error=err,
        validate_crc=settings.validate_crc,
        max_decompressed=settings.max_decompressed,
        read_committed=committed,
        aborted_transactions=[
            (a.producer_id, a.first_offset) for a in part.aborted_transactions or ()
        ]
        if committed
        else None,
    )


def read_response(
    resp: FetchResponse,
    requests: Sequence[PartitionFetch],
    settings: FetchSettings,
    known: Mapping[tuple[str, int], tuple[int, int, int]] | None = None,
) -> list[ByteBufferMessageSet]:
    """One message set per request, in order; a partition left out of the answer gets the
    request-level error, or nothing (some brokers, e.g. tansu at max_wait_ms=0, leave out
    partitions with nothing to return yet; an incremental fetch session leaves out those with
    nothing new, and ``known`` gives their offsets as last answered)."""
    if len(requests) == 1:  # a one-partition consumer's answer: no lookup table to build
        r = requests[0]
        topics = resp.responses
        if len(topics) == 1 and topics[0].topic == r.topic:
            got = topics[0].partitions
            if len(got) == 1 and got[0].partition_index == r.partition:
                return [message_set(got[0], r.topic, r.partition, r.offset, settings)]
    parts = partitions_of(resp)
    top_error = resp.get("error_code", 0)
    out: list[ByteBufferMessageSet] = []
    for r in requests:
        part = parts.get((r.topic, r.partition))
        if part is not None:
            out.append(message_set(part, r.topic, r.partition, r.offset, settings))
            continue
        last = known.get((r.topic, r.partition)) if known and not top_error else None
        if last is not None:
            hw, lso, start = last
            out.append(
                ByteBufferMessageSet(
                    b"",
                    r.offset,
                    topic=r.topic,
                    partition=r.partition,
                    high_watermark=hw,
                    last_stable_offset=lso,
                    log_start_offset=start,
                )
            )
            continue
        err = (
            error_for_code(top_error)(f"{r.topic}-{r.partition} at offset {r.offset}")
            if top_error
            else None
        )
        out.append(
            ByteBufferMessageSet(b"", r.offset, topic=r.topic, partition=r.partition, error=err)
        )
    return out


def end_of(ms: ByteBufferMessageSet, isolation_level: int) -> int:
    """Where readable data ends: the high watermark, or with read_committed the last stable
    offset (when the broker sent one)."""
    if isolation_level == 1 and ms.last_stable_offset >= 0:
        return ms.last_stable_offset
    return ms.high_watermark


def next_fetches(
    requests: Sequence[PartitionFetch], resp: FetchResponse, isolation_level: int
) -> list[PartitionFetch] | None:
    """The natural next request after the answer ``resp`` to ``requests`` (every partition
    from after its complete entries), read off the entries' headers before anything is
    decoded, so it goes on the wire while the caller decodes; None unless every partition
    has more data waiting at the broker (an error, an empty or left-out partition, no
    complete entry or a caught-up one: the caller's next request is not predictable, or
    would only wait at the broker).  Where decoding ends elsewhere (a bad CRC), the caller's
    next request differs and the speculative answer is dropped."""
    if getattr(resp, "error_code", 0):
        return None
    parts = partitions_of(resp)
    nxt: list[PartitionFetch] = []
    for r in requests:
        part = parts.get((r.topic, r.partition))
        if part is None or part.error_code or not part.records:
            return None
        end = next_fetch_offset(part.records)
        stable = getattr(part, "last_stable_offset", -1)  # (Fetch v4 on)
        if end <= r.offset or end >= (
            stable if isolation_level == 1 and stable >= 0 else part.high_watermark
        ):
            return None
        nxt.append(PartitionFetch(r.topic, r.partition, end, r.max_bytes))
    return nxt


def needs_reset(error: BaseException | None) -> bool:
    """True when the position is out of range: ``auto.offset.reset`` decides where to go."""
    return isinstance(error, OffsetOutOfRangeError)


def may_grow(
    requests: Sequence[PartitionFetch],
    results: Sequence[ByteBufferMessageSet],
    settings: FetchSettings,
) -> bool:
    """Whether :func:`grow_oversized` could act on ``results`` (a first entry over
    ``max_buffer_size``, or no complete entry where data waits): False for the common answer,
    so a driver need not run :func:`refetch_oversized`'s conversation for it."""
    for r, ms in zip(requests, results):
        if _may_grow(r, ms, settings):
            return True
    return False


def _may_grow(r: PartitionFetch, ms: ByteBufferMessageSet, settings: FetchSettings) -> bool:
    """Whether one partition's answer is one :func:`grow_oversized` looks into: a first entry
    over ``max_buffer_size``, or no complete entry where data waits."""
    if ms.error is not None:
        return False
    if ms.entries:
        return ms.entries[0].size > settings.max_buffer_size
    return bool(ms.buffer) or 0 <= r.offset < end_of(ms, settings.isolation_level)


def grow_oversized(
    requests: Sequence[PartitionFetch],
    results: list[ByteBufferMessageSet],
    sizes: dict[int, int],
    settings: FetchSettings,
) -> list[int]:
    """Indexes of ``requests`` to fetch again at ``sizes[i]`` (doubled, as often as needed to
    cover the entry's size when its header arrived) because their first entry did not fit;
    ``results[i]`` becomes a MessageSizeTooLargeError once that would pass
    ``max_buffer_size``.  Below the high watermark an empty answer means the same (Fetch v0-v2,
    or not the first partition of a v3+ answer); an oversized entry the broker sent whole (v3+,
    KIP-74) gets the same bound."""
    bound = settings.max_buffer_size
    retry = []
    for i, (r, ms) in enumerate(zip(requests, results)):
        if not _may_grow(r, ms, settings):
            continue  # fits, failed, or nothing there (yet)
        if ms.entries:
            first = ms.entries[0].size
            if first > sizes[i]:
                results[i] = error_set(
                    r.topic,
                    r.partition,
                    r.offset,
                    _too_large(r, first, bound, delivered=True),
                    ms.high_watermark,
                )
            continue
        needed = ms.incomplete_size
        size = sizes[i]
        if size >= bound or (needed is not None and needed > bound):
            results[i] = error_set(
                r.topic, r.partition, r.offset, _too_large(r, needed, bound), ms.high_watermark
            )
            continue
        size *= 2
        while needed is not None and size < needed:
            size *= 2
        sizes[i] = min(size, bound)
        retry.append(i)
    return retry


def fetch(
    requests: Sequence[Any],
    settings: FetchSettings,
    *,
    version: int | None = None,
    node: int | str | None = None,
    session: FetchSession | None = None,
) -> Conversation[list[ByteBufferMessageSet]]:
    """Fetch ``requests`` in one round trip, plus one per growth of an oversized first entry;
    in ``session`` (KIP-227) when given, asked again in full after a session error."""
    asked = partition_fetches(requests)
    if not asked:
        return []
    if session is None:
        resp = yield Request(FETCH, fetch_body(asked, settings), version, node)
        known = None
    else:
        resp = yield from _in_session(session, asked, settings, version, node)
        known = session.known
    results = read_response(resp, asked, settings, known)
    return (yield from refetch_oversized(asked, results, settings, version=version, node=node))


def _in_session(
    session: FetchSession,
    asked: Sequence[PartitionFetch],
    settings: FetchSettings,
    version: int | None,
    node: int | str | None,
) -> Conversation[FetchResponse]:
    """One Fetch in ``session``; after a session error once more (then full)."""
    for attempt in range(2):
        try:
            resp: FetchResponse = yield Request(
                FETCH, lambda v: session.body(asked, settings, v), version, node
            )
        except BaseException:
            session.failed()
            raise
        if session.answer(resp) or attempt:
            break
    return resp


def refetch_oversized(
    asked: Sequence[PartitionFetch],
    results: list[ByteBufferMessageSet],
    settings: FetchSettings,
    *,
    version: int | None = None,
    node: int | str | None = None,
) -> Conversation[list[ByteBufferMessageSet]]:
    """``results`` with each partition whose first entry did not fit fetched again, its size
    doubled until the entry fits or :func:`grow_oversized` gives up."""
    results = list(results)
    sizes = {i: r.max_bytes for i, r in enumerate(asked)}
    while retry := grow_oversized(asked, results, sizes, settings):
        again = [asked[i]._replace(max_bytes=sizes[i]) for i in retry]
        resp = yield Request(FETCH, fetch_body(again, settings), version, node)
        for i, ms in zip(retry, read_response(resp, again, settings)):
            results[i] = ms
    return results


def _too_large(
    r: PartitionFetch, needed: int | None, bound: int, delivered: bool = False
) -> MessageSizeTooLargeError:
    size = f"{needed} bytes" if needed is not None else "more than the bound"
    how = (
        "the broker returned it whole"
        if delivered
        else f"fetch size started at {r.max_bytes} and doubled up to the bound"
    )
    err = MessageSizeTooLargeError(
        f"{r.topic}-{r.partition} at offset {r.offset}: the message there needs {size}, "
        f"over max_buffer_size={bound} ({how})"
    )
    err.topic, err.partition, err.offset, err.size = r.topic, r.partition, r.offset, needed
    return err
