"""create_ready_topic / wait_until_served on the mini-broker."""

from __future__ import annotations

import pytest

from kclient import Producer, ProducerData
from kclient.cluster import Cluster
from kclient.testing import create_ready_topic, wait_until_served


def test_created_topic_takes_a_produce_at_once(mini_broker):
    name = create_ready_topic(mini_broker.bootstrap, "ready", partitions=3)
    assert name == "ready"
    with Cluster(mini_broker.bootstrap) as c:
        assert c.partitions_for("ready") == [0, 1, 2]
    with Producer(
        {"metadata.broker.list": mini_broker.bootstrap, "message.send.max.retries": 0}
    ) as p:
        p.send(ProducerData("ready", b"v"))


def test_a_topic_never_served_times_out_naming_it(mini_broker):
    with pytest.raises(TimeoutError, match="'absent' not served after 0.3s"):
        wait_until_served(mini_broker.bootstrap, "absent", 1, timeout=0.3)
