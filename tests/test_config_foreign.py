"""Issue 24, row 10: keys of kafka-python / confluent-kafka that kclient does not take are
refused by name, pointing at docs/migrating.md; typos of kclient's own keys keep the guess."""

from __future__ import annotations

import pathlib

import pytest

from kclient import InvalidConfigError
from kclient.config import describe_keys, load_config
from kclient.config_foreign import FOREIGN

MIGRATING = pathlib.Path(__file__).parent.parent / "docs" / "migrating.md"


@pytest.mark.parametrize(
    "role, given, key, instead",
    [
        ("producer", {"buffer_memory": 33554432}, "buffer.memory", "queue.buffering.max.messages"),
        ("consumer", {"max_poll_interval_ms": 300000}, "max.poll.interval.ms", "heartbeat"),
        ("consumer", {"check.crcs": False}, "check.crcs", "CRCs are always checked"),
        ("producer", {"max.block.ms": 100}, "max.block.ms", "queue.enqueue.timeout.ms"),
        ("producer", {"error_cb": print}, "error.cb", "logging"),
    ],
)
def test_foreign_keys_are_refused_by_name(role, given, key, instead):
    dotted = next(iter(given))
    kwargs = given if "_" in dotted else {}
    with pytest.raises(InvalidConfigError) as info:
        load_config(role, None if kwargs else given, **kwargs)
    text = str(info.value)
    assert f"{key!r} (kafka-python / confluent-kafka) is not supported by kclient" in text
    assert instead in text and text.endswith("see docs/migrating.md")
    assert "did you mean" not in text


def test_typos_of_kclient_keys_still_get_the_closest_key():
    with pytest.raises(InvalidConfigError, match="did you mean 'linger.ms'"):
        load_config("producer", {"linger.msx": 5})


def test_no_foreign_key_shadows_a_kclient_key():
    known = {
        n
        for role in ("producer", "consumer")
        for k in describe_keys(role)
        for n in (k.name, *k.aliases)
    }
    assert not known & set(FOREIGN)


def test_migrating_md_names_the_keys_users_hit_first():
    text = MIGRATING.read_text()
    for key in ("buffer_memory", "max_poll_interval_ms", "fetch_max_bytes"):
        assert key in text
