"""ShareConsumer / AIOShareConsumer behaviour beyond draining, on the mini-broker: the
acknowledgement modes' rules, commit results and the commit callback, wakeup, async for and
commit_async, and configuration errors."""

from __future__ import annotations

import asyncio
import threading

import pytest

from integration.share_scenarios import conf, new_group, produce
from kclient import AcknowledgeType, ShareConsumer
from kclient.admin import AdminClient
from kclient.aio import AIOShareConsumer
from kclient.errors import IllegalStateError, InvalidConfigError, WakeupError
from kclient.structs import TopicPartition
from tests.share.test_share_minibroker import broker  # noqa: F401 - the module's broker
from tests.waiting import wait_until


def _topic(bootstrap: str, n: int) -> str:
    import uuid

    name = f"api-{uuid.uuid4().hex[:8]}"
    with AdminClient(bootstrap) as admin:
        admin.create_topic(name, 1)
    produce(bootstrap, name, n, 1)
    return name


def _poll_some(c, want: int) -> list:
    got: list = []
    wait_until(lambda: got.extend(c.poll(0.3)) or len(got) >= want, 20, f"{want} records")
    return got


def test_explicit_mode_rules_commit_results_and_callback(broker):  # noqa: F811
    topic = _topic(broker.bootstrap, 3)
    calls: list = []
    explicit = {"share.acknowledgement.mode": "explicit"}
    with ShareConsumer(conf(broker.bootstrap, new_group(broker.bootstrap), **explicit), topic) as c:
        c.set_acknowledgement_commit_callback(lambda offsets, err: calls.append((offsets, err)))
        got = _poll_some(c, 3)
        with pytest.raises(IllegalStateError, match="3 records of the last poll"):
            c.poll(0)
        c.acknowledge(got[0], AcknowledgeType.ACCEPT)
        c.acknowledge(got[1], AcknowledgeType.REJECT)
        c.acknowledge(got[2], AcknowledgeType.RELEASE)
        with pytest.raises(ValueError, match="not delivered"):
            c.acknowledge(got[0])
        with pytest.raises(ValueError, match="unknown acknowledge type"):
            c.acknowledge(got[0], 9)
        tp = TopicPartition(topic, 0)
        assert c.commit_sync() == {tp: None}
        assert calls == [({tp: {0, 1, 2}}, None)]
        again = _poll_some(c, 1)
        assert [(r.offset, r.delivery_count) for r in again] == [(2, 2)]


def test_implicit_mode_refuses_acknowledge_and_wakeup_cuts_a_poll(broker):  # noqa: F811
    topic = _topic(broker.bootstrap, 1)
    with ShareConsumer(conf(broker.bootstrap, new_group(broker.bootstrap)), topic) as c:
        got = _poll_some(c, 1)
        with pytest.raises(IllegalStateError, match="explicit"):
            c.acknowledge(got[0])
        threading.Timer(0.3, c.wakeup).start()
        with pytest.raises(WakeupError):
            c.poll(30)
    with pytest.raises(IllegalStateError, match="closed"):
        c.poll(0)


def test_async_for_and_commit_async(broker):  # noqa: F811
    topic = _topic(broker.bootstrap, 4)
    calls: list = []

    async def main() -> list:
        got = []
        explicit = {"share.acknowledgement.mode": "explicit"}
        async with AIOShareConsumer(
            conf(broker.bootstrap, new_group(broker.bootstrap), **explicit), topic
        ) as c:
            c.set_acknowledgement_commit_callback(lambda offsets, err: calls.append(offsets))
            async for record in c:
                c.acknowledge(record)
                got.append(record.offset)
                if len(got) == 4:
                    break
            results = await c.commit_async()
            assert results == {TopicPartition(topic, 0): None}
        return got

    assert asyncio.run(asyncio.wait_for(main(), 30)) == [0, 1, 2, 3]
    assert calls == [{TopicPartition(topic, 0): {0, 1, 2, 3}}]


def test_threaded_commit_async_returns_before_its_answer_and_the_next_poll_reports_it(broker):  # noqa: F811
    """commit_async sends the ShareAcknowledge and returns with it on the wire; the next poll
    reads it first (results to the callback), and what it accepted is never delivered again
    while what it released comes back."""
    topic = _topic(broker.bootstrap, 4)
    calls: list = []
    explicit = {"share.acknowledgement.mode": "explicit"}
    with ShareConsumer(conf(broker.bootstrap, new_group(broker.bootstrap), **explicit), topic) as c:
        c.set_acknowledgement_commit_callback(lambda offsets, err: calls.append((offsets, err)))
        got = _poll_some(c, 4)
        assert [r.offset for r in got] == [0, 1, 2, 3]
        for r in got[:3]:
            c.acknowledge(r, AcknowledgeType.ACCEPT)
        c.acknowledge(got[3], AcknowledgeType.RELEASE)
        assert c.commit_async() is None
        assert calls == []  # not read yet: the answer waits for the next call
        again = _poll_some(c, 1)
        tp = TopicPartition(topic, 0)
        assert calls == [({tp: {0, 1, 2, 3}}, None)]
        assert [(r.offset, r.delivery_count) for r in again] == [(3, 2)]
        c.acknowledge(again[0])
        c.commit_async()
        assert c.commit_sync() == {}  # reads the commit_async first: nothing left to send
        assert calls[-1] == ({tp: {3}}, None)


@pytest.mark.parametrize(
    "config,match",
    [
        ({}, "needs a group.id"),
        ({"group.id": "g", "share.acknowledgement.mode": "auto"}, "implicit, explicit"),
        ({"group.id": "g", "enable.auto.commit": True}, "acknowledge records instead"),
        ({"group.id": "g", "group.instance.id": "i"}, "static membership"),
    ],
)
def test_configuration_errors(config, match):
    with pytest.raises(InvalidConfigError, match=match):
        ShareConsumer({"bootstrap.servers": "127.0.0.1:1", **config})


def test_acknowledge_fast_path_keeps_the_rules():
    """acknowledge()'s one-call path for ACCEPT of the next record in delivery order: every
    offset lands once in the pending acknowledgements, a second acknowledge of a record is
    refused, other types and other orders go through the checked path, and the run's last
    record ends the partition's delivered set (no poll is refused for records already
    settled)."""
    from kclient.consumer.share_common import ShareFace
    from kclient.core.share_fetch import FetchOutcome
    from kclient.protocol.records.v2_build import build_batch
    from kclient.protocol.schema import Struct

    tid = bytes(range(16))
    face = ShareFace()
    face._setup((), {"bootstrap.servers": "127.0.0.1:1", "group.id": "g"} | _EXPLICIT)
    state = face._state
    state.member.topic_ids["t"], state.member.topic_names[tid] = tid, "t"
    parts = [
        Struct(
            partition_index=p,
            error_code=0,
            acknowledge_error_code=0,
            records=build_batch([b"x"] * 4, base_offset=0),
            acquired_records=[Struct(first_offset=0, last_offset=3, delivery_count=1)],
        )
        for p in (0, 1)
    ]
    state.read_fetch(1, Struct(responses=[Struct(topic_id=tid, partitions=parts)]), FetchOutcome())
    got = state.take(100, in_order=True)  # as an explicit-mode poll takes them
    assert [(r.partition, r.offset) for r in got] == [(p, o) for p in (0, 1) for o in range(4)]
    face.acknowledge(got[0])
    face.acknowledge(got[1])
    with pytest.raises(ValueError, match="not delivered"):
        face.acknowledge(got[1])
    face.acknowledge(got[2], AcknowledgeType.REJECT)
    face.acknowledge(got[4])  # another partition
    face.acknowledge(got[3])  # back to the first: its last record
    with pytest.raises(ValueError, match="not delivered"):
        face.acknowledge(got[0])
    for r in got[5:]:
        face.acknowledge(r)
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    assert state.pending == {t0: {0: 1, 1: 1, 2: 3, 3: 1}, t1: {0: 1, 1: 1, 2: 1, 3: 1}}
    assert state.delivered == {} and state.unsettled() == 0
    face.settings.before_poll(state)  # explicit mode: every record settled


_EXPLICIT = {"share.acknowledgement.mode": "explicit"}
