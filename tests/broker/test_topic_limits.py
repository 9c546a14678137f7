"""CreateTopics and CreatePartitions within Kafka 4's per-request limits (checked against Kafka
4.4.0: more than 10,000 partitions created or added per request, or more than 10,000 metadata
records, fail every topic with POLICY_VIOLATION and these messages), and topic creation all or
nothing when the broker runs out of file descriptors midway."""

import pytest

from kclient.broker import MiniBroker
from kclient.protocol.apis import CREATE_PARTITIONS, CREATE_TOPICS, METADATA
from kclient.protocol.errors import PolicyViolationError

from .limits_support import BrokerChild

EXCESSIVE = "Excessively large number of partitions per request."
TOO_LARGE = "Unable to perform excessively large batch operation."
ADDITIONAL = "Excessively large number of additional partitions per request."


def create(client, topics, validate_only=True):
    """CreateTopics v5 for (name, num_partitions[, assignments]) entries: [(code, message)]."""
    body = {
        "topics": [
            {
                "name": t[0],
                "num_partitions": t[1],
                "replication_factor": -1,
                "assignments": t[2] if len(t) > 2 else [],
                "configs": [],
            }
            for t in topics
        ],
        "timeout_ms": 30000,
        "validate_only": validate_only,
    }
    return [(r.error_code, r.error_message) for r in client.request(CREATE_TOPICS, 5, body).topics]


def test_create_topics_partition_limits_as_kafka(mini_broker, raw_client):
    client = raw_client(mini_broker.bootstrap)
    assert create(client, [("a", 10001)]) == [(44, EXCESSIVE)]
    assert create(client, [("a", 2**31 - 1)], validate_only=False) == [(44, EXCESSIVE)]
    assert create(client, [("a", 4000), ("b", 4000), ("c", 4000)]) == [(44, EXCESSIVE)] * 3
    assert create(client, [("a", 5000), ("b", 5000)]) == [(44, TOO_LARGE)] * 2
    many = [{"partition_index": i, "broker_ids": [0]} for i in range(10001)]
    assert create(client, [("a", -1, many)]) == [(44, EXCESSIVE)]
    assert create(client, [("a", 9999)]) == [(0, None)]
    assert create(client, [("a", 0)])[0][0] == 37
    assert create(client, [("a", -2)])[0][0] == 37
    assert create(client, [("small", 3)], validate_only=False) == [(0, None)]
    assert mini_broker.cluster.topic_names() == ["small"]
    with pytest.raises(PolicyViolationError):
        mini_broker.create_topic("huge", 10001)


def grow(client, topics, validate_only=True):
    """CreatePartitions v3 for (name, new count) entries: [(code, message)]."""
    body = {
        "topics": [{"name": n, "count": k, "assignments": None} for n, k in topics],
        "timeout_ms": 30000,
        "validate_only": validate_only,
    }
    return [
        (r.error_code, r.error_message) for r in client.request(CREATE_PARTITIONS, 3, body).results
    ]


def test_create_partitions_limit_as_kafka(mini_broker, raw_client):
    """Kafka 4.4.0 answers exactly these (a, b, c start with one partition each)."""
    client = raw_client(mini_broker.bootstrap)
    for name in "abc":
        mini_broker.create_topic(name, 1)
    assert grow(client, [("a", 2**31 - 1)], validate_only=False) == [(44, ADDITIONAL)]
    assert grow(client, [("a", 4001), ("b", 4001), ("c", 4001)]) == [(44, ADDITIONAL)] * 3
    assert grow(client, [("a", 5001), ("b", 5001)]) == [(0, None), (0, None)]
    assert grow(client, [("a", 10001)]) == [(0, None)]
    assert grow(client, [("a", 10002)]) == [(44, ADDITIONAL)]
    assert grow(client, [("a", 3)], validate_only=False) == [(0, None)]
    assert len(mini_broker.cluster.partitions("a")) == 3
    with pytest.raises(PolicyViolationError):
        mini_broker.cluster.create_partitions("b", 10002)
    assert len(mini_broker.cluster.partitions("b")) == 1


def _topics(client):
    return sorted(t.name for t in client.request(METADATA, 1, {"topics": None}).topics)


def test_topic_creation_is_all_or_nothing_when_descriptors_run_out(tmp_path, raw_client):
    broker = BrokerChild(tmp_path, nofile=160).start()
    try:
        client = raw_client(broker.bootstrap)
        [(code, message)] = create(client, [("big", 400)], validate_only=False)
        assert code == 56, (code, message)  # KAFKA_STORAGE_ERROR
        assert "Too many open files" in message and "nothing of the topic was kept" in message
        data = broker.log_dir
        assert not [p.name for p in data.iterdir() if p.name.startswith("big-")]
        assert not (data / ".topics" / "big.json").exists()
        assert _topics(client) == []
        assert create(client, [("small", 4)], validate_only=False) == [(0, None)]
        assert broker.stop() == 0
        broker.start()  # a restart loads what is left
        client = raw_client(broker.bootstrap)
        assert _topics(client) == ["small"]
        assert create(client, [("small2", 2)], validate_only=False) == [(0, None)]
    finally:
        broker.kill()


def test_the_python_api_rolls_back_too(tmp_path, monkeypatch):
    with MiniBroker(log_dir=tmp_path / "data") as broker:
        real = broker.log_manager.create_log

        def failing(topic, partition, config=None):
            if partition == 3:
                raise OSError(28, "No space left on device")
            return real(topic, partition, config)

        monkeypatch.setattr(broker.log_manager, "create_log", failing)
        with pytest.raises(Exception, match="No space left"):
            broker.create_topic("t", 6)
        assert broker.cluster.topic_names() == []
        assert not list((tmp_path / "data").glob("t-*"))
