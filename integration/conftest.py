"""Real Apache Kafka brokers (kclient.testing.KafkaServer), one per kind per test session: JVM
processes of the jars from scripts/fetch-kafka, or Kafka's official images through
testcontainers where a Docker engine answers (``KCLIENT_KAFKA_BACKEND=docker|jvm|auto``, default
auto; the same tests run on either). Every test here is marked ``kafka``; when one fails, its
report carries the brokers' log paths (or containers) and tails, and the logs are kept."""

from pathlib import Path

import pytest

from kclient.testing import KafkaServer, kafka_problem
from kclient.testing.kafka_docker import choose_backend
from tests.needs import missing
from tests.spark.conftest import spark  # noqa: F401  (the one local Spark session fixture)

from .differential_support import twin_pair

#: Kafka 3.x in ZooKeeper mode speaks the old message formats only below IBP 3.0 (KIP-724).
OLD_FORMATS = {"inter.broker.protocol.version": "2.8", "log.message.format.version": "2.8"}


def _server(version: str, **options) -> KafkaServer:
    """A server of the backend KCLIENT_KAFKA_BACKEND picks (the JVM one needs the jars)."""
    backend = choose_backend(None, options.get("mode") or "kraft", {}, [])
    problem = kafka_problem(version) if backend == "jvm" else None
    if problem:
        missing(problem)
    return KafkaServer(version, backend=backend, **options)


@pytest.fixture(scope="session")
def kafka4():
    """The newest fetched Kafka 4.x: one KRaft node (combined broker and controller)."""
    with _server("4") as server:
        yield server


@pytest.fixture(scope="session")
def kafka3():
    """The newest fetched Kafka 3.x in ZooKeeper mode (own ZooKeeper), able to keep topics in
    message format v0/v1 (topic config ``message.format.version``)."""
    with _server("3", mode="zookeeper", config=OLD_FORMATS) as server:
        yield server


@pytest.fixture(scope="session")
def kafka3_cluster():
    """Two Kafka 3.x brokers in ZooKeeper mode (their own ZooKeeper): partition leaders spread
    over both, as the brokers registered them under /brokers."""
    with _server("3", num_brokers=2, mode="zookeeper") as server:
        yield server


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka4):
    """bootstrap.servers of the Kafka 4.x broker."""
    return kafka4.bootstrap


def pytest_collection_modifyitems(items):
    """Every test here runs against real Kafka: marked ``kafka``."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.kafka)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On failure, keep the Kafka logs and show where they are and how they end."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, KafkaServer):
            value.keep_logs = True
            report.sections.append((f"Kafka {value.version} ({value.mode}) logs", value.tails()))


@pytest.fixture(scope="module")
def twin4(tmp_path_factory, kafka4):
    """Kafka 4.x and a mini-broker, for the differential tests."""
    yield from twin_pair(tmp_path_factory, kafka4, "mini4")


@pytest.fixture(scope="module")
def twin3(tmp_path_factory, kafka3):
    """Kafka 3.x (ZooKeeper mode, old formats possible) and a mini-broker."""
    yield from twin_pair(tmp_path_factory, kafka3, "mini3")
