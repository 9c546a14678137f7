"""Our declarative schemas match Apache Kafka's own JSON message definitions, field by field.

Kafka's JSON definitions ship inside kafka-python (a test-only dependency); for every API and
every version we support, the non-tagged fields, their order, types and nullability must agree.
"""

import json
import re
import zipfile
from pathlib import Path

import pytest

from kclient.protocol.apis import ALL_APIS
from kclient.protocol.schema import One, parse_versions
from kclient.protocol.types import ArrayOf, Type
from kclient.testing.kafka_dist import kafka_cache, kafka_version
from tests.needs import need_module

kafka_protocol = need_module("kafka.protocol")
RESOURCES = Path(kafka_protocol.__file__).parent / "schemas" / "resources"


def _kafka_jar_json(name: str) -> str:
    """A definition kafka-python does not ship (KIP-932's share APIs), from the fetched Kafka
    4.x clients jar, which carries the same JSON files."""
    version = kafka_version("4")
    if version is None:
        pytest.fail(f"{name}.json: not in kafka-python and no Kafka 4.x in {kafka_cache()}")
    jar = kafka_cache() / version / "libs" / f"kafka-clients-{version}.jar"
    with zipfile.ZipFile(jar) as z:
        return z.read(f"common/message/{name}.json").decode()


def load(name: str) -> dict:
    path = RESOURCES / f"{name}.json"
    text = path.read_text() if path.exists() else _kafka_jar_json(name)
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _in(spec, v):
    lo, hi = parse_versions(spec or "none")
    return lo <= v <= hi


def kafka_fields(fields, v, common):
    """(name, type, nullable, children) of Kafka's non-tagged fields present at version v."""
    out = []
    for f in fields:
        if not _in(f.get("versions"), v) or "tag" in f:
            continue
        typ = f["type"]
        children = f.get("fields")
        inner = typ[2:] if typ.startswith("[]") else typ
        if children is None and inner in common:
            children = common[inner]
        kind = ("[]" if typ.startswith("[]") else "") + (
            "struct" if children is not None else inner
        )
        kids = kafka_fields(children, v, common) if children is not None else None
        out.append((snake(f["name"]), kind, _in(f.get("nullableVersions"), v), kids))
    return out


def _kind(t: Type) -> str:
    if isinstance(t, ArrayOf):
        return "[]" + _kind(t.element)
    if getattr(t, "raw", False):
        return "records"
    if hasattr(t, "text"):
        return "string" if t.text else "bytes"
    return {"boolean": "bool"}.get(t.name, t.name)


def our_fields(fields, v):
    out = []
    for f in fields:
        if not f.active(v):
            continue
        nullable = (
            _in(f"{f.nullable[0]}-{f.nullable[1]}", v) if f.nullable[0] <= f.nullable[1] else False
        )
        if isinstance(f.type, Type):
            nullable = (
                nullable or bool(getattr(f.type, "nullable", False)) and _kind(f.type) != "records"
            )
            out.append((f.name, _kind(f.type), nullable, None))
        elif isinstance(f.type, One):
            out.append((f.name, "struct", nullable, our_fields(f.type.fields, v)))
        else:
            out.append((f.name, "[]struct", nullable, our_fields(f.type, v)))
    return out


def _normalise(fields):
    # Kafka's "records" type is always nullable; our RECORDS is too - compare the kind only
    return [
        (n, k, (False if k == "records" else nl), _normalise(c) if c else c)
        for n, k, nl, c in fields
    ]


def _json_defines(api, side, v):
    try:
        spec = load(api.name + side)
    except KeyError:  # in neither kafka-python's JSON nor Kafka's jar: golden rows are the oracle
        return False
    lo, hi = parse_versions(spec["validVersions"])
    return lo <= v <= hi


# versions Kafka 4.x removed from its JSON are checked by the legacy-class test below
CASES = [
    (api, side, v)
    for api in ALL_APIS
    for side in ("Request", "Response")
    for v in range(api.min_version, api.max_version + 1)
    if _json_defines(api, side, v)
]


@pytest.mark.parametrize("api,side,version", CASES, ids=[f"{a.name}{s}-v{v}" for a, s, v in CASES])
def test_fields_match_kafka(api, side, version):
    spec = load(api.name + side)
    assert spec["apiKey"] == api.key
    assert api.is_flexible(version) == _in(spec.get("flexibleVersions"), version)
    common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
    ours = our_fields(api.request_fields if side == "Request" else api.response_fields, version)
    assert _normalise(ours) == _normalise(kafka_fields(spec["fields"], version, common))


# --- wire-level check against kafka-python's hand-written legacy classes -------------------
# Kafka 4.x's JSON dropped the oldest versions (Produce v0-2, Fetch v0-3, ...); kafka-python
# still carries classes for them. Bytes we encode must decode there and re-encode identically.


def _legacy_classes():
    import importlib
    import pkgutil

    import kafka.protocol.old as old

    found = {}
    for info in pkgutil.iter_modules(old.__path__):
        mod = importlib.import_module(f"kafka.protocol.old.{info.name}")
        for api in ALL_APIS:
            for side in ("Request", "Response"):
                classes = getattr(mod, api.name + side, None)
                if isinstance(classes, list):
                    # kafka-python lists AlterConfigsRequest_v1 as AlterConfigsResponse[1]:
                    # keep only the classes that are what their list says
                    good = [c for c in classes if c.__name__.startswith(api.name + side)]
                    found[(api.name, side)] = (
                        classes
                        if len(good) == len(classes)
                        else classes[: next(i for i, c in enumerate(classes) if c not in good)]
                    )
    return found


LEGACY = _legacy_classes()


def sample(typ, seed=None):
    """A value for every field, each distinct, arrays of two elements."""
    from kclient.protocol.schema import StructType
    from kclient.protocol.schema import _OneStruct as OneStruct

    if seed is None:
        seed = [0]
    seed[0] += 1
    n = seed[0]
    if isinstance(typ, StructType):
        return {name: sample(t) for name, t in typ._codecs}
    if isinstance(typ, OneStruct):
        return sample(typ.struct)
    if isinstance(typ, ArrayOf):
        return [sample(typ.element), sample(typ.element)]
    kind = _kind(typ)
    if kind == "string":
        return f"s{n}"
    if kind in ("bytes", "records"):
        return bytes([n % 256]) * 3
    if kind == "bool":
        return bool(n % 2)
    if kind == "uuid":
        return bytes(range(16))
    return n % 120


# kafka-python's DescribeAcls v2 classes say "Enable flexible version" but reuse v1's
# non-flexible schema; Kafka's JSON (flexibleVersions 2+) checks that version above
LEGACY_WRONG = {("DescribeAcls", 2)}
LEGACY_CASES = [
    (api, side, v)
    for api in ALL_APIS
    for side in ("Request", "Response")
    for v in range(api.min_version, api.max_version + 1)
    if v < len(LEGACY.get((api.name, side), [])) and (api.name, v) not in LEGACY_WRONG
]


@pytest.mark.parametrize(
    "api,side,version", LEGACY_CASES, ids=[f"{a.name}{s}-v{v}" for a, s, v in LEGACY_CASES]
)
def test_wire_matches_kafka_python_legacy_classes(api, side, version):
    codec = api.request_codec(version) if side == "Request" else api.response_codec(version)
    encode = api.encode_request if side == "Request" else api.encode_response
    wire = b"".join(encode(version, sample(codec)))
    cls = LEGACY[(api.name, side)][version]
    from io import BytesIO

    stream = BytesIO(wire)
    decoded = cls(*cls.SCHEMA.decode(stream))
    assert stream.tell() == len(wire), "kafka-python did not consume exactly our bytes"
    assert decoded.encode() == wire


def test_every_supported_version_is_checked_by_one_of_the_oracles():
    from tests.protocol.test_consumer_group_apis_golden import GOLDEN

    golden = {(api, side.capitalize(), v) for api, side, v, _, _ in GOLDEN}
    for api in ALL_APIS:
        for side in ("Request", "Response"):
            for v in range(api.min_version, api.max_version + 1):
                case = (api, side, v)
                assert case in CASES or case in LEGACY_CASES or case in golden, case
