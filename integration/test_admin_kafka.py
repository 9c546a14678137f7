"""AdminClient against Apache Kafka 4.x: the same contract as the mini-broker's
(tests/admin/contract.py), every operation and error path."""

from __future__ import annotations

import pytest

from kclient.admin import AdminClient
from tests.admin import contract as c


@pytest.fixture
def admin(kafka4):
    with AdminClient(kafka4.bootstrap) as client:
        yield client


def test_topic_lifecycle(admin):
    c.check_topic_lifecycle(admin, c.ALL_FEATURES)


def test_validate_only(admin):
    c.check_validate_only(admin)


def test_topic_errors(admin):
    c.check_topic_errors(admin, c.ALL_FEATURES)


def test_create_partitions(admin):
    c.check_create_partitions(admin, c.ALL_FEATURES)


def test_configs(admin):
    c.check_configs(admin, c.ALL_FEATURES)


def test_offsets_and_records(admin, kafka4):
    c.check_offsets_and_records(admin, kafka4.bootstrap, c.ALL_FEATURES)


def test_describe_cluster(admin):
    c.check_describe_cluster(admin)


def test_group_offsets_lag_reset(admin, kafka4):
    c.check_group_offsets_lag_reset(admin, kafka4.bootstrap, c.ALL_FEATURES)


def test_live_group(admin, kafka4):
    c.check_live_group(admin, kafka4.bootstrap, c.ALL_FEATURES)
