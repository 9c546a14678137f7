"""The asyncio clients against a malicious broker (tests/hostile.py): every call ends within
its deadline with a kclient error, and cancelling a call stuck on the broker, then closing the
client, leaves no task pending (issue 25; the threaded clients: tests/test_hostile_broker.py).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from kclient import AIOConsumer, AIOProducer
from kclient.aio.cluster import AIOCluster
from kclient.connection import ConnectionSettings
from kclient.errors import KafkaError
from kclient.protocol.apis import FETCH, METADATA, PRODUCE
from kclient.structs import TopicPartition

from ..test_hostile_broker import BAD, TIMEOUT_MS, _kclient_error, hostile  # noqa: F401
from ..waiting import LOAD_SLACK, async_wait_until

#: delivery.timeout.ms: as low as the config allows (linger.ms + request.timeout.ms) and more
DELIVERY_MS = TIMEOUT_MS + 500


def _no_task_left(current: asyncio.Task | None) -> None:
    """Nothing of the client is still scheduled: only the test's own task is left."""
    left = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    assert not left, f"tasks left pending: {left}"


def _producer(proxy) -> AIOProducer:
    return AIOProducer(
        bootstrap_servers=proxy.bootstrap,
        request_timeout_ms=TIMEOUT_MS,
        message_send_max_retries=1,
        retry_backoff_ms=50,
        delivery_timeout_ms=DELIVERY_MS,
        linger_ms=0,
    )


@pytest.mark.parametrize("mode", BAD)
def test_aio_producer_send_ends_within_its_deadline(hostile, mode):  # noqa: F811
    async def main() -> tuple[BaseException, float]:
        p = _producer(hostile)
        await p.start()
        try:
            hostile.arm(mode, {PRODUCE.key})
            start = time.monotonic()
            with pytest.raises(KafkaError) as info:
                await p.send("t", b"x")
            took = time.monotonic() - start
            hostile.arm("pass")
        finally:
            await p.close(timeout=5)
        _no_task_left(asyncio.current_task())
        return info.value, took

    exc, took = asyncio.run(main())
    _kclient_error(exc, mode)
    # delivery.timeout.ms bounds the send whatever the retries
    assert took < DELIVERY_MS / 1000 + LOAD_SLACK, took


@pytest.mark.parametrize("mode", ["trickle", "long", "silent"])
def test_aio_producer_cancelled_send_leaves_nothing_pending(hostile, mode):  # noqa: F811
    async def main() -> float:
        p = AIOProducer(bootstrap_servers=hostile.bootstrap, request_timeout_ms=30_000, linger_ms=0)
        await p.start()
        hostile.arm(mode, {PRODUCE.key})
        send = asyncio.create_task(p.send("t", b"stuck"))
        await async_wait_until(
            lambda: hostile.mangled >= 1 or send.done(), what="the Produce answer held back"
        )
        assert not send.done()
        send.cancel()
        with pytest.raises(asyncio.CancelledError):
            await send
        start = time.monotonic()
        await p.close(timeout=0.5)
        took = time.monotonic() - start
        hostile.arm("pass")
        _no_task_left(asyncio.current_task())
        return took

    took = asyncio.run(main())
    assert took < 0.5 + LOAD_SLACK, took  # close(timeout=0.5), not the 30 s request timeout


@pytest.mark.parametrize("mode", BAD)
def test_aio_cluster_metadata_ends_within_its_deadline(hostile, mode):  # noqa: F811
    async def main() -> tuple[BaseException, float]:
        cluster = AIOCluster(
            [hostile.bootstrap], ConnectionSettings().replace(request_timeout_ms=TIMEOUT_MS)
        )
        hostile.arm(mode, {METADATA.key})
        try:
            start = time.monotonic()
            with pytest.raises(KafkaError) as info:
                await cluster.refresh(["t"])
            took = time.monotonic() - start
        finally:
            hostile.arm("pass")
            await cluster.close()
        _no_task_left(asyncio.current_task())
        return info.value, took

    exc, took = asyncio.run(main())
    _kclient_error(exc, mode)
    assert took < TIMEOUT_MS / 1000 + LOAD_SLACK, took


def _consumer(proxy) -> AIOConsumer:
    return AIOConsumer(
        bootstrap_servers=proxy.bootstrap,
        socket_timeout_ms=TIMEOUT_MS,
        fetch_wait_max_ms=100,
        retry_backoff_ms=50,
        auto_offset_reset="earliest",
    )


async def _read_the_first_twenty(c: AIOConsumer) -> None:
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 20 and time.monotonic() < deadline:
        for records in (await c.getmany(timeout_ms=500)).values():
            got += [r.value for r in records]
    assert got == [f"m{i}".encode() for i in range(20)]


#: late, lying about its length, a bogus frame, broken, no answer (the suite's time budget:
#: wrong_corr is the threaded consumers', tests/test_hostile_broker.py). "short" and "garbage"
#: hung close() until the lost cancellation of tests/aio/test_lost_cancel.py was fixed
@pytest.mark.parametrize("mode", ["trickle", "long", "short", "garbage", "silent"])
def test_aio_consumer_getmany_ends_within_its_timeout(hostile, mode):  # noqa: F811
    """Every Fetch answer bad and five more records waiting: getmany returns within its
    timeout, delivering nothing bogus; close ends within its bound."""

    async def main() -> tuple[float, float, list]:
        c = _consumer(hostile)
        c.assign([TopicPartition("t", 0)])
        await c.start()
        try:
            await _read_the_first_twenty(c)
            hostile.arm(mode, {FETCH.key})
            async with AIOProducer(bootstrap_servers=hostile.bootstrap) as p:
                for _ in range(5):
                    await p.send("t", b"unreachable")
            await async_wait_until(lambda: hostile.mangled >= 1, what="a Fetch answer mangled")
            start = time.monotonic()
            delivered = []
            try:
                for records in (await c.getmany(timeout_ms=1000)).values():
                    delivered += records
            except KafkaError:
                pass  # a kclient error is a fine ending too
            took = time.monotonic() - start
        finally:
            start = time.monotonic()
            await c.close()
            closing = time.monotonic() - start
            hostile.arm("pass")
        _no_task_left(asyncio.current_task())
        return took, closing, delivered

    took, closing, delivered = asyncio.run(main())
    assert took < 1 + LOAD_SLACK, took
    assert closing < 2 * TIMEOUT_MS / 1000 + LOAD_SLACK, closing
    assert not delivered, delivered


@pytest.mark.parametrize("mode", ["trickle", "long", "silent"])
def test_aio_consumer_cancelled_getone_leaves_nothing_pending(hostile, mode):  # noqa: F811
    async def main() -> None:
        c = _consumer(hostile)
        c.assign([TopicPartition("t", 0)])
        await c.start()
        try:
            await _read_the_first_twenty(c)
            hostile.arm(mode, {FETCH.key})
            waiting = asyncio.create_task(c.getone())
            await async_wait_until(lambda: hostile.mangled >= 1, what="a Fetch answer held")
            assert not waiting.done()
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
        finally:
            await c.close()
            hostile.arm("pass")
        _no_task_left(asyncio.current_task())

    asyncio.run(main())


@pytest.mark.parametrize("mode", ["garbage", "silent"])  # broken, none
def test_aio_consumer_recovers_once_the_broker_behaves(hostile, mode):  # noqa: F811
    """A Fetch answer mangled (or never sent) costs at most a request timeout: the records
    produced after the broker behaves again are delivered."""

    async def main() -> list[bytes]:
        c = _consumer(hostile)
        c.assign([TopicPartition("t", 0)])
        await c.start()
        try:
            await _read_the_first_twenty(c)
            hostile.arm(mode, {FETCH.key})
            async with AIOProducer(bootstrap_servers=hostile.bootstrap) as p:
                await p.send("t", b"late-0")
                await async_wait_until(lambda: hostile.mangled >= 1, what="a Fetch mangled")
                hostile.arm("pass")
                await p.send("t", b"late-1")
            got: list[bytes] = []
            deadline = time.monotonic() + 3 * TIMEOUT_MS / 1000 + LOAD_SLACK
            while len(got) < 2 and time.monotonic() < deadline:
                for records in (await c.getmany(timeout_ms=200)).values():
                    got += [r.value for r in records]
            return got
        finally:
            await c.close()

    assert asyncio.run(main()) == [b"late-0", b"late-1"]
