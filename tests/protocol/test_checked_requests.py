"""A request or response body naming a field no version of its API declares is refused, with
the API, the version and the field in the error (it used to encode as the field's default)."""

from __future__ import annotations

import pytest

from kclient.protocol.apis import ALL_APIS, JOIN_GROUP, PRODUCE

JOIN = {
    "group_id": "g",
    "session_timeout_ms": 10000,
    "rebalance_timeout_ms": 30000,
    "member_id": "",
    "protocol_type": "consumer",
    "protocols": [],
}


def test_a_misspelt_top_level_field_is_refused_naming_api_and_field():
    with pytest.raises(ValueError, match=r"JoinGroup v5 request: unknown field 'group_instace_id'"):
        JOIN_GROUP.encode_request(5, {**JOIN, "group_instace_id": "x"})


def test_a_misspelt_nested_field_is_refused_with_its_path():
    body = {**JOIN, "protocols": [{"name": "range", "metdata": b""}]}
    with pytest.raises(ValueError, match=r"field 'protocols': unknown field 'metdata'"):
        JOIN_GROUP.encode_request(5, body)


def test_a_field_of_a_later_version_is_dropped_not_refused():
    # group_instance_id exists from v5: at v4 it is a known name the version does not carry
    with_id = b"".join(
        bytes(p) for p in JOIN_GROUP.encode_request(4, {**JOIN, "group_instance_id": "i"})
    )
    without = b"".join(bytes(p) for p in JOIN_GROUP.encode_request(4, JOIN))
    assert with_id == without


def test_responses_are_checked_too():
    with pytest.raises(ValueError, match=r"Produce v9 response: unknown field 'reponses'"):
        PRODUCE.encode_response(9, {"reponses": [], "throttle_time_ms": 0})


@pytest.mark.parametrize("api", ALL_APIS, ids=lambda a: a.name)
def test_every_api_refuses_an_unknown_name_at_every_version(api):
    for version in range(api.min_version, api.max_version + 1):
        with pytest.raises(ValueError, match=f"{api.name} v{version} request: unknown field"):
            api.encode_request(version, {"no_such_field": 1})
