"""A real Apache Kafka broker from testcontainers, where a Docker engine runs (none on the
project's own machines: every test here is then skipped, saying why)."""
import pytest


def _docker_problem() -> str | None:
    try:
        import docker
        docker.from_env().ping()
    except Exception as exc:  # no engine, no socket, no permission: all mean "cannot run"
        return f"no Docker engine for testcontainers ({type(exc).__name__}: {exc})"
    return None


@pytest.fixture(scope="session")
def kafka_bootstrap():
    """bootstrap.servers of a single-node Kafka (KRaft) in a container."""
    problem = _docker_problem()
    if problem:
        pytest.skip(problem)
    from testcontainers.kafka import KafkaContainer
    with KafkaContainer("confluentinc/cp-kafka:7.6.0").with_kraft() as kafka:
        yield kafka.get_bootstrap_server()
