"""Incremental fetch sessions (KIP-227) against Kafka 4.x: the core's session through both
drivers (tests/core/fetch_sessions.py's scenarios), and kclient.Consumer and AIOConsumer
fetching six partitions in a session Kafka made, their requests listing only what moved, the
session ended on close."""

from __future__ import annotations

import asyncio

import pytest

from kclient import Consumer, Producer, ProducerData
from kclient.aio import AIOConsumer
from kclient.connection import ConnectionSettings
from kclient.core.fetch import fetch_body
from kclient.core.fetch_session import FetchSession
from kclient.core.steps import Request
from kclient.errors import FetchSessionIdNotFoundError
from kclient.protocol.apis import FETCH
from kclient.structs import TopicPartition as TP
from tests.core.conftest import driver
from tests.core.fetch_sessions import PARTITIONS, SCENARIOS, SETTINGS
from tests.simple.test_fetcher import steady_reads

from .helpers import new_topic

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("kind", ["threaded", "asyncio"])
def test_session_scenario(kafka4, kind, scenario):
    drive = driver(kind, kafka4.bootstrap, ConnectionSettings(client_id="fetch-session"))
    scenario(drive, new_topic(kafka4, partitions=PARTITIONS))


def _produce(server, topic: str, n: int) -> None:
    with Producer({"metadata.broker.list": server.bootstrap, "producer.type": "sync"}) as p:
        p.send([ProducerData(topic, b"v%d" % i, partition=0) for i in range(n)])


def _session_gone(server, sid: int) -> bool:
    """Whether the broker has no fetch session ``sid`` (a request in it is refused)."""
    body = fetch_body([], SETTINGS)
    body.update(session_id=sid, session_epoch=1)
    resp = driver("threaded", server.bootstrap, ConnectionSettings())(lambda: _ask(body))
    return resp.error_code == FetchSessionIdNotFoundError.errno


def _ask(body):
    return (yield Request(FETCH, body, 12))


def _check_session(session: FetchSession) -> None:
    """A session Kafka made, whose incremental requests listed at most the one busy partition."""
    assert session.id != 0 and session.full_requests >= 1
    assert session.incremental_requests >= 2
    assert session.last_partitions <= 1


def test_consumer_fetches_in_a_session(kafka4):
    topic = new_topic(kafka4, partitions=PARTITIONS)
    _produce(kafka4, topic, 30)
    c = Consumer(
        {
            "bootstrap.servers": kafka4.bootstrap,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 50,
        }
    )
    try:
        c.assign([TP(topic, p) for p in range(PARTITIONS)])
        got: list = []
        while len(got) < 30:
            for records in c.poll(5000).values():
                got += records
        assert [r.value for r in got] == [b"v%d" % i for i in range(30)]
        for _ in range(3):  # idle polls: nothing moved
            assert c.poll(100) == {}
        (fetcher,) = c._fetchers.values()
        session = fetcher.session
        _check_session(session)
        sid = session.id
    finally:
        c.close()
    assert session.id == 0 and _session_gone(kafka4, sid)


def _aio_consumer(server, wait_ms: int) -> AIOConsumer:
    """An AIOConsumer from the earliest offset whose fetches park up to ``wait_ms``."""
    return AIOConsumer(
        bootstrap_servers=server.bootstrap,
        auto_offset_reset="earliest",
        **{"fetch.wait.max.ms": wait_ms},
    )


async def _read(c: AIOConsumer, topic: str, partitions: int, n: int) -> list:
    """Start ``c``, assign it ``partitions`` of ``topic`` and read ``n`` records."""
    await c.start()
    c.assign([TP(topic, p) for p in range(partitions)])
    got: list = []
    while len(got) < n:
        for recs in (await c.getmany(timeout_ms=5000)).values():
            got += recs
    return got


def test_aio_consumer_fetches_in_a_session(kafka4):
    topic = new_topic(kafka4, partitions=PARTITIONS)
    _produce(kafka4, topic, 30)

    async def main():
        c = _aio_consumer(kafka4, 50)
        try:
            got = await _read(c, topic, PARTITIONS, 30)
            assert sorted(r.value for r in got) == sorted(b"v%d" % i for i in range(30))
            assert await c.getmany(timeout_ms=300) == {}
            (session,) = c._fetcher.sessions.values()
            _check_session(session)
            return session, session.id
        finally:
            await c.close()

    session, sid = asyncio.run(main())
    assert session.id == 0 and _session_gone(kafka4, sid)


def test_aio_consumer_close_does_not_wait_behind_a_parked_fetch(kafka4):
    """Kafka answers one request of a connection at a time: a session close queued behind a
    fetch parked for fetch.wait.max.ms (10 s here) would wait for it; it goes on a connection
    of its own, so close() is quick and the session still ends."""
    topic = new_topic(kafka4, partitions=1)
    _produce(kafka4, topic, 3)

    async def main():
        c = _aio_consumer(kafka4, 10000)
        try:
            assert len(await _read(c, topic, 1, 3)) == 3
            (session,) = c._fetcher.sessions.values()
            sid = session.id
            # the next fetch is on the wire and parked: nothing more comes
            assert await c.getmany(timeout_ms=200) == {}
            assert any(not f.done() for f in c._fetcher._inflight.values())
        finally:
            await asyncio.wait_for(c.close(), 5)  # well under the 10 s the fetch is parked
        return sid

    sid = asyncio.run(main())
    assert sid != 0 and _session_gone(kafka4, sid)


def test_a_caught_up_reader_sends_its_usual_request_from_a_prepared_frame(kafka4):
    """tests/simple/test_fetcher.py's steady reads on Kafka: the stamped frames (epoch, offsets,
    max wait) are accepted as the session's incremental requests."""
    topic = new_topic(kafka4, partitions=2)
    host, port = kafka4.bootstrap.rsplit(":", 1)
    with Producer({"metadata.broker.list": kafka4.bootstrap, "producer.type": "sync"}) as p:
        steady_reads(
            host, int(port), topic, lambda part, v: p.send(ProducerData(topic, v, partition=part))
        )
