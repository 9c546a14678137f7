"""Encoders and decoders: bytes, text and JSON; None stays None."""

from __future__ import annotations

import ast
import datetime
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kclient.encoders as ke
from kclient.encoders import (
    Decoder,
    DefaultDecoder,
    DefaultEncoder,
    Encoder,
    JsonDecoder,
    JsonEncoder,
    StringDecoder,
    StringEncoder,
)

ALL = [
    DefaultEncoder(),
    DefaultDecoder(),
    StringEncoder(),
    StringDecoder(),
    JsonEncoder(),
    JsonDecoder(),
]


@pytest.mark.parametrize("codec", ALL, ids=lambda c: type(c).__name__)
def test_none_stays_none(codec):
    convert = codec.to_message if isinstance(codec, Encoder) else codec.from_message
    assert convert(None) is None


def test_default_encoder_passes_bytes_through_unchanged():
    data = b"\x00\xffraw"
    assert DefaultEncoder().to_message(data) is data


@pytest.mark.parametrize("data", [bytearray(b"abc"), memoryview(b"abc")])
def test_default_encoder_copies_bytes_likes_to_bytes(data):
    out = DefaultEncoder().to_message(data)
    assert type(out) is bytes and out == b"abc"


@pytest.mark.parametrize("value,type_name", [("text", "str"), (42, "int"), ({"a": 1}, "dict")])
def test_default_encoder_refuses_other_types_and_suggests_encoders(value, type_name):
    with pytest.raises(TypeError) as info:
        DefaultEncoder().to_message(value)
    text = str(info.value)
    assert f"got {type_name}" in text
    assert "StringEncoder" in text and "JsonEncoder" in text
    assert "serializer.class" in text


def test_default_decoder_returns_bytes():
    assert DefaultDecoder().from_message(b"x") == b"x"
    out = DefaultDecoder().from_message(memoryview(b"from-a-fetch-buffer")[5:10])
    assert type(out) is bytes and out == b"a-fet"


def test_string_encoder_utf8_by_default():
    assert StringEncoder().to_message("héllo 日本") == "héllo 日本".encode()


def test_string_encoder_other_encoding():
    assert StringEncoder("latin-1").to_message("é") == b"\xe9"
    assert StringDecoder("latin-1").from_message(b"\xe9") == "é"


def test_string_encoder_unknown_encoding_fails_at_construction():
    with pytest.raises(LookupError):
        StringEncoder("no-such-codec")
    with pytest.raises(LookupError):
        StringDecoder("no-such-codec")


def test_string_encoder_refuses_non_text():
    with pytest.raises(TypeError, match="StringEncoder encodes str, got int; .*JsonEncoder"):
        StringEncoder().to_message(7)


def test_string_encoder_passes_bytes_through():
    assert StringEncoder().to_message(b"already") == b"already"


def test_string_decoder_strict_and_replace():
    with pytest.raises(UnicodeDecodeError):
        StringDecoder().from_message(b"\xff")
    assert StringDecoder(errors="replace").from_message(b"a\xff") == "a\ufffd"


@given(st.text())
def test_string_round_trip(text):
    assert StringDecoder().from_message(StringEncoder().to_message(text)) == text


def test_json_encoder_is_compact_utf8():
    assert JsonEncoder().to_message({"a": [1, 2], "b": None}) == b'{"a":[1,2],"b":null}'
    assert JsonEncoder().to_message({"é": "日"}) == '{"é":"日"}'.encode()


def test_json_encoder_sort_keys():
    assert JsonEncoder(sort_keys=True).to_message({"b": 1, "a": 2}) == b'{"a":2,"b":1}'


def test_json_encoder_unencodable_names_type_and_fix():
    with pytest.raises(TypeError, match=r"JsonEncoder cannot encode set: .*default=\.\.\."):
        JsonEncoder().to_message({1, 2})


def test_json_encoder_default_hook():
    when = datetime.date(2024, 5, 17)
    assert JsonEncoder(default=str).to_message({"d": when}) == b'{"d":"2024-05-17"}'


def test_json_decoder_invalid_names_the_bytes():
    with pytest.raises(ValueError, match=r"JsonDecoder: invalid JSON message b'\{not json'"):
        JsonDecoder().from_message(b"{not json")


def test_json_decoder_object_hook_and_memoryview():
    dec = JsonDecoder(object_hook=lambda d: sorted(d))
    assert dec.from_message(memoryview(b'{"b":1,"a":2}')) == ["a", "b"]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@given(json_values.filter(lambda v: v is not None))
def test_json_round_trip(value):
    encoded = JsonEncoder().to_message(value)
    assert JsonDecoder().from_message(encoded) == value
    assert encoded == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def test_interfaces_and_callables():
    with pytest.raises(NotImplementedError):
        Encoder().to_message(b"x")
    with pytest.raises(NotImplementedError):
        Decoder().from_message(b"x")
    assert StringEncoder()("a") == b"a"
    assert StringDecoder()(b"a") == "a"


def test_encoders_import_nothing_of_kclient():
    tree = ast.parse(Path(ke.__file__).read_text())
    names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in names if m.startswith("kclient")]
