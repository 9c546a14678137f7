"""Authorized-operations bit fields as Kafka's Utils.to32BitField builds them."""

from kclient.protocol.acl import (
    NOT_REQUESTED,
    SUPPORTED_OPERATIONS,
    AclOperation,
    ResourceType,
    all_supported,
    operations_field,
    operations_of,
)


def test_fields_kafka_answers_without_an_authorizer():
    # Apache Kafka 4.x with no authorizer: Metadata v8+/DescribeCluster/DescribeGroups
    assert all_supported(ResourceType.TOPIC) == 3576
    assert all_supported(ResourceType.CLUSTER) == 8096
    assert all_supported(ResourceType.GROUP) == 328


def test_round_trip_and_not_requested():
    for resource_type, operations in SUPPORTED_OPERATIONS.items():
        assert operations_of(all_supported(resource_type)) == operations
    assert operations_of(NOT_REQUESTED) == set()
    assert operations_field([]) == 0
    assert operations_of(operations_field([AclOperation.READ])) == {AclOperation.READ}
