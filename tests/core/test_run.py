"""The two drivers run the same conversation to the same result: requests answered, several in
flight at once, pauses, and failures thrown into the conversation (which may recover)."""

from __future__ import annotations

import pytest

from kclient.core import Gather, Request, Sleep
from kclient.errors import UnknownTopicOrPartitionError  # noqa: F401 - the errors module loads
from kclient.protocol.apis import API_VERSIONS, METADATA


def api_keys_then_metadata():
    """ApiVersions, then Metadata and ApiVersions in flight together, a pause, then a request
    the encoder refuses (a version no API has) which the conversation catches and reports."""
    versions = yield Request(API_VERSIONS, {}, 0)
    keys = sorted(k.api_key for k in versions.api_keys)
    both = yield Gather((Request(METADATA, {"topics": None}, 1), Request(API_VERSIONS, {}, 0)))
    slept = yield Sleep(0.01)
    try:
        yield Request(METADATA, {"topics": None}, 999)
    except Exception as exc:  # noqa: BLE001 - the driver threw the encoder's refusal in
        refused = type(exc).__name__
    else:
        refused = None
    return keys, both, slept, refused


def test_both_drivers_answer_every_step(drive):
    keys, both, slept, refused = drive(api_keys_then_metadata)
    assert METADATA.key in keys and API_VERSIONS.key in keys
    metadata, versions = both
    assert [b.node_id for b in metadata.brokers] == [0]
    assert sorted(k.api_key for k in versions.api_keys) == keys
    assert slept is None
    assert refused is not None, "a refused request must be thrown into the conversation"


def failing_gather():
    """One request of a Gather fails before it is sent: its answer is the exception, the other
    request's answer is its response."""
    answers = yield Gather((Request(METADATA, {"topics": None}, 999), Request(API_VERSIONS, {}, 0)))
    return answers


def test_gather_gives_each_request_its_own_answer(drive):
    bad, good = drive(failing_gather)
    assert isinstance(bad, Exception)
    assert good.error_code == 0 and good.api_keys


def not_a_step():
    yield "metadata please"


def test_a_stray_yield_is_an_error_naming_it(drive):
    with pytest.raises(TypeError, match="metadata please"):
        drive(not_a_step)


def cleans_up(log):
    try:
        yield Request(API_VERSIONS, {}, 0)
        raise RuntimeError("the conversation failed")
    finally:
        log.append("closed")


def test_an_error_in_the_conversation_reaches_the_caller_after_its_cleanup(drive):
    log: list[str] = []
    with pytest.raises(RuntimeError, match="the conversation failed"):
        drive(lambda: cleans_up(log))
    assert log == ["closed"]
