"""Metadata written once (kclient.core.metadata), run by both drivers: the refresh conversation
at every version (v0 asks for all topics with an empty list), the state both clusters keep, and
a request body written for the version the driver picks."""

from __future__ import annotations

import asyncio

import pytest

from kclient.aio.cluster import AIOCluster
from kclient.cluster import Cluster
from kclient.connection import ConnectionSettings
from kclient.core.metadata import ClusterState, metadata_body, refresh_metadata
from kclient.core.steps import Request
from kclient.errors import LeaderNotAvailableError, UnknownTopicOrPartitionError
from kclient.protocol.apis import METADATA


def test_the_refresh_conversation_through_both_drivers(drive, mini_broker):
    mini_broker.create_topic("m1", partitions=3)
    resp = drive(lambda: refresh_metadata(["m1"], allow_auto_create=False))
    state = ClusterState()
    state.apply(resp, full=False, now=5.0)
    assert [b.node_id for b in resp.brokers] == [0] and state.last_refresh == 5.0
    assert state.partition_ids("m1") == [0, 1, 2]
    assert state.leader("m1", 1) == 0


def at_version(version):
    """All topics at ``version``: the body is written for the version the driver sends."""
    seen = []

    def body(v):
        seen.append(v)
        return metadata_body(None, False, v)

    resp = yield Request(METADATA, body, max_version=version)
    return seen, resp


@pytest.mark.parametrize("version", [0, 1, METADATA.max_version])
def test_all_topics_at_every_version(drive, mini_broker, version):
    mini_broker.create_topic("m2", partitions=1)
    seen, resp = drive(lambda: at_version(version))
    assert seen == [version], "the driver calls the body with the version it sends"
    assert "m2" in {t.name for t in resp.topics}


def test_metadata_body_asks_for_all_topics_as_each_version_says():
    assert metadata_body(None, True, 0)["topics"] == []
    assert metadata_body(None, True, 1)["topics"] is None
    assert metadata_body(["a"], False, 4) == {
        "topics": [{"name": "a"}],
        "allow_auto_topic_creation": False,
    }


def test_state_errors_name_the_partition(mini_broker):
    mini_broker.create_topic("m3", partitions=1)
    with Cluster(mini_broker.bootstrap) as cluster:
        cluster.refresh(["m3"])
        assert cluster.leader_for("m3", 0).node_id == 0
        assert isinstance(cluster.no_leader("m3", 7), UnknownTopicOrPartitionError)
        with pytest.raises(UnknownTopicOrPartitionError, match="nope"):
            cluster.partitions_for("nope", refresh=False)
    state = ClusterState()
    state.apply(_one_partition_without_leader(), full=True, now=0.0)
    assert state.leader("x", 0) is None
    assert isinstance(state.no_leader("x", 0), LeaderNotAvailableError)


def test_both_clusters_keep_the_same_state(mini_broker):
    mini_broker.create_topic("m4", partitions=2)
    with Cluster(mini_broker.bootstrap) as threaded:
        threaded.refresh()
        threaded_view = (
            threaded.brokers,
            threaded.topics["m4"],
            threaded.controller_id,
            threaded.cluster_id,
        )

    async def main():
        cluster = AIOCluster(mini_broker.bootstrap, ConnectionSettings())
        try:
            await cluster.refresh()
            return (
                cluster.brokers,
                cluster.topics["m4"],
                cluster.controller_id,
                cluster.cluster_id,
            )
        finally:
            await cluster.close()

    assert asyncio.run(main()) == threaded_view


def _one_partition_without_leader():
    from kclient.protocol.schema import Struct

    return Struct(
        brokers=[Struct(node_id=1, host="h", port=1, rack=None)],
        controller_id=1,
        cluster_id="c",
        topics=[
            Struct(
                name="x",
                error_code=0,
                is_internal=False,
                partitions=[
                    Struct(
                        partition_index=0,
                        leader_id=-1,
                        replica_nodes=[1],
                        isr_nodes=[],
                        error_code=5,
                    )
                ],
            )
        ],
    )
