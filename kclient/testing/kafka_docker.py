"""The testcontainers backend of :class:`~kclient.testing.KafkaServer`: Kafka's official images
(``apache/kafka:<version>``, KRaft) as containers, used where a Docker engine answers.

Which backend a server uses: its ``backend`` argument, else ``KCLIENT_KAFKA_BACKEND``
(``docker``, ``jvm`` or ``auto``, the default). ``auto`` picks ``docker`` when a Docker engine
answers and the server is one the images can run (KRaft, no extra listeners or storage-format
arguments), else the JVM processes of :mod:`.kafka`; ``docker`` asked for where no engine
answers is an error saying why.

Each node is one container on a network of its own: clients reach it at ``127.0.0.1:P``, a
free host port published as the same port inside (so the advertised address is right on both
sides); the brokers reach each other on ``INTERNAL://<container>:19092`` and the controller
quorum on ``<container>:9093``. Settings reach the image as its ``KAFKA_*`` environment
variables (:func:`env_name`); the image formats its storage with ``CLUSTER_ID``.
"""

from __future__ import annotations

import importlib
import os
import signal
import time
from collections.abc import Mapping
from typing import Any, cast

__all__ = [
    "BACKENDS",
    "IMAGE",
    "DOCKER_VERSIONS",
    "env_name",
    "container_env",
    "image_for",
    "docker_problem",
    "choose_backend",
    "docker_unsuited",
    "DockerNode",
]

#: Values of ``KCLIENT_KAFKA_BACKEND`` and of KafkaServer's ``backend``.
BACKENDS = ("auto", "docker", "jvm")
IMAGE = "apache/kafka"
#: The image tags "4" and "3" stand for (scripts/fetch-kafka's pinned versions).
DOCKER_VERSIONS = {"4": "4.4.0", "3": "3.9.2"}
INTERNAL_PORT, CONTROLLER_PORT = 19092, 9093


def env_name(key: str) -> str:
    """The image's environment variable for a server.properties key (its rule: ``.`` is ``_``,
    ``_`` is ``__``, ``-`` is ``___``, upper case, prefixed ``KAFKA_``)."""
    escaped = key.replace("_", "__").replace("-", "___").replace(".", "_")
    return "KAFKA_" + escaped.upper()


def image_for(version: str, fetched: str | None = None) -> str:
    """``apache/kafka:<exact version>``: the fetched jars' version when there are some (both
    backends then run the same Kafka), else the pinned one of the major."""
    if fetched is not None:
        return f"{IMAGE}:{fetched}"
    return f"{IMAGE}:{DOCKER_VERSIONS.get(version, version)}"


def container_name(prefix: str, node_id: int) -> str:
    """The container (and its network alias) of one node."""
    return f"{prefix}-{node_id}"


def container_env(
    node_id: int,
    port: int,
    node_ids: list[int],
    prefix: str,
    cluster_id: str,
    settings: Mapping[str, str],
) -> dict[str, str]:
    """The environment of node ``node_id``'s container: a combined broker and controller of a
    quorum of ``node_ids``, ``settings`` (server.properties keys) on top."""
    voters = ",".join(f"{n}@{container_name(prefix, n)}:{CONTROLLER_PORT}" for n in node_ids)
    props = {
        "node.id": str(node_id),
        "process.roles": "broker,controller",
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://0.0.0.0:{port},INTERNAL://0.0.0.0:{INTERNAL_PORT},"
        f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},"
        f"INTERNAL://{container_name(prefix, node_id)}:{INTERNAL_PORT}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,"
        "CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "log.dirs": "/var/lib/kafka/data",
        **settings,
    }
    env = {env_name(k): str(v) for k, v in props.items()}
    env["CLUSTER_ID"] = cluster_id
    return env


def docker_unsuited(mode: str, listeners: Mapping[str, str], format_args: list[str]) -> str | None:
    """Why the images cannot run this server (None: they can)."""
    if mode != "kraft":
        return "Kafka's images run KRaft only (ZooKeeper mode needs the JVM backend)"
    if listeners:
        return "extra (secured) listeners need the JVM backend"
    if format_args:
        return "storage-format arguments need the JVM backend"
    return None


def docker_problem() -> str | None:
    """Why no Docker engine can be used here (None: testcontainers is installed and the engine
    answers a ping)."""
    try:
        importlib.import_module("testcontainers.core.container")
        docker = importlib.import_module("docker")
    except ImportError as exc:
        return f"testcontainers is not installed ({exc}): pip install -e '.[test]'"
    try:
        client = docker.from_env(timeout=5)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - any failure to reach it means: no engine here
        where = os.environ.get("DOCKER_HOST", "the default socket")
        return f"no Docker engine answers at {where} ({type(exc).__name__}: {exc})"
    return None


def choose_backend(
    requested: str | None,
    mode: str,
    listeners: Mapping[str, str],
    format_args: list[str],
    problem: Any = docker_problem,
) -> str:
    """``docker`` or ``jvm`` for a server (see the module docstring); ``problem`` says why
    Docker is unusable (a function, asked only when it matters)."""
    choice = (requested or os.environ.get("KCLIENT_KAFKA_BACKEND") or "auto").strip().lower()
    if choice not in BACKENDS:
        raise ValueError(
            f"Kafka backend must be one of {', '.join(BACKENDS)}, not {choice!r} "
            "(KafkaServer(backend=...) or KCLIENT_KAFKA_BACKEND)"
        )
    if choice == "jvm":
        return "jvm"
    unsuited = docker_unsuited(mode, listeners, format_args)
    if choice == "docker":
        if unsuited:
            raise ValueError(f"the docker backend cannot run this server: {unsuited}")
        why = problem()
        if why:
            raise RuntimeError(f"the docker backend was asked for, but {why}")
        return "docker"
    return "jvm" if unsuited or problem() else "docker"


class DockerNode:
    """One Kafka container (the node interface of :class:`~kclient.testing.kafka.KafkaNode`:
    ``start``, ``signal``, ``wait``, ``alive``, ``tail``, ``address``)."""

    def __init__(
        self, node_id: int, port: int, image: str, env: dict[str, str], name: str, network: Any
    ) -> None:
        self.node_id, self.port, self.image, self.env = node_id, port, image, env
        self.name, self.network = name, network
        self.controller_port = CONTROLLER_PORT
        self.extra_ports: dict[str, int] = {}
        self.proc: Any = None  # the running testcontainers DockerContainer
        self._logs = ""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _container(self) -> Any:
        from testcontainers.core.container import DockerContainer

        container = DockerContainer(self.image).with_name(self.name)
        # published on loopback only (docker-py takes (host ip, port); with_bind_ports does not)
        container.ports[f"{self.port}/tcp"] = cast(Any, ("127.0.0.1", self.port))
        container.with_network(self.network).with_network_aliases(self.name)
        for key, value in self.env.items():
            container.with_env(key, value)
        return container

    def start(self, argv: list[str] | None = None) -> None:
        """Start the container (a stopped one again, with its data, as a restarted node)."""
        if self.proc is None:
            self.proc = self._container().start()
        else:
            self.proc.get_wrapped_container().start()

    @property
    def alive(self) -> bool:
        if self.proc is None:
            return False
        wrapped = self.proc.get_wrapped_container()
        wrapped.reload()
        return bool(wrapped.status == "running")

    def signal(self, sig: int) -> None:
        """SIGTERM: a controlled shutdown (``docker stop``); other signals sent as they are."""
        if not self.alive:
            return
        wrapped = self.proc.get_wrapped_container()
        if sig == signal.SIGTERM:
            wrapped.stop(timeout=30)
        else:
            wrapped.kill(signal=int(sig))

    def wait(self, deadline: float) -> None:
        """Wait for the container to stop by ``deadline`` (monotonic), then kill it."""
        while self.alive and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.alive:
            self.proc.get_wrapped_container().kill()

    def tail(self, lines: int = 40) -> str:
        if self.proc is not None:
            try:
                raw = self.proc.get_wrapped_container().logs(tail=lines)
                self._logs = raw.decode(errors="replace")
            except Exception:  # noqa: BLE001 - a removed container keeps its last logs here
                pass
        return self._logs

    def remove(self) -> None:
        """Remove the container (its data goes with it)."""
        if self.proc is not None:
            self.tail(400)
            self.proc.stop()
            self.proc = None
