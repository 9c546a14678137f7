"""What a broker checks inside a client's v2 batch before storing it (Kafka's LogValidator).

The CRC covers a batch's bytes but not their sense: a batch can carry a record count, an offset
range or a compressed payload that contradicts its records and still pass the CRC.  Kafka
decodes every record of a produced batch and refuses such a batch with INVALID_RECORD (and with
UNKNOWN_SERVER_ERROR when the payload does not decompress; this module says CORRUPT_MESSAGE).
"""

from __future__ import annotations

from kclient.protocol import compression
from kclient.protocol.error_codes import CorruptRecordError, InvalidRecordError
from kclient.protocol.records.common import CODEC_MASK, CONTROL_MASK, TRANSACTIONAL_MASK
from kclient.protocol.records.v2 import HEADER, records_section
from kclient.protocol.records.v2_stride import check_strided
from kclient.protocol.records.v2_walk import decode_columns

__all__ = ["check_client_batch"]


def _invalid(reason: str) -> InvalidRecordError:
    """INVALID_RECORD naming what is wrong."""
    return InvalidRecordError(f"invalid record batch: {reason}")


def _check_header(attrs: int, last_delta: int, count: int, pid: int, seq: int) -> None:
    """The header's own consistency: Kafka's LogValidator.validateBatch for a client batch."""
    if attrs & CONTROL_MASK:
        raise _invalid("clients may not write control batches")
    if last_delta < 0:
        raise _invalid(f"negative lastOffsetDelta {last_delta}")
    if count <= 0:
        raise _invalid(f"record count {count}")
    if last_delta + 1 != count:
        raise _invalid(f"lastOffsetDelta {last_delta} does not match the record count {count}")
    if attrs & TRANSACTIONAL_MASK and pid < 0:
        raise _invalid("a transactional batch without a producer id")
    if pid >= 0 and seq < 0:
        raise _invalid(f"producer id {pid} with base sequence {seq}")


def check_client_batch(
    buf: bytes, pos: int, size: int, max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED
) -> None:
    """Check the v2 batch at ``buf[pos:pos+12+size]`` (CRC already checked) record by record.

    Raises InvalidRecordError when the header contradicts itself or its records (count, offset
    range and deltas, record lengths, bytes after the last record, the control bit), and
    CorruptRecordError when a compressed payload does not decompress within the bound.
    Runs of same-sized records are checked by :func:`~.v2_stride.check_strided`; anything
    else (or damage) is decoded by the walkers, which name what is wrong.
    """
    (base, _, _, _, _, attrs, last_delta, _, _, pid, _, seq, count) = HEADER.unpack_from(buf, pos)
    _check_header(attrs, last_delta, count, pid, seq)
    data, start, end = records_section(buf, pos, size, base, attrs & CODEC_MASK, max_decompressed)
    data = data if isinstance(data, bytes) else bytes(data)  # (bytes in, bytes out)
    if check_strided(data, start, end, count):
        return  # runs of same-sized records, all sound
    try:
        ods = decode_columns(data, start, end, count, base, True)[0]
    except CorruptRecordError as exc:
        raise _invalid(str(exc.args[0]) if exc.args else "malformed records") from None
    if ods is not None and ods != list(range(count)):
        raise _invalid(f"offset deltas {ods[:8]} are not 0..{count - 1} in order")
