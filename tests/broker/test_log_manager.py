"""LogConfig from Kafka property names, and the LogManager's lifecycle."""

import json
import os
import time

import pytest

from kclient.broker.log import LogConfig, LogManager, parse_format_version
from kclient.broker.log.checkpoint import RECOVERY_POINT_CHECKPOINT, read_checkpoint
from kclient.broker.log.log import CLEAN_SHUTDOWN
from kclient.protocol.records import build_batch, build_message_set


# ------------------------------------------------------------------ LogConfig
def test_defaults_are_kafkas():
    config = LogConfig()
    assert config.segment_bytes == 1 << 30 and config.retention_ms == 7 * 24 * 3600 * 1000
    assert config.retention_bytes == -1 and config.flush_interval_ms is None
    assert config.index_interval_bytes == 4096 and config.max_message_bytes == 1048588


def test_broker_names_and_topic_overrides():
    broker = LogConfig.from_properties(
        {
            "log.segment.bytes": "1000",
            "log.retention.hours": "2",
            "log.flush.interval.messages": "5",
            "log.flush.interval.ms": "300",
            "log.retention.bytes": "9000",
            "message.max.bytes": "500",
            "log.index.interval.bytes": "128",
            "log.message.format.version": "0.10.2",
            "num.partitions": "3",  # not a log setting: ignored
        },
        None,
    )
    assert (broker.segment_bytes, broker.retention_ms, broker.flush_interval_messages) == (
        1000,
        2 * 3600 * 1000,
        5,
    )
    assert (broker.flush_interval_ms, broker.retention_bytes, broker.max_message_bytes) == (
        300,
        9000,
        500,
    )
    assert broker.index_interval_bytes == 128 and broker.message_format_version == 1
    topic = LogConfig.from_properties(
        {
            "segment.bytes": "2000",
            "retention.ms": "-1",
            "flush.messages": "1",
            "max.message.bytes": "700",
            "message.timestamp.type": "LogAppendTime",
        },
        broker,
    )
    assert (topic.segment_bytes, topic.retention_ms, topic.flush_interval_messages) == (2000, -1, 1)
    assert topic.max_message_bytes == 700 and topic.log_append_time
    assert topic.retention_bytes == 9000  # inherited
    assert broker.segment_bytes == 1000  # defaults untouched


def test_retention_ms_beats_minutes_beats_hours():
    assert (
        LogConfig.from_properties(
            {"log.retention.hours": "1", "log.retention.minutes": "2"}, None
        ).retention_ms
        == 120_000
    )
    assert (
        LogConfig.from_properties(
            {"log.retention.minutes": "2", "log.retention.ms": "5"}, None
        ).retention_ms
        == 5
    )


@pytest.mark.parametrize(
    "value,magic",
    [
        ("0", 0),
        ("1", 1),
        ("2", 2),
        ("0.8.0", 0),
        ("0.8.2", 0),
        ("0.9.0", 0),
        ("0.10.0", 1),
        ("0.10.0-IV1", 1),
        ("0.10.2", 1),
        ("0.11.0", 2),
        ("1.0", 2),
        ("2.0", 2),
        ("3.7-IV4", 2),
        ("0.10.0.0", 1),
        ("0.10.0-IV0", 1),
        ("0.8.2.2", 0),
        ("0.9.0.1", 0),
        ("0.10.2.1", 1),
        ("0.11.0.3", 2),
        ("2.8.1", 2),
        ("3.9.0", 2),  # Kafka's full release numbers
    ],
)
def test_message_format_version_names(value, magic):
    assert parse_format_version("message.format.version", value) == magic
    assert (
        LogConfig.from_properties({"message.format.version": value}).message_format_version == magic
    )


@pytest.mark.parametrize(
    "key,value,hint",
    [
        ("segment.bytes", "lots", "integer"),
        ("segment.bytes", "10", "[14,"),
        ("retention.ms", "-5", "-1"),
        ("message.format.version", "3", "0.10.0"),
        ("message.timestamp.type", "Whenever", "LogAppendTime"),
        ("flush.messages", "0", "[1,"),
    ],
)
def test_bad_values_name_key_and_allowed_values(key, value, hint):
    with pytest.raises(ValueError) as err:
        LogConfig.from_properties({key: value})
    assert key in str(err.value) and hint in str(err.value)


# ------------------------------------------------------------------ LogManager
def manager(tmp_path, **kwargs) -> LogManager:
    """A started manager on ``tmp_path/logs`` with fast timers disabled unless asked."""
    kwargs.setdefault("flush_check_ms", 0)
    kwargs.setdefault("retention_check_ms", 0)
    m = LogManager(tmp_path / "logs", LogConfig(segment_bytes=4096), **kwargs)
    m.start()
    return m


def test_create_get_and_restart_keeps_topics_and_configs(tmp_path):
    m = manager(tmp_path)
    for p in range(3):
        m.create_log("events", p, {"message.format.version": "0.10.0", "retention.ms": "1000"})
    m.create_log("plain.topic_x", 0)
    events = m.get_log("events", 1)
    assert events.config.message_format_version == 1 and events.config.segment_bytes == 4096
    events.append(build_message_set([b"a", b"b"], magic=1, timestamp=5), magic=1)
    assert m.get_log("events", 7) is None
    assert m.create_log("events", 1) is events
    assert m.topics() == {"events": [0, 1, 2], "plain.topic_x": [0]}
    m.close()
    assert (tmp_path / "logs" / "events-1" / CLEAN_SHUTDOWN).exists()
    stored = json.loads((tmp_path / "logs" / ".topics" / "events.json").read_text())
    assert stored["message.format.version"] == "0.10.0"

    again = manager(tmp_path)
    assert again.topics() == {"events": [0, 1, 2], "plain.topic_x": [0]}
    config = again.topic_config("events")
    assert config.message_format_version == 1 and config.retention_ms == 1000
    assert again.topic_config("plain.topic_x").message_format_version == 2
    log = again.get_log("events", 1)
    assert log.config.retention_ms == 1000 and log.log_end_offset == 2
    assert again.create_log("events", 3).config.message_format_version == 1  # new partition
    again.close()


def test_restart_after_crash_recovers(tmp_path):
    m = manager(tmp_path)
    log = m.create_log("t", 0)
    for i in range(5):
        log.append(build_batch([b"v%d" % i], timestamp=1), magic=2)
    path = log.segments[-1].log_path
    with open(path, "ab") as f:
        f.write(os.urandom(100))  # crash: no close, garbage tail
    again = manager(tmp_path)
    assert again.get_log("t", 0).log_end_offset == 5
    again.close()


def test_create_log_validates(tmp_path):
    m = manager(tmp_path)
    with pytest.raises(ValueError, match="message.format.version"):
        m.create_log("t", 0, {"message.format.version": "banana"})
    with pytest.raises(ValueError, match="illegal topic name"):
        m.create_log("bad/name", 0)
    with pytest.raises(ValueError):
        m.create_log("t", -1)
    assert m.topics() == {}
    m.close()


def test_delete_topic(tmp_path):
    m = manager(tmp_path)
    m.create_log("gone", 0, {"retention.ms": "5"})
    m.create_log("gone", 1)
    m.create_log("gone-2", 0)  # a topic whose name looks like a partition of "gone"
    region = m.get_log("gone", 0)
    region.append(build_batch([b"x"]), magic=2)
    m.delete_topic("gone")
    assert m.topics() == {"gone-2": [0]}
    assert not (tmp_path / "logs" / "gone-0").exists()
    assert not (tmp_path / "logs" / ".topics" / "gone.json").exists()
    assert m.topic_config("gone").retention_ms == LogConfig().retention_ms
    m.close()


def test_flush_timer_flushes_by_flush_ms(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(
        os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd))[1]
    )
    m = manager(tmp_path, flush_check_ms=10)
    log = m.create_log("t", 0, {"flush.ms": "0"})
    log.append(build_batch([b"x"]), magic=2)
    deadline = time.time() + 5
    while not any(p.endswith(".log") for p in synced) and time.time() < deadline:
        time.sleep(0.01)
    assert any(p.endswith(".log") for p in synced)
    m.close()


def test_retention_timer_and_cleanup(tmp_path):
    m = manager(tmp_path, retention_check_ms=10)
    log = m.create_log("t", 0, {"retention.bytes": "0", "segment.bytes": "200"})
    for i in range(10):
        log.append(build_batch([b"value-%d" % i], timestamp=1), magic=2)
    deadline = time.time() + 5
    while log.log_start_offset < 10 and time.time() < deadline:
        time.sleep(0.01)
    assert log.log_start_offset == log.log_end_offset == 10
    m.close()
    assert m.cleanup() == 0


def test_flush_all_and_close_are_idempotent(tmp_path):
    m = manager(tmp_path)
    log = m.create_log("t", 0)
    log.append(build_batch([b"x", b"y"]), magic=2)
    assert log.recovery_point == 0
    m.flush_all()
    assert log.recovery_point == log.log_end_offset == 2  # flushed: on disk up to the end
    m.flush_all()
    assert log.recovery_point == 2
    m.close()
    marker = tmp_path / "logs" / "t-0" / CLEAN_SHUTDOWN
    checkpoint = tmp_path / "logs" / RECOVERY_POINT_CHECKPOINT
    assert marker.exists() and read_checkpoint(checkpoint) == {("t", 0): 2}
    assert m.logs() == []
    m.close()  # a second close changes nothing
    assert marker.exists() and read_checkpoint(checkpoint) == {("t", 0): 2}
    again = manager(tmp_path)  # and the data is all there
    assert again.get_log("t", 0).log_end_offset == 2
    again.close()
