"""AdminClient against the mini-broker (one broker and a three-broker MiniCluster) and tansu:
every operation and its error paths (tests/admin/contract.py)."""

from __future__ import annotations

import pytest

from kclient.admin import AdminClient, NewTopic

from . import contract as c

#: tansu advertises DeleteRecords but closes the connection on one; it lacks CreatePartitions,
#: AlterConfigs, OffsetDelete and topic configs, and answers some error paths with success.
TANSU_FEATURES = frozenset({"incremental_alter_configs"})
KINDS = ["mini", "mini-cluster", "tansu"]
#: Tests of what tansu does not do run on the mini-brokers; test_tansu_deviations pins tansu.
mini_only = pytest.mark.parametrize("target", ["mini", "mini-cluster"], indirect=True)


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


@mini_only
def test_validate_only(admin, target):
    c.check_validate_only(admin)


@mini_only
def test_topic_errors(admin, target):
    c.check_topic_errors(admin, target[1])


def test_tansu_deviations(tansu):
    """What tansu does where Kafka refuses (so the tests above leave it out): validate_only
    creates the topic, and any replication factor is accepted. (A topic of 0 partitions is
    accepted too, and then breaks tansu's answers for every later test, so it is not tried.)"""
    with AdminClient(tansu.bootstrap) as admin:
        dry, rf = c.name("dry"), c.name("rf")
        admin.create_topics([NewTopic(dry, 2, 1)], validate_only=True)
        admin.create_topic(rf, 1, 5)
        c.wait_topic(admin, dry, 2)
        listed = {t.name for t in admin.list_topics()}
        assert {dry, rf} <= listed
        admin.delete_topics([dry, rf])


def test_create_partitions(admin, target):
    c.check_create_partitions(admin, target[1])


@mini_only
def test_configs(admin, target):
    c.check_configs(admin, target[1])


def test_offsets_and_records(admin, target):
    c.check_offsets_and_records(admin, target[0], target[1])


def test_describe_cluster(admin, target):
    c.check_describe_cluster(admin)


def test_group_offsets_lag_reset(admin, target):
    c.check_group_offsets_lag_reset(admin, target[0], target[1])


def test_live_group(admin, target):
    c.check_live_group(admin, target[0], target[1])
