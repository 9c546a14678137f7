"""The broker's group and offset settings default to Kafka's; tests opt into short ones."""

from __future__ import annotations

from kclient.broker import MiniBroker
from kclient.broker.config import DEFAULTS
from kclient.broker.coordinator import GroupCoordinator
from kclient.protocol.apis import JOIN_GROUP
from kclient.protocol.errors import InvalidSessionTimeoutError

KAFKA = {
    "group.initial.rebalance.delay.ms": "3000",
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "offsets.retention.minutes": "10080",
}


def _join(session_ms: int) -> dict:
    return {
        "group_id": "g",
        "session_timeout_ms": session_ms,
        "rebalance_timeout_ms": 10_000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }


def test_defaults_are_kafkas(tmp_path):
    assert {k: DEFAULTS[k] for k in KAFKA} == KAFKA
    with GroupCoordinator(tmp_path) as coordinator:  # no config: the same defaults
        assert (
            coordinator.initial_delay_ms,
            coordinator.min_session_ms,
            coordinator.max_session_ms,
        ) == (3000, 6000, 1_800_000)
        assert coordinator.offsets.retention_ms == 10080 * 60_000


def test_session_timeouts_outside_kafkas_bounds_are_refused(tmp_path, raw_client):
    with MiniBroker(log_dir=tmp_path) as broker:
        client = raw_client(broker.bootstrap)
        for session_ms in (5999, 1_800_001):
            r = client.request(JOIN_GROUP, 5, _join(session_ms))
            assert r.error_code == InvalidSessionTimeoutError.errno
        assert broker.coordinator.initial_delay_ms == 3000
