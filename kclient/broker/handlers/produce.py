"""Produce (key 0): validate each partition's records, convert them to the topic's message
format if needed, append them and answer with the base offsets (no answer for acks=0).

Validation per partition: every entry complete, sizes sane and CRCs right (CORRUPT_MESSAGE),
every v2 batch's records decoded and matching its header (INVALID_RECORD, as Kafka's
LogValidator; a payload that does not decompress: CORRUPT_MESSAGE),
no entry larger than the topic's max.message.bytes (MESSAGE_TOO_LARGE), and on a compacted
topic no record without a key (INVALID_RECORD, with per-record errors from v8).  An unknown
topic is auto-created when auto.create.topics.enable is on.  Transactional batches go past
the transaction coordinator (KIP-890): from v12 (transactions v2) the partition joins the
producer's transaction; below, it must already be in its Ongoing transaction (else
TRANSACTION_ABORTABLE from v11, INVALID_TXN_STATE before).  Either way the epoch must be current
(else INVALID_PRODUCER_EPOCH), and a coordinator busy writing markers is NOT_ENOUGH_REPLICAS, which
producers retry (:func:`~kclient.broker.txn_coordinator.leader_error`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kclient.broker.log.compact import keyless_records
from kclient.broker.log.producer_state import parse_header
from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation, ResourceType
from kclient.protocol.apis import PRODUCE
from kclient.protocol.error_codes import InvalidRecordError, OutOfOrderSequenceNumberError
from kclient.protocol.errors import (
    BrokerResponseError,
    CorruptRecordError,
    KafkaError,
    UnsupportedCodecError,
)
from kclient.protocol.framing import Request
from kclient.protocol.records import LOG_OVERHEAD, convert_records, validate_records
from kclient.protocol.records.common import TRANSACTIONAL_MASK
from kclient.protocol.records.v2_check import check_client_batch

from ..authorizer import allowed
from ..interface import Broker, body_of
from ..txn_coordinator import leader_error
from .registry import handles

log = logging.getLogger("kclient.broker.produce")

CORRUPT_MESSAGE = E.CorruptRecordError.errno
UNKNOWN_TOPIC_OR_PARTITION = E.UnknownTopicOrPartitionError.errno
MESSAGE_TOO_LARGE = E.MessageSizeTooLargeError.errno
INVALID_REQUIRED_ACKS = E.InvalidRequiredAcksError.errno
UNSUPPORTED_COMPRESSION_TYPE = E.UnsupportedCompressionTypeError.errno
KAFKA_STORAGE_ERROR = E.KafkaStorageError.errno
INVALID_RECORD = E.InvalidRecordError.errno
TOPIC_AUTHORIZATION_FAILED = E.TopicAuthorizationFailedError.errno
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = E.TransactionalIdAuthorizationFailedError.errno


class _Refused(Exception):
    """A partition's records were refused with a Kafka error code (and per-record errors)."""

    def __init__(
        self,
        code: int,
        message: str,
        record_errors: list[Any] | None = None,
        validation: bool = False,
    ):
        super().__init__(message)
        self.code = code
        self.record_errors = record_errors or []
        #: refused by record validation: Kafka then answers with the log start offset
        self.validation = validation


def _result(
    index: int,
    code: int,
    base_offset: int = -1,
    append_time: int = -1,
    start: int = -1,
    message: str | None = None,
    record_errors: list[Any] | None = None,
) -> dict[str, Any]:
    """One partition's response entry."""
    return {
        "index": index,
        "error_code": code,
        "base_offset": base_offset,
        "log_append_time_ms": append_time,
        "log_start_offset": start,
        "record_errors": record_errors or [],
        "error_message": message,
    }


def _check_keys(records: Any, topic: str, index: int) -> None:
    """A compacted topic takes keyed records only (Kafka's LogValidator.validateKey)."""
    missing = keyless_records(records)
    if not missing:
        return
    text = f"Compacted topic cannot accept message without key in topic partition {topic}-{index}"
    errors = [{"batch_index": i, "batch_index_error_message": text} for i in missing]
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{text}')" for i in missing[:3])
    raise _Refused(
        INVALID_RECORD,
        f"One or more records have been rejected due to "
        f"{len(missing)} record errors in total, and only showing the first three "
        f"errors at most: [{shown}]",
        errors,
        validation=True,
    )


def _prepare(records: Any, config: Any) -> tuple[Any, int, list[Any] | None]:
    """Validate records; return them in the log's format, with that format's magic and the
    entries found by validation (None when the records were converted), which the log then
    uses instead of validating the same bytes again."""
    if not records:
        raise _Refused(CORRUPT_MESSAGE, "no records")
    try:
        infos = validate_records(records)
    except UnsupportedCodecError as exc:
        raise _Refused(UNSUPPORTED_COMPRESSION_TYPE, str(exc)) from None
    except (CorruptRecordError, ValueError) as exc:
        raise _Refused(CORRUPT_MESSAGE, str(exc)) from None
    for info in infos:
        if info.size > config.max_message_bytes:
            raise _Refused(
                MESSAGE_TOO_LARGE,
                f"entry of {info.size} bytes exceeds max.message.bytes={config.max_message_bytes}",
            )
    _check_contents(records, infos)
    magic = config.message_format_version
    if any(info.magic != magic for info in infos):
        try:
            records = convert_records(records, magic)
        except UnsupportedCodecError as exc:
            raise _Refused(UNSUPPORTED_COMPRESSION_TYPE, str(exc)) from None
        return records, magic, None
    return records, magic, infos


def _check_contents(records: Any, infos: list[Any]) -> None:
    """Every v2 batch decoded record by record (Kafka's LogValidator): the header's count and
    offset range must be the records', their lengths must add up, no control batch."""
    data = None
    for info in infos:
        if info.magic != 2:
            continue  # v0/v1 wrappers were decompressed and walked by validate_records
        if data is None:  # the walk slices bytes; what is stored stays the request's buffer
            data = records if isinstance(records, bytes) else bytes(records)
        try:
            check_client_batch(data, info.position, info.size - LOG_OVERHEAD)
        except UnsupportedCodecError as exc:
            raise _Refused(UNSUPPORTED_COMPRESSION_TYPE, str(exc)) from None
        except InvalidRecordError as exc:
            raise _Refused(INVALID_RECORD, str(exc.args[0]), validation=True) from None
        except CorruptRecordError as exc:
            raise _Refused(CORRUPT_MESSAGE, str(exc.args[0]), validation=True) from None


def _txn_error(
    broker: Broker, transactional_id: str | None, topic: str, index: int, records: Any, version: int
) -> int:
    """The coordinator's verdict on a transactional batch (0 for others, or when the
    coordinator is down: the log's own epoch checks still apply)."""
    if len(records) < 23 or records[16] != 2 or not records[22] & TRANSACTIONAL_MASK:
        return 0
    header = parse_header(records, 0)
    if transactional_id is None:
        return E.InvalidTxnStateError.errno
    owner: Any = broker.cluster.live.get(broker.coordinator_for(transactional_id)[0])
    coordinator = getattr(owner, "txn_coordinator", None)
    if coordinator is None:
        return 0
    if version >= 12:  # transactions v2: the partition joins the transaction
        code = coordinator.add_partitions(
            transactional_id, header.producer_id, header.epoch, [(topic, index)]
        )
    else:
        code = coordinator.verify(
            transactional_id, header.producer_id, header.epoch, (topic, index)
        )
    return leader_error(int(code), abortable=version >= 11)


def _append(
    broker: Broker,
    topic: str,
    index: int,
    records: Any,
    transactional_id: str | None = None,
    version: int = 9,
) -> dict[str, Any]:
    """Append one partition's records on this broker (its leader)."""
    log_, code = broker.partition_log(topic, index)
    if log_ is None:
        return _result(index, code)
    if records:
        code = _txn_error(broker, transactional_id, topic, index, records, version)
        if code:  # as Kafka: the code alone, no error message
            return _result(index, code)
    try:
        data, magic, entries = _prepare(records, log_.config)
        if log_.config.compact:
            _check_keys(data, topic, index)
        lat = int(time.time() * 1000) if log_.config.log_append_time else None
        info = log_.append(
            data,
            magic=magic,
            log_append_time=lat,
            entries=entries,
            leader_epoch=broker.cluster.leader_epoch(topic, index),
        )
    except _Refused as exc:
        start = log_.log_start_offset if exc.validation else -1
        return _result(
            index, exc.code, start=start, message=str(exc), record_errors=exc.record_errors
        )
    except OutOfOrderSequenceNumberError as exc:  # with the log start offset, as Kafka
        return _result(index, exc.errno, start=log_.log_start_offset, message=str(exc))
    except BrokerResponseError as exc:
        return _result(index, exc.errno, message=str(exc))
    except (KafkaError, ValueError) as exc:
        return _result(index, CORRUPT_MESSAGE, message=str(exc))
    except OSError as exc:
        log.error("append to %s-%d failed: %s", topic, index, exc)
        return _result(index, KAFKA_STORAGE_ERROR, message=str(exc))
    broker.notify_append(topic, index, info.bytes)
    return _result(index, 0, info.first_offset, info.log_append_time, log_.log_start_offset)


def _topic(
    broker: Broker, request: Request, topic: Any, refused: int, transactional_id: str | None
) -> dict[str, Any]:
    """Append every partition of one topic (without Write on it: TOPIC_AUTHORIZATION_FAILED);
    an unknown topic is not created."""
    name = topic.name
    code = refused
    if not code and not allowed(broker, request, AclOperation.WRITE, ResourceType.TOPIC, name):
        code = TOPIC_AUTHORIZATION_FAILED
    if not code and broker.cluster.partitions(name) is None:
        code = UNKNOWN_TOPIC_OR_PARTITION  # as Kafka: only Metadata creates topics
    if code:
        parts = [_result(p.index, code) for p in topic.partition_data]
    else:
        version = request.header.api_version
        parts = [
            _append(broker, name, p.index, p.records, transactional_id, version)
            for p in topic.partition_data
        ]
    return {"name": name, "partition_responses": parts}


@handles(PRODUCE, "0-12")
def handle(broker: Broker, request: Request) -> dict[str, Any] | None:
    """Append the records; acks=0 gets no response at all."""
    body = body_of(request)
    refused = 0 if body.acks in (0, 1, -1) else INVALID_REQUIRED_ACKS
    tid = getattr(body, "transactional_id", None)
    if (
        not refused
        and tid is not None
        and not allowed(broker, request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid)
    ):
        refused = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    responses = [_topic(broker, request, t, refused, tid) for t in body.topic_data]
    if body.acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}
