"""kclient.testing.KafkaServer's backends: which one a server picks (KCLIENT_KAFKA_BACKEND, the
server's needs, whether a Docker engine answers) and the containers' settings, built without
Docker; then one Kafka container brought up through testcontainers, the one test that needs a
Docker engine itself (it skips where none answers, in either mode: tests/needs.py)."""

from __future__ import annotations

import pytest

from kclient.testing import KafkaServer
from kclient.testing.kafka_docker import (
    CONTROLLER_PORT,
    INTERNAL_PORT,
    choose_backend,
    container_env,
    docker_problem,
    env_name,
    image_for,
)
from tests.needs import need_docker


def no_problem() -> None:
    return None


def no_engine() -> str:
    return "no Docker engine answers at the default socket"


def test_env_names_follow_the_images_rule():
    assert env_name("log.dirs") == "KAFKA_LOG_DIRS"
    assert (
        env_name("transaction.state.log.num.partitions")
        == "KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS"
    )
    assert env_name("a_b.c-d") == "KAFKA_A__B_C___D"


def test_container_env_of_a_three_node_quorum():
    env = container_env(
        2, 40001, [1, 2, 3], "kk", "cid-1", {"num.partitions": "3", "transaction.version": "1"}
    )
    assert env["KAFKA_NODE_ID"] == "2" and env["CLUSTER_ID"] == "cid-1"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert (
        env["KAFKA_CONTROLLER_QUORUM_VOTERS"]
        == f"1@kk-1:{CONTROLLER_PORT},2@kk-2:{CONTROLLER_PORT},3@kk-3:{CONTROLLER_PORT}"
    )
    # clients: the host port, published as itself; brokers: the container's internal listener
    assert env["KAFKA_LISTENERS"] == (
        f"PLAINTEXT://0.0.0.0:40001,INTERNAL://0.0.0.0:"
        f"{INTERNAL_PORT},CONTROLLER://0.0.0.0:{CONTROLLER_PORT}"
    )
    assert (
        env["KAFKA_ADVERTISED_LISTENERS"]
        == f"PLAINTEXT://127.0.0.1:40001,INTERNAL://kk-2:{INTERNAL_PORT}"
    )
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "INTERNAL"
    assert (env["KAFKA_NUM_PARTITIONS"], env["KAFKA_TRANSACTION_VERSION"]) == ("3", "1")
    overridden = container_env(1, 40001, [1], "kk", "c", {"log.dirs": "/elsewhere"})
    assert overridden["KAFKA_LOG_DIRS"] == "/elsewhere"


def test_image_tags():
    assert image_for("4.4.0", "4.4.0") == "apache/kafka:4.4.0"
    assert image_for("4") == "apache/kafka:4.4.0" and image_for("3") == "apache/kafka:3.9.2"
    assert image_for("3.9.1") == "apache/kafka:3.9.1"


def test_choose_backend(monkeypatch):
    monkeypatch.delenv("KCLIENT_KAFKA_BACKEND", raising=False)
    assert choose_backend(None, "kraft", {}, [], no_problem) == "docker"
    assert choose_backend(None, "kraft", {}, [], no_engine) == "jvm"
    assert choose_backend("jvm", "kraft", {}, [], no_problem) == "jvm"
    # what the images cannot run stays on the JVM under auto, and is refused under docker
    assert choose_backend("auto", "zookeeper", {}, [], no_problem) == "jvm"
    assert choose_backend("auto", "kraft", {"SSL": "SSL"}, [], no_problem) == "jvm"
    assert choose_backend("auto", "kraft", {}, ["--add-scram", "x"], no_problem) == "jvm"
    with pytest.raises(ValueError, match="KRaft only"):
        choose_backend("docker", "zookeeper", {}, [], no_problem)
    with pytest.raises(RuntimeError, match="docker backend was asked for, but no Docker"):
        choose_backend("docker", "kraft", {}, [], no_engine)
    with pytest.raises(ValueError, match="one of auto, docker, jvm, not 'podman'"):
        choose_backend("podman", "kraft", {}, [], no_problem)
    monkeypatch.setenv("KCLIENT_KAFKA_BACKEND", "JVM")
    assert choose_backend(None, "kraft", {}, [], no_problem) == "jvm"
    monkeypatch.setenv("KCLIENT_KAFKA_BACKEND", "docker")
    assert choose_backend(None, "kraft", {}, [], no_problem) == "docker"
    assert choose_backend("jvm", "kraft", {}, [], no_problem) == "jvm"  # the argument wins


def test_a_server_here_picks_its_backend_from_the_engine(monkeypatch):
    """Where no engine answers, auto is the JVM backend (the fetched jars' version); where one
    does, the images' (same version when the jars are fetched)."""
    monkeypatch.delenv("KCLIENT_KAFKA_BACKEND", raising=False)
    problem = docker_problem()
    server = KafkaServer("4")
    assert server.backend == ("jvm" if problem else "docker")
    assert server.major == 4
    if problem:
        with pytest.raises(RuntimeError, match="docker backend was asked for"):
            KafkaServer("4", backend="docker")


def test_a_kafka_container_serves_metadata_and_transactions_v2():
    """Needs Docker itself: a KRaft node of apache/kafka through testcontainers answers
    kclient's Metadata and ApiVersions (transaction.version finalized at 2)."""
    need_docker(docker_problem())
    from kclient.connection import BrokerConnection
    from kclient.protocol.apis import API_VERSIONS
    from kclient.protocol.apis.api_versions import finalized_features

    with KafkaServer("4", backend="docker") as server:
        host, port = server.bootstrap.rsplit(":", 1)
        with BrokerConnection(host, int(port)) as conn:
            features = finalized_features(conn.request(API_VERSIONS, {}, 3))
        assert features.get("transaction.version") == 2
