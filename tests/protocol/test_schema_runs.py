"""Runs of fixed-size fields (schema.py packs consecutive ints, booleans and floats with one
``struct`` call): the same bytes, values, defaults and errors as field by field."""

from __future__ import annotations

import struct

import pytest

from kclient.protocol.errors import ProtocolDecodeError
from kclient.protocol.schema import Api, Struct
from kclient.protocol.schema import Field as F
from kclient.protocol.types import BOOLEAN, FLOAT64, INT8, INT16, INT32, INT64, STRING, UINT16

API = Api(
    9999,
    "Runs",
    "0-1",
    flexible=1,
    request=[
        F("a", INT8),
        F("b", INT16),
        F("c", INT32, default=7),
        F("name", STRING),
        F("d", INT64),
        F("e", UINT16, "1+"),
        F("f", FLOAT64),
        F("g", BOOLEAN),
        F("items", [F("x", INT32), F("y", INT64)]),
    ],
    response=[],
)
VALUES = {"a": -3, "b": 300, "c": 70000, "name": "n", "d": -(2**40), "e": 65535, "f": 0.5}


def _expected(version: int, values: dict) -> bytes:
    """The encoding written out by hand, field by field."""
    out = struct.pack(">bhi", values["a"], values["b"], values.get("c", 7))
    out += struct.pack(">h", 1) + b"n" if version == 0 else b"\x02n"
    out += struct.pack(">q", values["d"])
    if version >= 1:
        out += struct.pack(">H", values["e"])
    out += struct.pack(">d?", values["f"], bool(values.get("g")))
    items = values.get("items", [])
    out += struct.pack(">i", len(items)) if version == 0 else bytes([len(items) + 1])
    for x, y in items:
        out += struct.pack(">iq", x, y) + (b"\x00" if version >= 1 else b"")
    return out + (b"\x00" if version >= 1 else b"")


class _Attrs:
    def __init__(self, **kw: object) -> None:
        self.__dict__.update(kw)


@pytest.mark.parametrize("version", [0, 1])
def test_dicts_structs_and_objects_encode_as_field_by_field(version: int) -> None:
    items = [(1, 2), (-1, 2**62)]
    expected = _expected(version, {**VALUES, "g": 5, "items": items})
    body = {**VALUES, "g": 5, "items": [{"x": x, "y": y} for x, y in items]}
    for value in (body, Struct(**body), _Attrs(**body)):
        assert b"".join(API.encode_request(version, value)) == expected
    decoded = API.decode_request(version, expected, strict=True)
    assert (decoded.a, decoded.b, decoded.c, decoded.d, decoded.f, decoded.g) == (
        -3,
        300,
        70000,
        -(2**40),
        0.5,
        True,
    )
    assert decoded.e == (65535 if version else 0)  # absent at v0: its default
    assert [(i.x, i.y) for i in decoded.items] == items


def test_missing_fields_take_their_defaults_inside_a_run() -> None:
    body = {k: v for k, v in VALUES.items() if k != "c"}
    assert b"".join(API.encode_request(1, body)) == _expected(1, body)


def test_a_bad_value_names_its_field() -> None:
    with pytest.raises(ValueError, match=r"Runs v1 request: field 'b': int16: cannot encode 40000"):
        API.encode_request(1, {**VALUES, "b": 40000})
    with pytest.raises(ValueError, match=r"field 'y': int64: cannot encode None"):
        API.encode_request(0, {**VALUES, "items": [{"x": 1, "y": None}]})


def test_truncation_inside_a_run_names_the_field_and_byte() -> None:
    data = _expected(1, VALUES)
    with pytest.raises(ProtocolDecodeError, match=r"truncated int32 at byte 3"):
        API.decode_request(1, data[:5])
    with pytest.raises(ProtocolDecodeError, match=r"truncated float64 at byte 19"):
        API.decode_request(1, data[:22])
