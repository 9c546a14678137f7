"""``kclient demo``: an embedded mini-broker, a producer and two consumers, narrated.

It starts a MiniBroker in a temporary directory, sends keyed messages with ``produce()`` (a
future each) and a burst asynchronously, reads them back with ``kclient.Consumer``'s poll loop,
the SimpleConsumer and a consumer group's stream, and shows the segment files the broker wrote.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter

from kclient.broker import MiniBroker
from kclient.consumer import Consumer
from kclient.consumer import create as create_connector
from kclient.errors import ConsumerTimeoutError
from kclient.producer import DeliveryReport, Producer, ProducerData
from kclient.simple import FetchRequest, OffsetRequest, SimpleConsumer

TOPIC = "demo-events"


def _say(text: str) -> None:
    print(text, flush=True)


def _produce(bootstrap: str, count: int) -> None:
    with Producer(bootstrap_servers=bootstrap, value_serializer=str.encode) as p:
        for user in ("alice", "bob", "carol"):
            md = p.produce(TOPIC, f"{user} signed up", key=user).result(timeout=10)
            _say(f"  produce key={user!r:8} -> partition {md.partition} offset {md.offset}")
    reports: list[DeliveryReport] = []
    start = time.perf_counter()
    with Producer(
        {"metadata.broker.list": bootstrap, "producer.type": "async", "compression.codec": "lz4"},
        on_report=reports.append,
    ) as p:
        p.send([ProducerData(TOPIC, b"event %d" % i, key=b"k%d" % (i % 50)) for i in range(count)])
        p.flush()
    took = time.perf_counter() - start
    acked = sum(len(r) for r in reports if r.error is None)
    failed = sum(len(r) for r in reports if r.error is not None)
    _say(
        f"  async {count} messages (lz4) in {took * 1000:.0f} ms: {acked} acknowledged, "
        f"{failed} failed, in {len(reports)} delivery reports"
    )


def _poll_read(bootstrap: str, expected: int) -> int:
    """kclient.Consumer's poll loop, as the README's first example reads."""
    total = 0
    with Consumer(
        TOPIC, bootstrap_servers=bootstrap, group_id="demo-poll", auto_offset_reset="earliest"
    ) as c:
        deadline = time.monotonic() + 30
        while total < expected and time.monotonic() < deadline:
            total += sum(len(records) for records in c.poll(timeout=1.0).values())
    return total


def _simple_read(host: str, port: int, partitions: int) -> int:
    total = 0
    with SimpleConsumer(host, port, so_timeout=10000, buffer_size=1 << 20, client_id="demo") as c:
        for p in range(partitions):
            (latest,) = c.get_offsets_before(TOPIC, p, OffsetRequest.LATEST_TIME, 1)
            first = None
            offset = 0
            while offset < latest:
                batch = list(c.fetch(FetchRequest(TOPIC, p, offset=offset, max_size=1 << 20)))
                if not batch:
                    break
                first = first or batch[0]
                offset = batch[-1].next_offset
                total += len(batch)
            shown = f" first: offset {first.offset} {first.message.value!r}" if first else ""
            _say(f"  partition {p}: log end offset {latest};{shown}")
    return total


def _group_read(bootstrap: str, expected: int) -> Counter:
    config = {
        "metadata.broker.list": bootstrap,
        "group.id": "demo-group",
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 2000,
    }
    seen: Counter = Counter()
    with create_connector(config) as connector:
        (stream,) = connector.create_message_streams({TOPIC: 1})[TOPIC]
        try:
            for m in stream:
                seen[m.partition] += 1
                if sum(seen.values()) >= expected:
                    break
        except ConsumerTimeoutError:
            pass
        connector.commit_offsets()
    return seen


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns 0 when every message produced was read back."""
    parser = argparse.ArgumentParser(
        prog="kclient demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  kclient demo --messages 1000",
    )
    parser.add_argument("--messages", type=int, default=20000, help="async burst size")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kclient-demo-") as log_dir:
        # one group member: no need to wait Kafka's 3 s for others before the first rebalance
        with MiniBroker(
            log_dir=log_dir, config={"group.initial.rebalance.delay.ms": "0"}
        ) as broker:
            _say(f"mini-broker listening on {broker.bootstrap}, log dir {log_dir}")
            broker.create_topic(TOPIC, partitions=3)
            _say(f"created topic {TOPIC!r} with 3 partitions\nproducing:")
            _produce(broker.bootstrap, args.messages)
            expected = args.messages + 3
            _say("reading back with kclient.Consumer (poll loop):")
            polled = _poll_read(broker.bootstrap, expected)
            _say(f"  {polled} of {expected} messages polled")
            host, port = broker.bootstrap.rsplit(":", 1)
            _say("reading back with SimpleConsumer:")
            read = _simple_read(host, int(port), 3)
            _say(f"  {read} of {expected} messages read")
            _say("reading back with a consumer group (broker-coordinated KafkaStream):")
            seen = _group_read(broker.bootstrap, expected)
            _say(f"  {sum(seen.values())} messages, per partition {dict(sorted(seen.items()))}")
            _say("segment files on disk:")
            for p in range(3):
                d = os.path.join(log_dir, f"{TOPIC}-{p}")
                for name in sorted(os.listdir(d)):
                    if name.endswith((".log", ".index")):
                        size = os.path.getsize(os.path.join(d, name))
                        _say(f"  {TOPIC}-{p}/{name}  {size} bytes")
    ok = polled == read == expected and sum(seen.values()) == expected
    _say("demo " + ("succeeded: every message was read back" if ok else "FAILED: messages missing"))
    return 0 if ok else 1
