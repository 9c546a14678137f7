"""Fixtures for the SimpleConsumer tests: one broker of each kind, and a raw producer.

``target`` runs a test against the mini-broker and against tansu (a broker kclient did not
write).  Records are produced with raw Produce requests built by ``kclient.protocol.records`` so
each test controls the exact batches (format, codec, sizes) the broker stores.
"""

import itertools
import uuid

import pytest

from kclient.cluster import Cluster
from kclient.connection import BrokerConnection
from kclient.protocol.apis import PRODUCE
from kclient.protocol.records import build_batch, build_message_set

_names = itertools.count()


class Target:
    """A running broker of one kind, with what the tests need to set topics up."""

    def __init__(self, kind, bootstrap, broker=None):
        self.kind = kind
        self.bootstrap = bootstrap
        self.host, port = bootstrap.rsplit(":", 1)
        self.port = int(port)
        self.broker = broker  # the MiniBroker (None for tansu)

    def topic(self, partitions=1, config=None, prefix="t"):
        """Create a fresh topic; returns its name."""
        name = f"{prefix}-{next(_names)}-{uuid.uuid4().hex[:6]}"
        if self.broker is not None:
            self.broker.create_topic(name, partitions, config=config)
        else:
            with Cluster(self.bootstrap) as cluster:
                cluster.refresh([])
                cluster.create_topic(name, partitions, config=config)
        return name

    def produce(self, topic, partition, records, version=None):
        """Send one Produce with ``records`` (bytes); returns the base offset."""
        conn = BrokerConnection(self.host, self.port)
        with conn:
            body = {
                "acks": -1,
                "timeout_ms": 10000,
                "topic_data": [
                    {"name": topic, "partition_data": [{"index": partition, "records": records}]}
                ],
            }
            resp = conn.request(PRODUCE, body, version)
        part = resp.responses[0].partition_responses[0]
        assert part.error_code == 0, part
        return part.base_offset

    def produce_values(self, topic, partition, values, keys=None, batch=100, **kw):
        """Produce ``values`` as v2 batches of ``batch`` records; returns the offsets."""
        offsets = []
        for i in range(0, len(values), batch):
            vs = values[i : i + batch]
            ks = keys[i : i + batch] if keys is not None else None
            base = self.produce(topic, partition, build_batch(vs, ks, **kw))
            offsets.extend(range(base, base + len(vs)))
        return offsets

    def produce_legacy(self, topic, partition, values, magic, codec=0, keys=None):
        """Produce ``values`` as one v0/v1 message set (Produce v2, as a 0.10 client)."""
        return self.produce(
            topic, partition, build_message_set(values, keys, magic=magic, codec=codec), version=2
        )


@pytest.fixture(params=["mini", "tansu"])
def target(request, tmp_path):
    """The mini-broker or tansu, each fresh per test (tansu: one per session, fresh topics)."""
    if request.param == "mini":
        from kclient.broker import MiniBroker

        with MiniBroker(log_dir=tmp_path / "mini") as broker:
            yield Target("mini", broker.bootstrap, broker)
    else:
        server = request.getfixturevalue("tansu")
        yield Target("tansu", server.bootstrap)


@pytest.fixture
def mini(mini_broker):
    return Target("mini", mini_broker.bootstrap, mini_broker)


@pytest.fixture
def tansu_target(tansu):
    return Target("tansu", tansu.bootstrap)
