"""Helpers of the transaction tests: requests through a real MiniBroker's handlers."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from kclient.protocol import apis
from kclient.protocol import errors as E
from kclient.protocol.framing import Request, RequestHeader
from kclient.protocol.records import RecordsReader, build_batch

FENCED, OLD_FENCED = E.ProducerFencedError.errno, E.InvalidProducerEpochError.errno
CONCURRENT = E.ConcurrentTransactionsError.errno
INVALID_TXN_STATE = E.InvalidTxnStateError.errno

TXN_CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "transaction.state.log.num.partitions": "3",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100",
}


def call(broker: Any, api: Any, version: int, body: dict) -> Any:
    """Encode, decode as the server would, dispatch, and round-trip the response."""
    raw = b"".join(api.encode_request(version, body))
    req = Request(
        RequestHeader(api.key, version, 1, "txn-test"), api.decode_request(version, raw), api
    )
    resp = broker.dispatch(req)
    if isinstance(resp, Future):
        resp = resp.result(10)
    parts = [p.read() if hasattr(p, "read") else p for p in api.encode_response(version, resp)]
    return api.decode_response(version, b"".join(parts))


def init(
    broker: Any,
    tid: str,
    timeout_ms: int = 60000,
    version: int = 4,
    producer_id: int = -1,
    epoch: int = -1,
) -> Any:
    """InitProducerId for a transactional id."""
    return call(
        broker,
        apis.INIT_PRODUCER_ID,
        version,
        {
            "transactional_id": tid,
            "transaction_timeout_ms": timeout_ms,
            "producer_id": producer_id,
            "producer_epoch": epoch,
        },
    )


def add_partitions(
    broker: Any, tid: str, pid: int, epoch: int, tps: list[tuple[str, int]], version: int = 3
) -> dict[tuple[str, int], int]:
    """AddPartitionsToTxn (v0-v3 form); error code per partition."""
    topics: dict[str, list[int]] = {}
    for t, p in tps:
        topics.setdefault(t, []).append(p)
    r = call(
        broker,
        apis.ADD_PARTITIONS_TO_TXN,
        version,
        {
            "v3_and_below_transactional_id": tid,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        },
    )
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in r.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def end_txn(broker: Any, tid: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    """EndTxn; its error code."""
    return call(
        broker,
        apis.END_TXN,
        version,
        {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit},
    ).error_code


def produce(
    broker: Any,
    topic: str,
    partition: int,
    values: list[bytes],
    *,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    tid: str | None = None,
    batch: bytes | None = None,
) -> Any:
    """Produce v7 one batch (transactional when ``tid`` is given; ``batch``: that one as it is
    instead of one of ``values``); the partition's answer."""
    batch = batch or build_batch(
        values,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=tid is not None,
    )
    r = call(
        broker,
        apis.PRODUCE,
        7,
        {
            "transactional_id": tid,
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        },
    )
    return r.responses[0].partition_responses[0]


def fetch(
    broker: Any,
    topic: str,
    partition: int,
    offset: int = 0,
    *,
    version: int = 11,
    isolation: int = 1,
) -> Any:
    """One partition's Fetch answer (no waiting)."""
    r = call(
        broker,
        apis.FETCH,
        version,
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": isolation,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "fetch_offset": offset,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
        },
    )
    return r.responses[0].partitions[0]


def values(records: Any) -> list[bytes]:
    """Record values of a fetched record set (markers skipped)."""
    return [r.value for r in RecordsReader(bytes(records or b""))]


def committed_aborted_open(broker: Any, topic: str, tid: str) -> int:
    """Write partition 0 of ``topic``: c0 c1 (committed) marker, a0 (aborted) marker, plain,
    o0 (open); returns the transactional producer id."""
    pid, seq = init(broker, tid).producer_id, 0
    for vals, commit in (([b"c0", b"c1"], True), ([b"a0"], False), ([b"o0"], None)):
        add_partitions(broker, tid, pid, 0, [(topic, 0)])
        if commit is None:
            produce(broker, topic, 0, [b"plain"])
        produce(broker, topic, 0, vals, pid=pid, epoch=0, seq=seq, tid=tid)
        seq += len(vals)
        if commit is not None:
            end_txn(broker, tid, pid, 0, commit)
    return pid
