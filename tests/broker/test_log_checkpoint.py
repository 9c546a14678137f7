"""``recovery-point-offset-checkpoint``: the LogManager's record of what is on disk (Kafka's)."""

import logging
import shutil
import time

from kclient.broker.log import LogConfig, LogManager
from kclient.broker.log.checkpoint import (
    RECOVERY_POINT_CHECKPOINT,
    read_checkpoint,
    write_checkpoint,
)
from kclient.broker.log.log import CLEAN_SHUTDOWN
from kclient.protocol.records import build_batch

CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=64)


def started(log_dir, **kwargs) -> LogManager:
    """A started manager on ``log_dir`` with small segments and the other timers off."""
    m = LogManager(log_dir, CONFIG, flush_check_ms=0, retention_check_ms=0, **kwargs)
    m.start()
    return m


def fill(m: LogManager, topic: str, partition: int, count: int) -> None:
    """Append ``count`` single-record batches."""
    log = m.create_log(topic, partition)
    for i in range(count):
        log.append(
            build_batch([b"%s-%d-%03d" % (topic.encode(), partition, i)], timestamp=1000 + i),
            magic=2,
        )


def test_written_on_close_in_kafkas_format(tmp_path):
    m = started(tmp_path / "logs")
    fill(m, "a", 0, 3)
    fill(m, "a", 1, 0)
    fill(m, "b.x", 0, 12)
    m.close()
    text = (tmp_path / "logs" / RECOVERY_POINT_CHECKPOINT).read_text()
    assert text == "0\n3\na 0 3\na 1 0\nb.x 0 12\n"  # close flushed everything


def test_crash_recovers_from_the_checkpointed_point(tmp_path, caplog):
    """The timer checkpoints the recovery point (the rolled segments were flushed); after a
    crash only the segments from there are recovered, as in Kafka; with no checkpoint, all."""
    m = started(tmp_path / "logs", checkpoint_interval_ms=20)
    fill(m, "t", 0, 40)
    log = m.get_log("t", 0)
    segments = log.segments
    assert len(segments) >= 3 and log.recovery_point == segments[-1].base_offset
    path = tmp_path / "logs" / RECOVERY_POINT_CHECKPOINT
    deadline = time.monotonic() + 10
    while read_checkpoint(path).get(("t", 0)) != log.recovery_point:
        assert time.monotonic() < deadline, "the checkpoint timer did not write the point"
        time.sleep(0.02)
    crashed = tmp_path / "crashed"
    shutil.copytree(tmp_path / "logs", crashed)  # the files as a kill -9 leaves them
    m.close()
    assert not list(crashed.glob(f"*/{CLEAN_SHUTDOWN}"))
    old = crashed / "t-0" / segments[0].log_path.name
    data = bytearray(old.read_bytes())
    data[-3] ^= 0xFF
    old.write_bytes(bytes(data))
    no_checkpoint = tmp_path / "no-checkpoint"
    shutil.copytree(crashed, no_checkpoint)
    (no_checkpoint / RECOVERY_POINT_CHECKPOINT).unlink()

    again = started(crashed)
    assert again.get_log("t", 0).log_end_offset == 40  # below the point: not rescanned
    again.close()
    assert read_checkpoint(crashed / RECOVERY_POINT_CHECKPOINT) == {("t", 0): 40}

    caplog.set_level(logging.ERROR)
    everything = started(no_checkpoint)
    assert everything.get_log("t", 0).log_end_offset == segments[1].base_offset - 1
    assert old.name in caplog.text
    everything.close()


def test_damaged_checkpoint_is_reported_and_means_recover_everything(tmp_path, caplog):
    path = tmp_path / RECOVERY_POINT_CHECKPOINT
    write_checkpoint(path, {("t", 0): 7, ("t", 1): 9})
    assert read_checkpoint(path) == {("t", 0): 7, ("t", 1): 9}
    path.write_text("0\n2\nt 0 7\n")  # one line short
    caplog.set_level(logging.ERROR)
    assert read_checkpoint(path) == {}
    assert str(path) in caplog.text and "1 entries, the header says 2" in caplog.text
    path.write_text("1\n0\n")
    assert read_checkpoint(path) == {} and "unknown version" in caplog.text
    assert read_checkpoint(tmp_path / "missing") == {}
