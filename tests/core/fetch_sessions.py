"""Fetch session (KIP-227) scenarios, shared by the runs against Kafka 4.x
(integration/test_fetch_sessions_kafka.py) and against the mini-broker (tests/core): each takes
``drive`` (a conversation factory -> its result, on a fresh connection, by one driver) and a
topic of PARTITIONS partitions, empty."""

from __future__ import annotations

from kclient.core.fetch import FetchSettings, PartitionFetch, fetch, fetch_body
from kclient.core.fetch_session import FetchSession
from kclient.core.steps import Request, Sleep
from kclient.errors import (
    FetchSessionIdNotFoundError,
    LeaderNotAvailableError,
    NotLeaderForPartitionError,
    UnknownTopicOrPartitionError,
)
from kclient.protocol.apis import FETCH, PRODUCE

from .test_fetch import produce_body

#: Produce errors of a partition whose leader is not ready yet
RETRIABLE = {
    e.errno
    for e in (LeaderNotAvailableError, NotLeaderForPartitionError, UnknownTopicOrPartitionError)
}

PARTITIONS = 6
SETTINGS = FetchSettings(max_wait_ms=0)


def _values(p: int, n: int, start: int = 0) -> list[bytes]:
    return [b"p%d-%03d" % (p, i) for i in range(start, start + n)]


def _fetch_all(drive, session, topic, offsets, settings=SETTINGS):
    asked = [PartitionFetch(topic, p, o, 4096) for p, o in offsets.items()]
    return drive(lambda: fetch(asked, settings, session=session))


def _produce(drive, topic, batches):
    """Write each partition's values as one batch; a leader not ready yet (a topic Kafka has
    just created) is asked again, for up to 20 s."""

    def steps():
        for p, values in batches:
            for _ in range(200):
                resp = yield Request(PRODUCE, produce_body(topic, p, values))
                code = resp.responses[0].partition_responses[0].error_code
                if code not in RETRIABLE:
                    break
                yield Sleep(0.1)
            assert code == 0, (topic, p, code)

    drive(steps)


def incremental_requests_list_only_changed_partitions(drive, topic):
    """Full, then incremental: only moved partitions listed, the rest answered from the
    session; one partition's new data comes back although the request did not list it."""
    _produce(drive, topic, [(p, _values(p, 3)) for p in range(PARTITIONS)])
    session = FetchSession()
    sets = _fetch_all(drive, session, topic, dict.fromkeys(range(PARTITIONS), 0))
    assert session.id != 0 and session.epoch == 1 and session.full_requests == 1
    assert [[m.value for m in s] for s in sets] == [_values(p, 3) for p in range(PARTITIONS)]
    # every partition moved: all listed, nothing new to read
    sets = _fetch_all(drive, session, topic, dict.fromkeys(range(PARTITIONS), 3))
    assert session.last_partitions == PARTITIONS and session.epoch == 2
    assert [(len(list(s)), s.high_watermark, s.error) for s in sets] == [(0, 3, None)] * PARTITIONS
    # nothing moved: an empty request; the answer leaves the partitions out, their offsets known
    sets = _fetch_all(drive, session, topic, dict.fromkeys(range(PARTITIONS), 3))
    assert session.last_partitions == 0 and session.incremental_requests == 2
    assert [(s.high_watermark, s.log_start_offset) for s in sets] == [(3, 0)] * PARTITIONS
    # new data on partition 2: the broker reads it at the offset the session holds
    _produce(drive, topic, [(2, _values(2, 2, 3))])
    sets = _fetch_all(drive, session, topic, dict.fromkeys(range(PARTITIONS), 3))
    assert session.last_partitions == 0
    assert [m.value for m in sets[2]] == _values(2, 2, 3) and sets[2].high_watermark == 5
    assert [len(list(s)) for i, s in enumerate(sets) if i != 2] == [0] * (PARTITIONS - 1)
    # half the partitions forgotten, partition 2 moved: one listed
    offsets = {0: 3, 1: 3, 2: 5}
    sets = _fetch_all(drive, session, topic, offsets)
    assert session.last_partitions == 1 and len(session.partitions) == 3
    assert [(s.partition, s.high_watermark) for s in sets] == [(0, 3), (1, 3), (2, 5)]
    assert session.full_requests == 1 and session.id != 0


def session_errors_ask_again_in_full(drive, topic):
    """INVALID_FETCH_SESSION_EPOCH and FETCH_SESSION_ID_NOT_FOUND: the data comes anyway,
    from a full request that opens a new session."""
    _produce(drive, topic, [(0, _values(0, 4))])
    session = FetchSession()
    _fetch_all(drive, session, topic, {0: 0, 1: 0})
    first = session.id
    session.epoch = 77  # not the epoch the broker expects
    sets = _fetch_all(drive, session, topic, {0: 1, 1: 0})
    assert [m.value for m in sets[0]] == _values(0, 4)[1:]
    assert session.full_requests == 2 and session.id not in (0, first) and session.epoch == 1
    session.id, session.epoch = 0x7FFF0001, 3  # a session the broker never made
    sets = _fetch_all(drive, session, topic, {0: 2, 1: 0})
    assert [m.value for m in sets[0]] == _values(0, 4)[2:]
    assert session.full_requests == 3 and session.id not in (0, 0x7FFF0001)


def closing_ends_the_session(drive, topic):
    """The close request (epoch -1) ends the broker's session: its id is unknown after it."""
    session = FetchSession()
    _fetch_all(drive, session, topic, {0: 0})
    sid = session.id
    assert sid != 0

    def close_then_reuse():
        resp = yield Request(FETCH, session.close_body(SETTINGS))
        assert (resp.error_code, resp.session_id) == (0, 0)
        body = fetch_body([], SETTINGS)
        body.update(session_id=sid, session_epoch=1)
        return (yield Request(FETCH, body, 12))

    resp = drive(close_then_reuse)
    assert session.id == 0 and resp.error_code == FetchSessionIdNotFoundError.errno


SCENARIOS = [
    incremental_requests_list_only_changed_partitions,
    session_errors_ask_again_in_full,
    closing_ends_the_session,
]
