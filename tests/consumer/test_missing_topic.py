"""A group consumer subscribed to a topic that does not exist says so, once."""

from __future__ import annotations

import logging

import pytest

from kclient.consumer import create as create_consumer
from kclient.errors import ConsumerTimeoutError


def _warnings(caplog, topic: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and repr(topic) in r.getMessage()
    ]


def test_missing_topic_is_warned_about_once(tmp_path, caplog):
    from kclient.broker import MiniBroker

    caplog.set_level(logging.WARNING, logger="kclient")
    with MiniBroker(log_dir=tmp_path / "b", config={"auto.create.topics.enable": "false"}) as b:
        config = {
            "metadata.broker.list": b.bootstrap,
            "group.id": "g-missing",
            "consumer.timeout.ms": 500,
            "auto.commit.enable": False,
            "heartbeat.interval.ms": 200,
            "session.timeout.ms": 6000,
        }
        first = create_consumer(config)
        try:
            stream = first.create_message_streams({"nope": 1})["nope"][0]
            with pytest.raises(ConsumerTimeoutError):
                next(iter(stream))
            found = _warnings(caplog, "nope")
            assert len(found) == 1 and "does not exist" in found[0] and b.bootstrap in found[0]
            # another member joins: a second rebalance, no second warning from the first
            second = create_consumer(config)
            rebalances = first.executor.rebalances
            try:
                second.create_message_streams({"nope": 1})
                for _ in range(50):
                    if first.executor.rebalances > rebalances:
                        break
                    with pytest.raises(ConsumerTimeoutError):
                        next(iter(stream))
                assert first.executor.rebalances > rebalances
            finally:
                second.shutdown()
            assert len(_warnings(caplog, "nope")) == 2  # one per connector
        finally:
            first.shutdown()
