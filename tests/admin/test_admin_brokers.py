"""AdminClient against the mini-broker (one broker and a three-broker MiniCluster) and tansu:
every operation and its error paths (tests/admin/contract.py)."""
from __future__ import annotations

import pytest

from kclient.admin import AdminClient

from . import contract as c

#: tansu advertises DeleteRecords but closes the connection on one; it lacks CreatePartitions,
#: AlterConfigs, OffsetDelete and topic configs, and answers some error paths with success.
TANSU_FEATURES = frozenset({"incremental_alter_configs"})
KINDS = ["mini", "mini-cluster", "tansu"]


@pytest.fixture(params=KINDS)
def target(request, tmp_path):
    """(bootstrap, features) of one broker kind."""
    if request.param == "tansu":
        server = request.getfixturevalue("tansu")
        return server.bootstrap, TANSU_FEATURES
    fixture = "mini_broker" if request.param == "mini" else "mini_cluster"
    return request.getfixturevalue(fixture).bootstrap, c.ALL_FEATURES


@pytest.fixture
def admin(target):
    with AdminClient(target[0]) as client:
        yield client


def test_topic_lifecycle(admin, target):
    c.check_topic_lifecycle(admin, target[1])


def test_validate_only(admin, target):
    if "validate_only" not in target[1]:
        pytest.skip("tansu creates the topic even with validate_only")
    c.check_validate_only(admin)


def test_topic_errors(admin, target):
    if target[1] is TANSU_FEATURES:
        pytest.skip("tansu creates topics with any partition count and replication factor")
    c.check_topic_errors(admin, target[1])


def test_create_partitions(admin, target):
    c.check_create_partitions(admin, target[1])


def test_configs(admin, target):
    if "topic_configs" not in target[1]:
        pytest.skip("tansu keeps no topic configs to alter")
    c.check_configs(admin, target[1])


def test_offsets_and_records(admin, target):
    c.check_offsets_and_records(admin, target[0], target[1])


def test_describe_cluster(admin, target):
    c.check_describe_cluster(admin)


def test_group_offsets_lag_reset(admin, target):
    c.check_group_offsets_lag_reset(admin, target[0], target[1])


def test_live_group(admin, target):
    c.check_live_group(admin, target[0], target[1])
