"""A topic that the metadata does not show yet (being created) is waited for up to
topic.metadata.propagation.max.ms, beyond message.send.max.retries, by both producers: on
Kafka 4 an auto-created topic answers UNKNOWN_TOPIC_OR_PARTITION for a moment, and a first
send to it used to fail after 3 quick retries."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kclient.aio import AIOProducer
from kclient.broker import MiniBroker
from kclient.errors import UnknownTopicOrPartitionError
from kclient.producer import Producer, ProducerData

from .conftest import read_partition

QUICK_RETRIES = {"retry.backoff.ms": 50, "message.send.max.retries": 2}


@pytest.fixture
def strict_broker(tmp_path):
    """A mini-broker that creates no topic on demand."""
    with MiniBroker(log_dir=tmp_path / "b", config={"auto.create.topics.enable": "false"}) as b:
        yield b


@pytest.fixture
def create_later(strict_broker):
    """Creates a topic on the broker after a delay (cancelled if the test ends first)."""
    timers: list[threading.Timer] = []

    def start(topic: str, delay: float) -> None:
        timers.append(threading.Timer(delay, strict_broker.create_topic, (topic, 1)))
        timers[-1].start()

    yield start
    for t in timers:
        t.cancel()
        t.join()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_threaded_send_waits_for_a_topic_being_created(strict_broker, create_later, mode):
    create_later("late", 1.0)
    with Producer(
        {"metadata.broker.list": strict_broker.bootstrap, "producer.type": mode, **QUICK_RETRIES}
    ) as p:
        p.send(ProducerData("late", b"v"))
        p.flush()
    assert [bytes(r.value) for r in read_partition(strict_broker.bootstrap, "late", 0)] == [b"v"]


def test_aio_send_waits_for_a_topic_being_created(strict_broker, create_later):
    create_later("late-aio", 1.0)

    async def main() -> None:
        async with AIOProducer(
            bootstrap_servers=strict_broker.bootstrap, retry_backoff_ms=50, retries=2
        ) as p:
            md = await p.send("late-aio", b"v")
            assert md.topic == "late-aio" and md.offset == 0

    asyncio.run(main())


def test_aio_send_to_a_missing_topic_fails_after_the_wait(strict_broker):
    async def main() -> None:
        async with AIOProducer(
            bootstrap_servers=strict_broker.bootstrap,
            retry_backoff_ms=50,
            topic_metadata_propagation_max_ms=400,
        ) as p:
            started = time.monotonic()
            with pytest.raises(UnknownTopicOrPartitionError, match="nope"):
                await p.send("nope", b"v")
            assert time.monotonic() - started >= 0.4

    asyncio.run(main())
