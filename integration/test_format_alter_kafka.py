"""Kafka 3.9 (ZooKeeper mode, IBP 2.8: old formats kept) as the reference for
tests/broker/test_format_alter.py: AlterConfigs and IncrementalAlterConfigs of
message.format.version accept 0.10.0.0, 0.10.0 and 0.10.0-IV1, and later batches are stored in
message format v1 (issue 25)."""

from __future__ import annotations

import pytest

from kclient.admin import AdminClient
from tests.admin.message_format import V1_NAMES, check_format_switch


@pytest.mark.parametrize("incremental", [True, False], ids=["incremental", "alter"])
@pytest.mark.parametrize("value", V1_NAMES)
def test_kafka3_switches_later_batches_to_v1(kafka3, value, incremental):
    with AdminClient(kafka3.bootstrap) as admin:
        assert check_format_switch(admin, kafka3.bootstrap, value, incremental) >= 1
