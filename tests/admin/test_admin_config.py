"""Issue 24, row 6: AdminClient takes the config forms every kclient client takes."""

from __future__ import annotations

import pytest

from kclient import AdminClient, InvalidConfigError


def test_admin_client_takes_a_dict_keywords_or_a_bootstrap_string(mini_broker):
    forms = [
        lambda: AdminClient({"bootstrap.servers": mini_broker.bootstrap}),
        lambda: AdminClient(bootstrap_servers=mini_broker.bootstrap),
        lambda: AdminClient({"metadata.broker.list": mini_broker.bootstrap}, client_id="ops"),
        lambda: AdminClient(mini_broker.bootstrap),
    ]
    for i, make in enumerate(forms):
        with make() as admin:
            admin.create_topic(f"t{i}", num_partitions=1)
            assert f"t{i}" in {t.name for t in admin.list_topics()}


def test_admin_client_config_errors_name_the_admin_client():
    with pytest.raises(InvalidConfigError, match="'acks' is a producer setting; the AdminClient"):
        AdminClient({"bootstrap.servers": "127.0.0.1:9092", "acks": "all"})
    with pytest.raises(InvalidConfigError, match="did you mean 'bootstrap.servers'"):
        AdminClient(bootstrap_srvers="127.0.0.1:9092")
    with pytest.raises(InvalidConfigError, match="missing required AdminClient config"):
        AdminClient()
    with pytest.raises(InvalidConfigError, match="not supported by kclient"):
        AdminClient(bootstrap_servers="127.0.0.1:9092", connections_max_idle_ms=1000)
