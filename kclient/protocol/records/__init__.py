"""Kafka record formats: v0/v1 message sets and v2 record batches, read and written.

Reading (any mix of formats in one buffer, partial trailing entry tolerated)::

    reader = RecordsReader(fetch_response_records)
    for rec in reader:          # Record: offset, timestamp, timestamp_type, key, value, headers
        ...
    reader.valid_bytes, reader.incomplete_size
    for batch in reader.batches():  # Batch: magic, base/last offset, codec, producer id, ...
        batch.records

Writing::

    build_batch(values, keys, timestamps, headers, codec=LZ4, producer_id=...)   # v2
    encode_v2_uniform(values, length, codec, timestamp)     # v2, values of one length only
    build_message_set(values, keys, timestamps, magic=1, codec=GZIP)            # v0 / v1

Decoding with another record type: :func:`decode_entries` hands each entry's records, column
by column, to a factory (:func:`make_records` builds Records; see its contract)::

    decode_entries(buf, scan_entries(buf).entries, my_factory, start_offset=..., ...)

Broker helpers: :func:`iter_entries`, :func:`scan_log`, :func:`validate_records`,
:func:`assign_offsets`, :func:`convert_records`.
"""

from kclient.protocol.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD
from kclient.protocol.records.common import (
    BATCH_HEADER_SIZE,
    CONTROL_MASK,
    CREATE_TIME,
    LEGACY_INFO,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_TIMESTAMP,
    NO_TIMESTAMP_TYPE,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
    TIMESTAMP_TYPE_NAMES,
    Batch,
    BatchInfo,
    Header,
    Record,
    make_records,
)
from kclient.protocol.records.control import (
    ABORT,
    COMMIT,
    ControlKey,
    EndTxnMarker,
    build_marker_batch,
    committed_entries,
    encode_control_key,
    encode_end_txn_marker,
    parse_control_key,
    parse_end_txn_marker,
)
from kclient.protocol.records.legacy import build_message_set, encode_message
from kclient.protocol.records.ops import (
    AssignedRecords,
    EntryInfo,
    LogScan,
    assign_offsets,
    convert_records,
    entry_info,
    iter_entries,
    scan_log,
    validate_records,
)
from kclient.protocol.records.reader import (
    EntrySpan,
    RecordsReader,
    Scan,
    check_crcs,
    decode_entries,
    entry_next_offset,
    iter_batches,
    iter_records,
    read_records,
    scan_entries,
)
from kclient.protocol.records.v2 import RecordBatchBuilder, build_batch, encode_headers
from kclient.protocol.records.v2_uniform import encode_v2_uniform

__all__ = [
    "ABORT",
    "COMMIT",
    "ControlKey",
    "EndTxnMarker",
    "build_marker_batch",
    "committed_entries",
    "encode_control_key",
    "encode_end_txn_marker",
    "parse_control_key",
    "parse_end_txn_marker",
    "NONE",
    "GZIP",
    "SNAPPY",
    "LZ4",
    "ZSTD",
    "BATCH_HEADER_SIZE",
    "CONTROL_MASK",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "LOG_OVERHEAD",
    "MAGIC_OFFSET",
    "NO_TIMESTAMP",
    "NO_TIMESTAMP_TYPE",
    "RECORD_OVERHEAD_V0",
    "RECORD_OVERHEAD_V1",
    "TIMESTAMP_TYPE_NAMES",
    "LEGACY_INFO",
    "Batch",
    "BatchInfo",
    "Header",
    "Record",
    "make_records",
    "EntrySpan",
    "Scan",
    "EntryInfo",
    "LogScan",
    "AssignedRecords",
    "RecordsReader",
    "iter_batches",
    "iter_records",
    "read_records",
    "scan_entries",
    "check_crcs",
    "decode_entries",
    "entry_next_offset",
    "build_batch",
    "encode_v2_uniform",
    "RecordBatchBuilder",
    "encode_headers",
    "build_message_set",
    "encode_message",
    "entry_info",
    "iter_entries",
    "scan_log",
    "validate_records",
    "assign_offsets",
    "convert_records",
]
