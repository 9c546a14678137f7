"""Every API schema round-trips at every supported version, requests and responses; decoding is
lenient as Kafka's: trailing bytes and unknown tagged fields change nothing."""

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kclient.protocol import schema
from kclient.protocol.apis import ALL_APIS, METADATA
from kclient.protocol.errors import ProtocolDecodeError
from kclient.protocol.schema import StructType, _OneStruct
from kclient.protocol.types import (
    BOOLEAN,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    UINT16,
    UUID,
    ArrayOf,
)
from tests.conftest import encode_with_unknown_tags

_INTS = {id(INT8): 8, id(INT16): 16, id(INT32): 32, id(INT64): 64}


def strategy_for(typ):
    """A hypothesis strategy producing valid values of a compiled wire type."""
    if isinstance(typ, StructType):
        return st.fixed_dictionaries({name: strategy_for(t) for name, t in typ._codecs})
    if isinstance(typ, _OneStruct):
        one = strategy_for(typ.struct)
        return st.one_of(st.none(), one) if typ.nullable else one
    if isinstance(typ, ArrayOf):
        s = st.lists(strategy_for(typ.element), max_size=3)
    elif id(typ) in _INTS:
        bits = _INTS[id(typ)]
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    elif typ is UINT16:
        return st.integers(0, 0xFFFF)
    elif typ is BOOLEAN:
        return st.booleans()
    elif typ is FLOAT64:
        return st.floats(allow_nan=False)
    elif typ is UUID:
        return st.binary(min_size=16, max_size=16)
    elif typ.text:
        s = st.text(max_size=12)
    else:
        s = st.binary(max_size=24)
    return st.one_of(st.none(), s) if typ.nullable else s


def project(typ, value):
    """Keep only the fields a version carries (decode fills the others with defaults)."""
    if isinstance(typ, StructType):
        return {name: project(t, value[name]) for name, t in typ._codecs}
    if isinstance(typ, _OneStruct):
        return None if value is None else project(typ.struct, value)
    if isinstance(typ, ArrayOf) and value is not None:
        return [project(typ.element, v) for v in value]
    if isinstance(value, memoryview):
        return bytes(value)
    return value


CASES = [
    (api, v, side)
    for api in ALL_APIS
    for v in range(api.min_version, api.max_version + 1)
    for side in ("request", "response")
]


@pytest.mark.parametrize("api,version,side", CASES, ids=[f"{a.name}-v{v}-{s}" for a, v, s in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip(api, version, side, data):
    codec = api.request_codec(version) if side == "request" else api.response_codec(version)
    value = data.draw(strategy_for(codec))
    encode = api.encode_request if side == "request" else api.encode_response
    decode = api.decode_request if side == "request" else api.decode_response
    wire = b"".join(encode(version, value))
    decoded = decode(version, wire)
    assert project(codec, decoded.to_dict()) == value
    # encoding what was decoded gives the same bytes (absent-version fields are ignored)
    assert b"".join(encode(version, decoded)) == wire


def _codec_and_coders(api, version, side):
    if side == "request":
        return api.request_codec(version), api.encode_request, api.decode_request
    return api.response_codec(version), api.encode_response, api.decode_response


@pytest.mark.parametrize("api,version,side", CASES, ids=[f"{a.name}-v{v}-{s}" for a, v, s in CASES])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), suffix=st.binary(min_size=1, max_size=40))
def test_any_suffix_decodes_as_the_message_alone(api, version, side, data, suffix):
    codec, encode, decode = _codec_and_coders(api, version, side)
    wire = b"".join(encode(version, data.draw(strategy_for(codec))))
    assert decode(version, wire + suffix) == decode(version, wire)
    assert decode(version, memoryview(b"\x07" + wire + suffix), 1) == decode(version, wire)
    with pytest.raises(ProtocolDecodeError, match=f"{len(suffix)} unexpected trailing bytes"):
        decode(version, wire + suffix, strict=True)


FLEXIBLE = [c for c in CASES if c[0].is_flexible(c[1])]


def _without_tags(value):
    """A decoded message as plain data, without the unknown tags kept in ``_tagged_fields``."""
    if isinstance(value, dict):
        return {k: _without_tags(v) for k, v in value.items() if k != "_tagged_fields"}
    if isinstance(value, list):
        return [_without_tags(v) for v in value]
    return value


@pytest.mark.parametrize(
    "api,version,side", FLEXIBLE, ids=[f"{a.name}-v{v}-{s}" for a, v, s in FLEXIBLE]
)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_unknown_tagged_fields_in_every_struct_are_skipped(api, version, side, data):
    codec, encode, decode = _codec_and_coders(api, version, side)
    value = data.draw(strategy_for(codec))
    tagged = encode_with_unknown_tags(codec, value)
    clean = decode(version, b"".join(encode(version, value)), strict=True)
    got = decode(version, tagged, strict=True)
    assert got._tagged_fields == {10000: b"\x01\x02\x03", 10001: b""}
    assert _without_tags(got.to_dict()) == clean.to_dict()


def test_trailing_bytes_are_logged_at_debug_once_per_interval(caplog, monkeypatch):
    monkeypatch.setattr(schema, "_trailing_logged", {})
    wire = b"".join(METADATA.encode_request(9, {"topics": None})) + b"\x00\x00\x00"
    with caplog.at_level(logging.DEBUG, logger="kclient.protocol"):
        for _ in range(5):
            METADATA.decode_request(9, wire)
        METADATA.decode_request(8, b"".join(METADATA.encode_request(8, {"topics": []})) + b"x")
    lines = [r for r in caplog.records if "trailing" in r.getMessage()]
    assert [(r.levelno, r.getMessage().split(":")[0]) for r in lines] == [
        (logging.DEBUG, "Metadata v9 request"),
        (logging.DEBUG, "Metadata v8 request"),
    ]
    assert "ignored 3 trailing bytes" in lines[0].getMessage()
    monkeypatch.setattr(schema, "TRAILING_LOG_INTERVAL", 0.0)
    with caplog.at_level(logging.DEBUG, logger="kclient.protocol"):
        METADATA.decode_request(9, wire)
    assert len([r for r in caplog.records if "trailing" in r.getMessage()]) == 3


def test_librdkafka_metadata_all_topics_request_decodes_as_kafka_reads_it():
    """librdkafka 2.16 asks for all topics with a 4-byte placeholder where the 1-byte compact
    count belongs; Kafka reads null topics, skips the tag it finds, and ignores the last byte."""
    body = bytes.fromhex("0000000001000000")
    req = METADATA.decode_request(9, body)
    assert req.topics is None and req.allow_auto_topic_creation is False
    assert req._tagged_fields == {0: b""}
