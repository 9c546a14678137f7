"""Option validation as Spark's Kafka connector does it, offset JSON, range splitting."""

import pytest

from kclient.errors import InvalidConfigError
from kclient.spark.offsets import (
    OffsetRange,
    from_json,
    from_json_dict,
    rate_limit,
    split_ranges,
    to_json,
    to_json_dict,
)
from kclient.spark.options import (
    OffsetSpec,
    parse_duration_ms,
    parse_read_options,
    parse_write_options,
)

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def read(streaming=False, **opts):
    return parse_read_options({**BOOT, **opts}, streaming=streaming)


def test_exactly_one_subscription_option():
    with pytest.raises(ValueError, match="One of the following options must be specified"):
        read()
    with pytest.raises(ValueError, match="Only one of the following options can be specified"):
        read(subscribe="a", subscribePattern="a.*")
    with pytest.raises(ValueError, match="No topics to subscribe to"):
        read(subscribe=" , ")
    with pytest.raises(ValueError, match="No topicpartitions to assign"):
        read(assign="t:0")
    with pytest.raises(ValueError, match="Pattern to subscribe is empty"):
        read(subscribePattern=" ")
    assert read(subscribe="a, b").subscription.topics == ("a", "b")
    sub = read(assign='{"t": [1, 0], "u": [2]}').subscription
    assert sub.assigned == (("t", 0), ("t", 1), ("u", 2)) and sub.matches("u")
    pat = read(SUBSCRIBEPATTERN="ev-.*").subscription  # option names are case-insensitive
    assert pat.matches("ev-1") and not pat.matches("xev-1")


def test_bootstrap_is_required_and_metadata_broker_list_is_accepted():
    with pytest.raises(ValueError, match="'kafka.bootstrap.servers' must be specified"):
        parse_read_options({"subscribe": "t"}, streaming=False)
    opts = parse_read_options({"subscribe": "t", "kafka.metadata.broker.list": "h:1"}, False)
    assert opts.bootstrap == "h:1"


@pytest.mark.parametrize(
    "key,advice",
    [
        ("kafka.auto.offset.reset", "Instead set the source option 'startingoffsets'"),
        ("kafka.enable.auto.commit", "'enable.auto.commit' is not supported"),
        ("kafka.key.deserializer", "keys are deserialized as byte arrays"),
        (
            "kafka.value.deserializer",
            "Use DataFrame operations to explicitly deserialize the values",
        ),
        ("kafka.interceptor.classes", "'interceptor.classes' is not supported"),
    ],
)
def test_rejected_consumer_options_carry_sparks_advice(key, advice):
    with pytest.raises(ValueError, match=advice):
        read(subscribe="t", **{key: "x"})


def test_rejected_producer_options():
    with pytest.raises(ValueError, match="keys are serialized with ByteArraySerializer"):
        parse_write_options({**BOOT, "kafka.key.serializer": "x"})
    with pytest.raises(InvalidConfigError, match="queue.tme"):
        parse_write_options({**BOOT, "kafka.queue.tme": "5"})


def test_exactly_once_options():
    assert parse_write_options({**BOOT, "topic": "t"}).exactly_once is False
    opts = parse_write_options(
        {**BOOT, "topic": "t", "exactlyOnce": "TRUE", "transactionalIdPrefix": "sink-a"}
    )
    assert (opts.exactly_once, opts.txn_prefix, opts.state_topic) == (True, "sink-a", "t")
    with pytest.raises(ValueError, match="needs the topic option or transactionStateTopic"):
        parse_write_options({**BOOT, "exactlyOnce": "true"})
    opts = parse_write_options({**BOOT, "exactlyOnce": "true", "transactionStateTopic": "s"})
    assert (opts.topic, opts.state_topic) == (None, "s")
    with pytest.raises(ValueError, match="'transactional.id' is not supported"):
        parse_write_options({**BOOT, "topic": "t", "kafka.transactional.id": "x"})
    with pytest.raises(ValueError, match="must be true or false"):
        parse_write_options({**BOOT, "topic": "t", "exactlyOnce": "yes"})
    timeout = parse_write_options(
        {**BOOT, "topic": "t", "exactlyOnce": "true", "kafka.transaction.timeout.ms": "900000"}
    )
    assert timeout.producer_config()["transaction.timeout.ms"] == "900000"


def test_starting_and_ending_offsets():
    opts = read(subscribe="t")
    assert opts.starting == OffsetSpec("earliest") and opts.ending == OffsetSpec("latest")
    assert read(streaming=True, subscribe="t").starting == OffsetSpec("latest")
    spec = read(subscribe="t", startingOffsets='{"t": {"0": 5, "1": -2}}').starting
    assert spec.as_dict() == {("t", 0): 5, ("t", 1): -2}
    with pytest.raises(ValueError, match="starting offset can't be latest for batch"):
        read(subscribe="t", startingOffsets="latest")
    with pytest.raises(ValueError, match="can't be latest for batch queries"):
        read(subscribe="t", startingOffsets='{"t": {"0": -1}}')
    with pytest.raises(ValueError, match="ending offset can't be earliest"):
        read(subscribe="t", endingOffsets="earliest")
    with pytest.raises(ValueError, match="ending offset for t-0 can't be earliest"):
        read(subscribe="t", endingOffsets='{"t": {"0": -2}}')
    with pytest.raises(ValueError, match="ending offset not valid in streaming queries"):
        read(streaming=True, subscribe="t", endingOffsets="latest")
    with pytest.raises(ValueError, match="is greater than the ending offset"):
        read(subscribe="t", startingOffsets='{"t": {"0": 9}}', endingOffsets='{"t": {"0": 3}}')
    assert read(subscribe="t", startingTimestamp="1700").starting == OffsetSpec(
        "timestamp", timestamp=1700
    )
    with pytest.raises(ValueError, match="Expected a single long value"):
        read(subscribe="t", startingTimestamp="soon")
    spec = read(subscribe="t", startingOffsetsByTimestamp='{"t": {"0": 1700}}').starting
    assert spec.kind == "timestamps" and spec.as_dict() == {("t", 0): 1700}


def test_trigger_and_split_options():
    opts = read(
        streaming=True,
        subscribe="t",
        maxOffsetsPerTrigger="100",
        minOffsetsPerTrigger="10",
        maxTriggerDelay="30s",
        minPartitions="4",
        failOnDataLoss="false",
        includeHeaders="true",
    )
    assert (opts.max_offsets_per_trigger, opts.min_offsets_per_trigger) == (100, 10)
    assert opts.max_trigger_delay_ms == 30000 and opts.min_partitions == 4
    assert not opts.fail_on_data_loss and opts.include_headers
    with pytest.raises(ValueError, match=r"minOffsetPerTrigger\(10\) is higher"):
        read(streaming=True, subscribe="t", maxOffsetsPerTrigger="5", minOffsetsPerTrigger="10")
    with pytest.raises(ValueError, match="minPartitions must be positive"):
        read(subscribe="t", minPartitions="0")
    with pytest.raises(ValueError, match="failOnDataLoss' must be true or false"):
        read(subscribe="t", failOnDataLoss="maybe")
    assert [parse_duration_ms(s) for s in ("15m", "2h", "500ms", "7", "1d")] == [
        900000,
        7200000,
        500,
        7,
        86400000,
    ]


def test_kafka_options_reach_the_clients():
    opts = read(
        subscribe="t",
        **{
            "kafka.client.id": "me",
            "kafka.fetch.max.wait.ms": "50",
            "kafka.max.partition.fetch.bytes": "65536",
            "kafka.group.id": "ignored",
        },
    )
    assert opts.consumer_kwargs() == {"client_id": "me", "max_wait_ms": 50}
    assert opts.fetch_size == 65536
    with pytest.raises(ValueError, match="no such consumer setting"):
        read(subscribe="t", **{"kafka.fetch.bogus": "1"})
    with pytest.raises(ValueError, match="SASL_SSL needs sasl.mechanism"):
        read(subscribe="t", **{"kafka.security.protocol": "SASL_SSL"})
    assert read(subscribe="t", **{"kafka.isolation.level": "read_committed"}).consumer_kwargs() == {
        "isolation_level": "read_committed"
    }
    assert (
        read(subscribe="t", **{"kafka.isolation.level": "read_uncommitted"}).consumer_kwargs() == {}
    )
    with pytest.raises(ValueError, match="must be read_uncommitted or read_committed"):
        read(subscribe="t", **{"kafka.isolation.level": "serializable"})
    w = parse_write_options(
        {
            **BOOT,
            "topic": " out ",
            "kafka.acks": "1",
            "kafka.linger.ms": "20",
            "kafka.batch.size": "16384",
            "kafka.max.request.size": "2000000",
        }
    )
    cfg = w.producer_config()
    assert w.topic == "out" and cfg["request.required.acks"] == "1"
    assert cfg["metadata.broker.list"] == "127.0.0.1:9092" and cfg["linger.ms"] == "20"
    assert cfg["message.max.bytes"] == "2000000"
    assert cfg["batch.size"] == "16384", "bytes per partition batch, as Java's (issue 15)"


def test_offset_json_round_trips_as_sparks():
    offsets = {("b", 1): 7, ("a", 0): 3, ("a", 10): 0}
    assert to_json(offsets) == '{"a":{"0":3,"10":0},"b":{"1":7}}'
    assert from_json(to_json(offsets)) == offsets
    assert from_json_dict(to_json_dict(offsets)) == offsets
    assert from_json('{"t": {"0": 30000, "1": 29000}}') == {("t", 0): 30000, ("t", 1): 29000}


def test_split_by_max_records_then_min_partitions():
    big, small = OffsetRange("t", 0, 0, 1000, "h:1"), OffsetRange("t", 1, 10, 110, "h:1")
    empty = OffsetRange("t", 2, 5, 5)
    assert split_ranges([big, small, empty]) == [big, small]
    pieces = split_ranges([big, small], max_records_per_partition=300)
    assert [(r.partition, r.start, r.end) for r in pieces] == [
        (0, 0, 250),
        (0, 250, 500),
        (0, 500, 750),
        (0, 750, 1000),
        (1, 10, 110),
    ]
    pieces = split_ranges([big, small], min_partitions=6)
    assert len(pieces) >= 6 and sum(r.size for r in pieces) == 1100
    assert [r for r in pieces if r.partition == 1] == [small]  # small ranges stay whole
    assert all(r.leader == "h:1" for r in pieces)
    ends = [(r.start, r.end) for r in pieces if r.partition == 0]
    assert ends[0][0] == 0 and ends[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in zip(ends, ends[1:]))


def test_rate_limit_shares_by_backlog():
    start = {("t", 0): 0, ("t", 1): 100}
    latest = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}
    end = rate_limit(start, latest, 40)
    taken = {tp: end[tp] - start.get(tp, latest[tp]) for tp in end}
    assert sum(taken.values()) == 40 and taken[("t", 0)] == 30 and taken[("t", 1)] == 10
    assert end[("t", 2)] == 50  # not in start: nothing to read from it here
    assert rate_limit(start, latest, 10_000) == latest
