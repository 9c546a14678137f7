"""Compression codecs: JVM byte conventions (xerial snappy, KAFKA-3160 lz4), bounds, errors."""

import struct
import zlib

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.protocol import compression as c
from kclient.protocol.errors import KafkaError, ProtocolDecodeError, UnsupportedCodecError
from tests.needs import need_module

DATA = b"".join(b"message %d with some repetitive payload; " % i for i in range(3000))
CODECS = [c.NONE, c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD]


def _pairs():
    for codec in CODECS:
        for magic in (0, 1, 2):
            if codec == c.ZSTD and magic < 2:
                continue
            yield codec, magic


@pytest.mark.parametrize("codec,magic", list(_pairs()))
@pytest.mark.parametrize("data", [b"", b"x", DATA])
def test_round_trip(codec, magic, data):
    packed = c.compress(codec, data, magic)
    assert c.decompress(codec, packed, magic) == data
    assert c.decompress(codec, memoryview(packed), magic) == data


def test_names_and_ids():
    assert c.CODEC_NAMES == {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    assert [c.codec_id(n) for n in ("none", "GZIP", "snappy", "lz4", "zstd")] == CODECS
    assert c.codec_id(None) == c.NONE and c.codec_name(3) == "lz4"
    assert c.available_codecs() == set(CODECS)


@pytest.mark.parametrize("bad", [5, 7, "brotli", -1])
def test_unknown_codec_raises_unsupported(bad):
    with pytest.raises(UnsupportedCodecError):
        c.compress(bad, b"x")
    with pytest.raises(UnsupportedCodecError):
        c.decompress(bad, b"x")


def test_zstd_needs_magic_2_to_write():
    with pytest.raises(UnsupportedCodecError, match="zstd"):
        c.compress(c.ZSTD, b"x", magic=1)


@pytest.mark.parametrize(
    "codec,attr,name",
    [(c.SNAPPY, "_snappy", "snappy"), (c.LZ4, "_lz4f", "lz4"), (c.ZSTD, "_zstd", "zstd")],
)
def test_missing_library_is_an_error_naming_the_codec(monkeypatch, codec, attr, name):
    """kafka-python #1033: a missing codec library must never silently yield nothing."""
    monkeypatch.setattr(c, attr, None)
    with pytest.raises(UnsupportedCodecError, match=name):
        c.decompress(codec, b"whatever")
    with pytest.raises(UnsupportedCodecError, match=name):
        c.compress(codec, b"whatever")


# ------------------------------------------------------------------------------ gzip
def test_gzip_writes_gzip_and_reads_concatenated_members():
    packed = c.compress(c.GZIP, DATA)
    assert packed[:2] == b"\x1f\x8b"
    two = c.compress(c.GZIP, b"first ") + c.compress(c.GZIP, b"second")
    assert c.decompress(c.GZIP, two) == b"first second"


# ------------------------------------------------------------------------------ snappy
def test_snappy_writes_xerial_framing_like_the_jvm():
    packed = c.compress(c.SNAPPY, DATA)
    assert packed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, out = 16, []
    while pos < len(packed):
        (n,) = struct.unpack_from(">i", packed, pos)
        out.append(snappy.decompress(packed[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    assert b"".join(out) == DATA
    assert len(out) == -(-len(DATA) // c.XERIAL_BLOCK_SIZE)
    assert all(len(block) == c.XERIAL_BLOCK_SIZE for block in out[:-1])


def test_snappy_reads_raw_blocks():
    assert c.decompress(c.SNAPPY, snappy.compress(DATA)) == DATA


def test_snappy_reads_xerial_with_little_endian_version_fields():
    block = snappy.compress(b"hello xerial")
    framed = b"\x82SNAPPY\x00" + struct.pack("<ii", 1, 1) + struct.pack(">i", len(block)) + block
    assert c.decompress(c.SNAPPY, framed) == b"hello xerial"


def test_snappy_reads_kafka_python_output():
    codec = need_module("kafka.codec")
    assert c.decompress(c.SNAPPY, codec.snappy_encode(DATA)) == DATA
    assert c.decompress(c.SNAPPY, codec.snappy_encode(DATA, xerial_compatible=False)) == DATA
    assert codec.snappy_decode(c.compress(c.SNAPPY, DATA)) == DATA


def test_snappy_lying_block_length():
    framed = c.compress(c.SNAPPY, DATA)
    bad = framed[:16] + struct.pack(">i", 1 << 30) + framed[20:]
    with pytest.raises(ProtocolDecodeError):
        c.decompress(c.SNAPPY, bad)


# ------------------------------------------------------------------------------ lz4
def test_xxh32_vectors_and_lz4_library_agreement():
    assert c.xxh32(b"") == 0x02CC5D05
    assert c.xxh32(b"abc") == 0x32D153FF
    assert c.xxh32(b"a") == 0x550D7456
    for data in (b"", b"abc", DATA):
        frame = lz4.frame.compress(data, store_size=False)
        assert frame[6] == (c.xxh32(frame[4:6]) >> 8) & 0xFF
    frame = lz4.frame.compress(DATA, store_size=True)
    assert frame[4] & 0x08
    assert frame[14] == (c.xxh32(frame[4:14]) >> 8) & 0xFF


def _header_checksum_variants(frame):
    good = (c.xxh32(frame[4:6]) >> 8) & 0xFF
    broken = (c.xxh32(frame[0:6]) >> 8) & 0xFF
    return good, broken


@pytest.mark.parametrize("magic", [1, 2])
def test_lz4_standard_frames_for_magic_1_and_2(magic):
    packed = c.compress(c.LZ4, DATA, magic)
    assert packed[:4] == b"\x04\x22\x4d\x18"
    flg = packed[4]
    assert flg & 0x20 and not flg & 0x08  # independent blocks, no content size
    assert packed[6] == _header_checksum_variants(packed)[0]
    assert lz4.frame.decompress(packed) == DATA


def test_lz4_magic_0_writes_the_kafka_3160_checksum():
    packed = c.compress(c.LZ4, DATA, 0)
    good, broken = _header_checksum_variants(packed)
    assert good != broken and packed[6] == broken
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(packed)  # a strict reader rejects it ...
    for magic in (0, 1, 2):  # ... kclient reads it whatever the magic says
        assert c.decompress(c.LZ4, packed, magic) == DATA


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_lz4_reads_standard_frames_for_any_magic(magic):
    assert c.decompress(c.LZ4, lz4.frame.compress(DATA), magic) == DATA
    assert c.decompress(c.LZ4, lz4.frame.compress(DATA, store_size=False), magic) == DATA


class _XXHashShim:
    """Stand-in for the ``xxhash`` package kafka-python wants for its magic-0 LZ4 path."""

    class _Digest:
        def __init__(self, data):
            self.value = c.xxh32(bytes(data))

        def digest(self):
            return self.value.to_bytes(4, "big")

    xxh32 = _Digest


def test_lz4_magic_0_interoperates_with_kafka_python(monkeypatch):
    codec = need_module("kafka.codec")
    monkeypatch.setattr(codec, "xxhash", _XXHashShim)
    theirs = codec.lz4_encode_old_kafka(DATA)
    assert c.decompress(c.LZ4, theirs, 0) == DATA
    assert codec.lz4_decode_old_kafka(c.compress(c.LZ4, DATA, 0)) == DATA
    assert c.compress(c.LZ4, DATA, 0)[:7] == theirs[:7]


# ------------------------------------------------------------------------------ zstd
def test_zstd_reads_frames_without_content_size():
    stream = zstandard.ZstdCompressor().compressobj()
    frame = stream.compress(DATA) + stream.flush()
    assert zstandard.frame_content_size(frame) == -1
    assert c.decompress(c.ZSTD, frame) == DATA
    two = zstandard.ZstdCompressor().compress(b"ab") + zstandard.ZstdCompressor().compress(b"cd")
    assert c.decompress(c.ZSTD, two) == b"abcd"


# ------------------------------------------------------------------------------ bounds
def _bombs():
    zeros = bytes(8 << 20)
    stream = zstandard.ZstdCompressor().compressobj()
    return {
        c.GZIP: c.compress(c.GZIP, zeros),
        c.SNAPPY: c.compress(c.SNAPPY, zeros),
        c.LZ4: c.compress(c.LZ4, zeros),
        c.ZSTD: stream.compress(zeros) + stream.flush(),
    }


@pytest.mark.parametrize("codec", [c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD])
def test_decompression_is_bounded(codec):
    bomb = _bombs()[codec]
    assert len(bomb) < 1 << 20
    with pytest.raises(ProtocolDecodeError, match="more than"):
        c.decompress(codec, bomb, max_size=1 << 20)
    assert len(c.decompress(codec, bomb, max_size=8 << 20)) == 8 << 20


def test_raw_snappy_length_header_is_checked_before_decompressing():
    claim = b"\xff\xff\xff\xff\x0f" + b"\x00" * 10  # claims 4 GiB
    with pytest.raises(ProtocolDecodeError):
        c.decompress(c.SNAPPY, claim, max_size=1 << 20)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD]),
    st.binary(max_size=200),
    st.sampled_from([0, 1, 2]),
)
def test_garbage_raises_only_kafka_errors(codec, data, magic):
    try:
        c.decompress(codec, data, magic, max_size=1 << 16)
    except KafkaError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD]), st.binary(max_size=400), st.data())
def test_truncated_or_flipped_compressed_data(codec, data, draw):
    packed = bytearray(c.compress(codec, data))
    cut = draw.draw(st.integers(min_value=0, max_value=len(packed)))
    flip = draw.draw(st.integers(min_value=0, max_value=max(len(packed) - 1, 0)))
    for candidate in (bytes(packed[:cut]), None):
        if candidate is None:
            packed[flip] ^= 0x55
            candidate = bytes(packed)
        try:
            c.decompress(codec, candidate, max_size=1 << 16)
        except KafkaError:
            pass


def test_gzip_level_and_zlib_compatibility():
    packed = c.compress(c.GZIP, DATA, level=1)
    assert zlib.decompress(packed, 31) == DATA


def test_lz4_kafka_3160_checksum_with_content_size_in_the_header():
    frame = bytearray(lz4.frame.compress(DATA, store_size=True))
    assert frame[4] & 0x08  # header: magic, FLG, BD, 8-byte size, HC
    frame[14] = (c.xxh32(bytes(frame[0:14])) >> 8) & 0xFF
    assert c.decompress(c.LZ4, bytes(frame), 0) == DATA
    frame[14] ^= 0xFF  # neither variant: rejected
    with pytest.raises(ProtocolDecodeError):
        c.decompress(c.LZ4, bytes(frame), 0)
