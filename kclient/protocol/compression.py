"""Compression codecs of the Kafka record formats (attributes bits 0-2).

``compress(codec, data, magic)`` / ``decompress(codec, data, magic, max_size)`` cover none, gzip,
snappy, lz4 and zstd with the byte-level conventions the JVM uses:

* snappy is written with the xerial framing (``\\x82SNAPPY\\x00``, version, compat, then
  ``[int32 length][raw block]...``); both framed and raw snappy are read, and the framing's
  version/compat fields are not validated (some brokers write them little-endian);
* lz4 uses standard LZ4 frames with independent 64 KiB blocks; for magic 0 the frame header
  checksum is computed the way Kafka 0.8.2/0.9 did (over the magic number too, KAFKA-3160).
  Reading accepts both checksum variants for every magic;
* zstd frames are read with or without a content size.

Decompressed output is bounded by ``max_size`` so a decompression bomb raises
:class:`ProtocolDecodeError` instead of allocating gigabytes.  A missing library or an unknown
codec id raises :class:`UnsupportedCodecError` naming it.
"""

from __future__ import annotations

import struct
import zlib

from kclient.protocol.errors import ProtocolDecodeError, UnsupportedCodecError
from kclient.protocol.varint import Buffer

try:  # pragma: no cover - presence depends on the environment
    import snappy as _snappy
except ImportError:  # pragma: no cover
    _snappy = None
try:  # pragma: no cover
    import lz4.frame as _lz4f
except ImportError:  # pragma: no cover
    _lz4f = None
try:  # pragma: no cover
    import zstandard as _zstd
except ImportError:  # pragma: no cover
    _zstd = None  # type: ignore[assignment]


NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
#: Codec id -> name, as used by ``compression.codec`` / ``compression.type`` configs.
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_IDS = {name: cid for cid, name in CODEC_NAMES.items()}
#: Mask of the codec bits in a message / batch attributes field.
CODEC_MASK = 0x07
#: Default bound on the decompressed size of one message set / batch (bytes).
DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024
_INT32 = struct.Struct(">i")
_LZ4_MAGIC = b"\x04\x22\x4d\x18"


def codec_id(codec: int | str | None) -> int:
    """Normalise a codec given by id or name (``"gzip"``, ``"none"``, ``None``) to its id."""
    if codec is None:
        return NONE
    if isinstance(codec, str):
        try:
            return CODEC_IDS[codec.strip().lower()]
        except KeyError:
            raise UnsupportedCodecError(f"unknown compression codec {codec!r}") from None
    if codec in CODEC_NAMES:
        return int(codec)
    raise UnsupportedCodecError(f"unknown compression codec id {codec!r}")


def codec_name(codec: int) -> str:
    """Name of a codec id (``2 -> "snappy"``); unknown ids raise UnsupportedCodecError."""
    return CODEC_NAMES[codec_id(codec)]


def available_codecs() -> set[int]:
    """Codec ids whose library is importable here."""
    libs = {
        NONE: True,
        GZIP: True,
        SNAPPY: _snappy is not None,
        LZ4: _lz4f is not None,
        ZSTD: _zstd is not None,
    }
    return {cid for cid, ok in libs.items() if ok}


def _require(codec: int, magic: int) -> None:
    """Raise UnsupportedCodecError if ``codec`` is unknown, unavailable or invalid for magic."""
    name = CODEC_NAMES.get(codec)
    if name is None:
        raise UnsupportedCodecError(f"unknown compression codec id {codec!r}")
    if codec not in available_codecs():
        raise UnsupportedCodecError(
            f"compression codec {name} needs a library that is not installed"
        )
    if codec == ZSTD and magic < 2:
        raise UnsupportedCodecError(
            f"compression codec zstd needs message format v2 (magic {magic})"
        )


# --------------------------------------------------------------------------- xxhash32
_P1, _P2, _P3, _P4, _P5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 digest (needed for LZ4 frame header checksums; inputs here are tiny)."""
    n = len(data)
    pos = 0
    if n >= 16:
        acc = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos : pos + 4], "little")
                acc[i] = (_rotl((acc[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        h = (
            _rotl((h + int.from_bytes(data[pos : pos + 4], "little") * _P3) & _M32, 17) * _P4
        ) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


# --------------------------------------------------------------------------- gzip
def _gzip_compress(data: Buffer, level: int | None) -> bytes:
    co = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 31)
    return co.compress(data) + co.flush()


def _gzip_decompress(data: Buffer, max_size: int) -> bytes:
    parts = []
    total = 0
    data = bytes(data)
    while True:
        d = zlib.decompressobj(47)  # gzip or zlib header, auto-detected
        try:
            out = d.decompress(data, max_size - total + 1)
        except zlib.error as exc:
            raise ProtocolDecodeError(f"invalid gzip data: {exc}") from None
        total += len(out)
        if total > max_size:
            raise ProtocolDecodeError(f"gzip data decompresses to more than {max_size} bytes")
        parts.append(out)
        if not d.eof:
            raise ProtocolDecodeError("truncated gzip data")
        data = d.unused_data
        if not data.strip(b"\x00"):  # concatenated members, or trailing padding
            return b"".join(parts)


# --------------------------------------------------------------------------- snappy
def _snappy_compress(data: Buffer) -> bytes:
    data = bytes(data)
    parts = [XERIAL_HEADER]
    for start in range(0, len(data), XERIAL_BLOCK_SIZE):
        block = _snappy.compress(data[start : start + XERIAL_BLOCK_SIZE])
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_raw_length(block: bytes) -> int:
    """Uncompressed length stored as the uvarint prefix of a raw snappy block."""
    value = shift = 0
    for i in range(min(len(block), 5)):
        b = block[i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value
        shift += 7
    raise ProtocolDecodeError("invalid snappy block header")


def _snappy_block(block: bytes, budget: int) -> bytes:
    if _snappy_raw_length(block) > budget:
        raise ProtocolDecodeError("snappy data decompresses to more than the allowed size")
    try:
        return bytes(_snappy.decompress(block))
    except Exception as exc:  # noqa: BLE001 - python-snappy/cramjam raise their own error types
        raise ProtocolDecodeError(f"invalid snappy data: {exc}") from None


def _snappy_decompress(data: Buffer, max_size: int) -> bytes:
    data = bytes(data)
    if not data.startswith(XERIAL_MAGIC) or len(data) < 16:
        return _snappy_block(data, max_size)
    pos, end, total, parts = 16, len(data), 0, []
    while pos < end:
        if pos + 4 > end:
            raise ProtocolDecodeError("truncated xerial snappy block length")
        (size,) = _INT32.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > end:
            raise ProtocolDecodeError("xerial snappy block length exceeds the data")
        out = _snappy_block(data[pos : pos + size], max_size - total)
        pos += size
        total += len(out)
        parts.append(out)
    return b"".join(parts)


# --------------------------------------------------------------------------- lz4
def _lz4_header_len(data: Buffer) -> int:
    """Length of an LZ4 frame header including its checksum byte (0 if not a frame)."""
    if len(data) < 7 or bytes(data[:4]) != _LZ4_MAGIC:
        return 0
    flg = data[4]
    return 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)


def _lz4_compress(data: Buffer, magic: int, level: int | None) -> bytes:
    out: bytes = _lz4f.compress(
        bytes(data),
        compression_level=level or 0,
        block_size=_lz4f.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )
    if magic == 0:  # KAFKA-3160: old brokers checksum magic + descriptor
        hlen = _lz4_header_len(out)
        broken = (xxh32(out[: hlen - 1]) >> 8) & 0xFF
        out = out[: hlen - 1] + bytes((broken,)) + out[hlen:]
    return out


def _lz4_fix_header(data: bytes) -> bytes:
    """Rewrite a KAFKA-3160 style header checksum into the standard one."""
    hlen = _lz4_header_len(data)
    if not hlen or len(data) < hlen:
        return data
    good = (xxh32(data[4 : hlen - 1]) >> 8) & 0xFF
    hc = data[hlen - 1]
    if hc != good and hc == (xxh32(data[: hlen - 1]) >> 8) & 0xFF:
        return data[: hlen - 1] + bytes((good,)) + data[hlen:]
    return data


def _lz4_decompress(data: Buffer, max_size: int) -> bytes:
    data = _lz4_fix_header(bytes(data))
    d = _lz4f.LZ4FrameDecompressor()
    try:
        out: bytes = d.decompress(data, max_length=max_size + 1)
    except Exception as exc:  # noqa: BLE001 - lz4 raises RuntimeError/ValueError on bad frames
        raise ProtocolDecodeError(f"invalid lz4 data: {exc}") from None
    if len(out) > max_size:
        raise ProtocolDecodeError(f"lz4 data decompresses to more than {max_size} bytes")
    if not d.eof:
        raise ProtocolDecodeError("truncated lz4 frame")
    return out


# --------------------------------------------------------------------------- zstd
def _zstd_compress(data: Buffer, level: int | None) -> bytes:
    return _zstd.ZstdCompressor(level=3 if level is None else level).compress(data)


def _zstd_decompress(data: Buffer, max_size: int) -> bytes:
    parts = []
    total = 0
    try:
        with _zstd.ZstdDecompressor().stream_reader(bytes(data), read_across_frames=True) as r:
            while True:
                chunk = r.read(min(max_size - total + 1, 1 << 20))
                if not chunk:
                    break
                total += len(chunk)
                if total > max_size:
                    raise ProtocolDecodeError(
                        f"zstd data decompresses to more than {max_size} bytes"
                    )
                parts.append(chunk)
    except ProtocolDecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - zstandard.ZstdError and friends
        raise ProtocolDecodeError(f"invalid zstd data: {exc}") from None
    return b"".join(parts)


# --------------------------------------------------------------------------- public
def compress(codec: int | str, data: Buffer, magic: int = 2, level: int | None = None) -> bytes:
    """Compress ``data`` with ``codec`` as a Kafka producer of message format ``magic`` does."""
    codec = codec_id(codec)
    if codec == NONE:
        return bytes(data)
    _require(codec, magic)
    if codec == GZIP:
        return _gzip_compress(data, level)
    if codec == SNAPPY:
        return _snappy_compress(data)
    if codec == LZ4:
        return _lz4_compress(data, magic, level)
    return _zstd_compress(data, level)


def decompress(
    codec: int | str, data: Buffer, magic: int = 2, max_size: int = DEFAULT_MAX_DECOMPRESSED
) -> bytes:
    """Decompress ``data``; raise ProtocolDecodeError if invalid or larger than ``max_size``."""
    codec = codec_id(codec)
    if codec == NONE:
        return bytes(data)
    _require(codec, 2 if codec == ZSTD else magic)  # read zstd whatever the magic claims
    if codec == GZIP:
        return _gzip_decompress(data, max_size)
    if codec == SNAPPY:
        return _snappy_decompress(data, max_size)
    if codec == LZ4:
        return _lz4_decompress(data, max_size)
    return _zstd_decompress(data, max_size)


__all__ = [
    "NONE",
    "GZIP",
    "SNAPPY",
    "LZ4",
    "ZSTD",
    "CODEC_NAMES",
    "CODEC_IDS",
    "CODEC_MASK",
    "DEFAULT_MAX_DECOMPRESSED",
    "XERIAL_MAGIC",
    "codec_id",
    "codec_name",
    "available_codecs",
    "compress",
    "decompress",
    "xxh32",
]
