"""The readers `kclient bench consumer` times: each reads ``n`` records of every partition of one
topic from offset 0 and touches each value, as a user's loop would.

* ``kclient``: SimpleConsumer's fetch loop (``multifetch`` over the partitions);
* ``kclient-consumer``: ``kclient.Consumer`` assign + ``poll`` loop;
* ``kclient-aio``: ``kclient.aio.AIOConsumer`` assign + ``getmany`` loop;
* ``kafka-python``: ``KafkaConsumer`` assign + seek + ``poll``;
* ``aiokafka``: ``AIOKafkaConsumer`` assign + ``getmany``;
* ``confluent`` / ``confluent-tuned``: ``Consumer.assign`` at offset 0, ``consume(10000)``;
* ``confluent-aio`` / ``confluent-aio-tuned``: ``confluent_kafka.aio.AIOConsumer``, the same.

A ``-tuned`` confluent-kafka reader raises ``queued.min.messages`` and sets
``fetch.queue.backoff.ms=1``: with librdkafka's defaults its prefetch queue pauses fetching for
up to a second each time it fills (``fetch.queue.backoff.ms``), which dominates short runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["READERS", "CONFLUENT_TUNED"]

#: the confluent-kafka consumer keys every benchmark's tuned peer runs with
CONFLUENT_TUNED = {"queued.min.messages": 1000000, "fetch.queue.backoff.ms": 1}

Reader = Callable[[str, int, str, int, int, int, dict[str, Any]], int]


def simple(
    host: str, port: int, topic: str, partitions: int, n: int, fetch_size: int, keys: dict[str, Any]
) -> int:
    """SimpleConsumer: one fetch of every partition at its offset per round trip."""
    from kclient.simple import FetchRequest, SimpleConsumer

    got = 0
    offsets = [0] * partitions
    with SimpleConsumer(
        host, port, so_timeout=30000, buffer_size=None, client_id="bench", security=keys
    ) as c:
        while got < n:
            sets = c.multifetch(
                [FetchRequest(topic, p, offsets[p], fetch_size) for p in range(partitions)]
            )
            for p, ms in enumerate(sets):
                for mo in ms:
                    _ = mo.message.value
                    got += 1
                offsets[p] = ms.next_offset
    return got


def consumer(
    host: str, port: int, topic: str, partitions: int, n: int, fetch_size: int, keys: dict[str, Any]
) -> int:
    """kclient.Consumer: assign, then poll until every record came."""
    from kclient import Consumer
    from kclient.structs import TopicPartition

    c = Consumer(
        bootstrap_servers=f"{host}:{port}",
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=fetch_size,
        **_underscored(keys),
    )
    c.assign([TopicPartition(topic, p) for p in range(partitions)])
    got = 0
    while got < n:
        for records in c.poll(1000, max_records=10000).values():
            for rec in records:
                _ = rec.value
            got += len(records)
    c.close()
    return got


def kclient_aio(
    host: str, port: int, topic: str, partitions: int, n: int, fetch_size: int, keys: dict[str, Any]
) -> int:
    """kclient.aio.AIOConsumer: assign, then getmany until every record came."""

    async def main() -> int:
        from kclient.aio import AIOConsumer
        from kclient.structs import TopicPartition

        async with AIOConsumer(
            bootstrap_servers=f"{host}:{port}",
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=fetch_size,
            **_underscored(keys),
        ) as c:
            c.assign([TopicPartition(topic, p) for p in range(partitions)])
            return await _getmany(c, n)

    return asyncio.run(main())


def kafka_python(
    host: str, port: int, topic: str, partitions: int, n: int, fetch_size: int, keys: dict[str, Any]
) -> int:
    """kafka-python's KafkaConsumer: assign, seek to 0, poll."""
    import kafka

    c = kafka.KafkaConsumer(
        bootstrap_servers=f"{host}:{port}",
        group_id=None,
        enable_auto_commit=False,
        max_partition_fetch_bytes=fetch_size,
        **keys,
    )
    tps = [kafka.TopicPartition(topic, p) for p in range(partitions)]
    c.assign(tps)
    for tp in tps:
        c.seek(tp, 0)
    got = 0
    while got < n:
        for records in c.poll(timeout_ms=1000, max_records=100000).values():
            for rec in records:
                _ = rec.value
                got += 1
    c.close()
    return got


def aiokafka(
    host: str, port: int, topic: str, partitions: int, n: int, fetch_size: int, keys: dict[str, Any]
) -> int:
    """aiokafka's AIOKafkaConsumer: assign, getmany."""

    async def main() -> int:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.structs import TopicPartition

        c = AIOKafkaConsumer(
            bootstrap_servers=f"{host}:{port}",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            group_id=None,
            max_partition_fetch_bytes=fetch_size,
            **keys,
        )
        await c.start()
        try:
            c.assign([TopicPartition(topic, p) for p in range(partitions)])
            return await _getmany(c, n)
        finally:
            await c.stop()

    return asyncio.run(main())


async def _getmany(c: Any, n: int) -> int:
    """Read ``n`` records with ``getmany`` (kclient.aio and aiokafka share the call)."""
    got = 0
    while got < n:
        for records in (await c.getmany(timeout_ms=1000, max_records=10000)).values():
            for rec in records:
                _ = rec.value
            got += len(records)
    return got


def _confluent_conf(
    host: str, port: int, fetch_size: int, tuned: bool, keys: dict[str, Any]
) -> dict[str, Any]:
    conf = {
        "bootstrap.servers": f"{host}:{port}",
        "group.id": "bench",
        "enable.auto.commit": False,
        "max.partition.fetch.bytes": fetch_size,
        **keys,
    }
    if tuned:
        conf.update(CONFLUENT_TUNED)
    return conf


def _confluent(tuned: bool) -> Reader:
    def read(
        host: str,
        port: int,
        topic: str,
        partitions: int,
        n: int,
        fetch_size: int,
        keys: dict[str, Any],
    ) -> int:
        import confluent_kafka

        c = confluent_kafka.Consumer(_confluent_conf(host, port, fetch_size, tuned, keys))
        c.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
        got = 0
        while got < n:
            for msg in c.consume(10000, 1.0):
                msg.value()
                got += 1
        c.close()
        return got

    return read


def _confluent_aio(tuned: bool) -> Reader:
    def read(
        host: str,
        port: int,
        topic: str,
        partitions: int,
        n: int,
        fetch_size: int,
        keys: dict[str, Any],
    ) -> int:
        async def main() -> int:
            import confluent_kafka
            from confluent_kafka.aio import AIOConsumer

            c = AIOConsumer(_confluent_conf(host, port, fetch_size, tuned, keys))
            await c.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
            got = 0
            try:
                while got < n:
                    for msg in await c.consume(10000, 1.0):
                        msg.value()
                        got += 1
            finally:
                await c.close()
            return got

        return asyncio.run(main())

    return read


def _underscored(keys: dict[str, Any]) -> dict[str, Any]:
    return {k.replace(".", "_"): v for k, v in keys.items()}


READERS: dict[str, Reader] = {
    "kclient": simple,
    "kclient-consumer": consumer,
    "kclient-aio": kclient_aio,
    "kafka-python": kafka_python,
    "aiokafka": aiokafka,
    "confluent": _confluent(False),
    "confluent-tuned": _confluent(True),
    "confluent-aio": _confluent_aio(False),
    "confluent-aio-tuned": _confluent_aio(True),
}
