"""Coordinator lookup written once (kclient.core.coordinator.find_coordinators), run by both
drivers: FindCoordinator v4+ asks for every key in one request (KIP-699); an older broker is
asked for one key per request, the others all in flight at once; each key's error is its own."""

from __future__ import annotations

import pytest

from kclient.connection import ConnectionSettings
from kclient.core.coordinator import (
    CoordinatorAddress,
    CoordinatorState,
    find_coordinator,
    find_coordinators,
)
from kclient.core.steps import Gather, Request
from kclient.errors import InvalidRequestError

from .conftest import driver


def recorded(conversation, steps):
    """``conversation`` as it is, with every step it yields appended to ``steps``."""
    answer, failure = None, None
    while True:
        try:
            step = conversation.throw(failure) if failure else conversation.send(answer)
        except StopIteration as done:
            return done.value
        steps.append(step)
        answer, failure = None, None
        try:
            answer = yield step
        except Exception as exc:  # noqa: BLE001 - handed on to the conversation
            failure = exc


def test_every_key_in_one_request_on_a_v4_broker(drive):
    steps: list = []
    found = drive(lambda: recorded(find_coordinators(["g1", "g2", "g3"]), steps))
    assert set(found) == {"g1", "g2", "g3"}
    assert all(isinstance(a, CoordinatorAddress) and a.node_id == 0 for a in found.values())
    assert len(steps) == 1 and isinstance(steps[0], Request), "one batched FindCoordinator"


def test_each_key_has_its_own_error(drive):
    found = drive(lambda: find_coordinators(["a", "b"], key_type=7))
    assert all(
        isinstance(e, InvalidRequestError) and "finding the coordinator" in str(e)
        for e in found.values()
    )
    assert drive(lambda: find_coordinators([])) == {}


def test_the_single_key_lookup_keeps_the_address(drive):
    state = CoordinatorState("grp")
    address = drive(lambda: find_coordinator(state))
    assert state.address == address and address.node_id == 0
    failing = CoordinatorState("grp", key_type=9)
    with pytest.raises(InvalidRequestError, match="'grp'"):
        drive(lambda: find_coordinator(failing))
    assert failing.address is None


@pytest.fixture(params=["threaded", "asyncio"])
def old_broker_drive(request, mini_broker):
    """Like ``drive``, on a connection that assumes a broker of 0.10.0 (FindCoordinator v0)."""
    settings = ConnectionSettings(
        client_id="old", api_version_request=False, broker_version_fallback="0.10.0"
    )
    return driver(request.param, mini_broker.bootstrap, settings)


def test_an_older_broker_is_asked_one_key_per_request(old_broker_drive):
    steps: list = []
    found = old_broker_drive(lambda: recorded(find_coordinators(["g1", "g2", "g3"]), steps))
    assert all(isinstance(a, CoordinatorAddress) for a in found.values())
    assert list(found) == ["g1", "g2", "g3"]
    first, rest = steps
    assert isinstance(first, Request) and isinstance(rest, Gather)
    assert [r.body["key"] for r in rest.requests] == ["g2", "g3"]
    assert all(r.max_version == 3 for r in rest.requests)
