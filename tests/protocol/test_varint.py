"""Varint / zig-zag codec: known encodings, limits, round trips, fuzzing, kafka-python parity."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.protocol.errors import ProtocolDecodeError
from kclient.protocol.varint import (
    UVARINT_TABLE,
    ZIGZAG_DECODE,
    decode_uvarint,
    decode_uvarint32,
    decode_varint,
    decode_varint32,
    encode_uvarint,
    encode_varint,
    unzigzag,
    uvarint_size,
    varint_size,
    zigzag,
)
from tests.needs import need_module

INT64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
UINT64 = st.integers(min_value=0, max_value=(1 << 64) - 1)


@pytest.mark.parametrize(
    "value,encoded",
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (-2, b"\x03"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (8191, b"\xfe\x7f"),
        (8192, b"\x80\x80\x01"),
        ((1 << 63) - 1, b"\xfe" + b"\xff" * 8 + b"\x01"),
        (-(1 << 63), b"\xff" * 9 + b"\x01"),
    ],
)
def test_known_signed_encodings(value, encoded):
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0) == (value, len(encoded))
    assert varint_size(value) == len(encoded)


@pytest.mark.parametrize(
    "value,encoded",
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        ((1 << 64) - 1, b"\xff" * 9 + b"\x01"),
    ],
)
def test_known_unsigned_encodings(value, encoded):
    assert encode_uvarint(value) == encoded
    assert decode_uvarint(encoded, 0) == (value, len(encoded))
    assert uvarint_size(value) == len(encoded)


def test_seed_size_boundaries():
    """The seed: 0-63 take 1 byte, 64-8191 two, 8192-1048575 three (signed, zig-zag)."""
    assert {varint_size(v) for v in (0, 63)} == {1}
    assert {varint_size(v) for v in (64, 8191)} == {2}
    assert {varint_size(v) for v in (8192, 1048575)} == {3}
    assert varint_size(1048576) == 4


def test_tables_agree_with_the_loops():
    for u in range(0, len(UVARINT_TABLE), 97):
        assert decode_uvarint(UVARINT_TABLE[u])[0] == u
    for u in range(0, len(ZIGZAG_DECODE), 89):
        assert ZIGZAG_DECODE[u] == unzigzag(u) and zigzag(ZIGZAG_DECODE[u]) == u


def test_decode_at_position_and_memoryview():
    buf = memoryview(b"xx" + encode_varint(-300) + encode_varint(5))
    v, pos = decode_varint(buf, 2)
    assert v == -300
    assert decode_varint(buf, pos) == (5, len(buf))


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff", b"\x80" * 9])
def test_truncated_raises(data):
    for fn in (decode_varint, decode_uvarint, decode_varint32, decode_uvarint32):
        with pytest.raises(ProtocolDecodeError):
            fn(data, 0)


def test_overlong_and_overflow_raise():
    with pytest.raises(ProtocolDecodeError):
        decode_uvarint(b"\x80" * 10 + b"\x01")  # 11 bytes
    with pytest.raises(ProtocolDecodeError):
        decode_uvarint(b"\xff" * 9 + b"\x02")  # 2**64 does not fit
    with pytest.raises(ProtocolDecodeError):
        decode_varint32(b"\x80\x80\x80\x80\x80\x01")  # 6 bytes for an int32
    with pytest.raises(ProtocolDecodeError):
        decode_uvarint32(b"\xff\xff\xff\xff\x1f")  # 2**35 - 1
    assert decode_varint32(b"\xfe\xff\xff\xff\x0f") == ((1 << 31) - 1, 5)
    assert decode_varint32(b"\xff\xff\xff\xff\x0f") == (-(1 << 31), 5)


def test_encode_rejects_out_of_range():
    with pytest.raises(ValueError):
        encode_varint(1 << 63)
    with pytest.raises(ValueError):
        encode_uvarint(-1)
    with pytest.raises(ValueError):
        encode_uvarint(1 << 64)


@given(INT64)
def test_varint_round_trip(value):
    data = encode_varint(value)
    assert decode_varint(data, 0) == (value, len(data))
    assert varint_size(value) == len(data) <= 10
    assert unzigzag(zigzag(value)) == value


@given(UINT64)
def test_uvarint_round_trip(value):
    data = encode_uvarint(value)
    assert decode_uvarint(data + b"tail", 0) == (value, len(data))
    assert uvarint_size(value) == len(data)


@given(st.binary(max_size=16), st.integers(min_value=0, max_value=16))
def test_fuzzed_input_raises_only_protocol_errors(data, pos):
    for fn in (decode_varint, decode_uvarint, decode_varint32, decode_uvarint32):
        try:
            value, new_pos = fn(data, pos)
        except ProtocolDecodeError:
            continue
        assert pos < new_pos <= len(data) and new_pos - pos <= 10
        assert isinstance(value, int)


@settings(max_examples=200)
@given(INT64)
def test_same_bytes_as_kafka_python(value):
    util = need_module("kafka.record.util")
    out = bytearray()
    util.encode_varint(value, out.append)
    assert bytes(out) == encode_varint(value)
    assert util.decode_varint(bytes(out), 0)[0] == value


def test_every_decoder_rejects_a_negative_position_and_agrees_on_one_byte():
    for fn in (decode_varint, decode_uvarint, decode_varint32, decode_uvarint32):
        with pytest.raises(ProtocolDecodeError, match="negative position"):
            fn(b"\x01\x02", -1)
    for b in range(128):
        assert decode_varint32(bytes([b])) == decode_varint(bytes([b])) == (unzigzag(b), 1)
        assert decode_uvarint32(bytes([b])) == decode_uvarint(bytes([b])) == (b, 1)
