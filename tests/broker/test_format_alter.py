"""AlterConfigs / IncrementalAlterConfigs of message.format.version with Kafka's release names
(0.10.0.0, 0.10.0, 0.10.0-IV1) are accepted and switch later batches to format v1 at once;
integration/test_format_alter_kafka.py runs the same check against Kafka 3.9 (issue 25)."""

from __future__ import annotations

import pytest

from kclient.admin import AdminClient
from tests.admin.message_format import V1_NAMES, check_format_switch


@pytest.mark.parametrize("incremental", [True, False], ids=["incremental", "alter"])
@pytest.mark.parametrize("value", V1_NAMES)
def test_a_kafka_release_name_switches_later_batches_to_v1(mini_broker, value, incremental):
    with AdminClient(mini_broker.bootstrap) as admin:
        assert check_format_switch(admin, mini_broker.bootstrap, value, incremental) == 1
