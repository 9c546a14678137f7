"""A mini-broker serving its Schema Registry, and confluent-kafka's client beside kclient's."""

import pytest

from kclient.broker import MiniBroker


@pytest.fixture
def registry(tmp_path):
    """A running MiniBroker with schema_registry=True (its logs under tmp_path)."""
    with MiniBroker(
        log_dir=tmp_path / "broker",
        schema_registry=True,
        config={"group.initial.rebalance.delay.ms": "0"},
    ) as broker:
        yield broker


@pytest.fixture
def clients(registry):
    """(kclient's SchemaRegistryClient, confluent-kafka's) on the same registry."""
    from confluent_kafka.schema_registry import SchemaRegistryClient as Confluent

    from kclient.schema_registry import SchemaRegistryClient

    ours = SchemaRegistryClient({"url": registry.schema_registry_url})
    yield ours, Confluent({"url": registry.schema_registry_url})
    ours.close()
