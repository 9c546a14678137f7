"""Real Apache Kafka brokers, as JVM processes or containers, for integration tests and
benchmarks.

``KafkaServer`` starts one broker or a cluster on free loopback ports with a temporary log dir:
KRaft (every node a combined broker+controller, one quorum, storage formatted by Kafka's own
StorageTool) or, for 3.x, ZooKeeper mode against Debian's ZooKeeper. Its backend is the JVM
(the fetched jars) or, where a Docker engine answers, testcontainers with Kafka's official
images (:mod:`.kafka_docker`: ``backend=`` or ``KCLIENT_KAFKA_BACKEND``). It is ready once
Metadata, asked through kclient's own connection, lists every broker.
"""

from __future__ import annotations

import base64
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from .kafka_dist import (
    _exact,
    _key,
    kafka_java,
    kafka_version,
    log_config,
    run_kafka_tool,
    start_kafka_tool,
)
from .kafka_docker import DOCKER_VERSIONS, choose_backend
from .servers import ZooKeeperServer, die_with_parent, free_port

__all__ = ["KafkaServer", "KafkaNode"]

#: Settings that make a test broker start fast and run on one node.
FAST_START = {
    "num.partitions": "1",
    "offsets.topic.num.partitions": "10",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "auto.create.topics.enable": "true",
    "delete.topic.enable": "true",
    "num.network.threads": "2",
    "num.io.threads": "4",
    "log.cleaner.dedupe.buffer.size": str(8 << 20),
    "socket.request.max.bytes": str(100 << 20),
}
#: KIP-848 groups at test speed (heartbeat 500 ms, session 10 s: 6 s let a member starved on a
#: loaded machine expire): Kafka's interval (5 s) and session (45 s) made a rebalance take
#: several seconds and a killed member's expiry most of a minute (a mini-broker twin compared
#: with a Kafka 4.x test broker takes the same values)
KIP848_TEST_SPEED = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "10000",
}
KRAFT_4 = {
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.min.session.timeout.ms": "6000",
    **KIP848_TEST_SPEED,
    # a share group's share.record.lock.duration.ms may go down to 1 s (the default
    # floor is 15 s): lock-expiry tests set 2 s on their own groups; others keep 30 s
    "group.share.min.record.lock.duration.ms": "1000",
    # share-group members learn new assignments at their next heartbeat: 1 s, not 5 s
    "group.share.min.heartbeat.interval.ms": "500",
    "group.share.heartbeat.interval.ms": "1000",
}


def _random_cluster_id() -> str:
    """A cluster id as Kafka's Uuid.randomUuid makes one: never starting with "-", which the
    storage tool's argument parser would take for an option (1 in 64 ids otherwise)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


class KafkaNode:
    """One broker process of a :class:`KafkaServer` (node id, ports, files, process)."""

    def __init__(self, node_id: int, workdir: Path):
        self.node_id = node_id
        self.port = free_port()
        self.controller_port = free_port()
        self.dir = workdir / f"node-{node_id}"
        self.data = self.dir / "data"
        self.properties = self.dir / "server.properties"
        self.log_path = self.dir / "server.log"
        self.proc: subprocess.Popen | None = None
        self.extra_ports: dict[str, int] = {}  # listener name -> port (secured listeners)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, argv: list[str]) -> None:
        """Run ``argv`` (stopped with its parent, see :func:`die_with_parent`)."""
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                die_with_parent(argv),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, deadline: float) -> None:
        """Wait for the process to end by ``deadline`` (monotonic), then kill it."""
        if self.proc is None:
            return
        try:
            self.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class KafkaServer:
    """Apache Kafka ``version`` ("4", "3" or exact) with ``num_brokers`` nodes on loopback.

    ``mode`` is "kraft" (default) or "zookeeper" (3.x only; a ZooKeeperServer is started unless
    ``zookeeper_connect`` is given). ``config`` adds or overrides server.properties settings;
    ``listeners`` adds named listeners next to PLAINTEXT (``{"SASL_SSL": "SASL_SSL"}``: name ->
    security protocol; ``bootstrap_for(name)``), ``format_args`` goes to the storage format
    (KRaft), e.g. ``--add-scram SCRAM-SHA-512=[name=alice,password=secret]``.
    ``bootstrap`` lists every broker; ``kill``/``stop_node``/``start_node`` move leadership.
    Data is deleted on exit; the logs stay when ``keep_logs`` is set (a failing test sets it).
    ``backend`` is "jvm", "docker" or "auto" (default: ``KCLIENT_KAFKA_BACKEND``, else "auto");
    ``self.backend`` says which one runs (see :mod:`kclient.testing.kafka_docker`).
    """

    def __init__(
        self,
        version: str = "4",
        num_brokers: int = 1,
        mode: str | None = None,
        config: dict[str, str] | None = None,
        zookeeper_connect: str | None = None,
        heap: str = "512m",
        start_timeout: float = 120.0,
        listeners: dict[str, str] | None = None,
        format_args: list[str] | None = None,
        backend: str | None = None,
    ):
        self.mode = mode or "kraft"
        if self.mode not in ("kraft", "zookeeper"):
            raise ValueError(f"mode must be 'kraft' or 'zookeeper', not {self.mode!r}")
        self.backend = choose_backend(backend, self.mode, listeners or {}, format_args or [])
        if self.backend == "docker":  # the fetched version when there is one, else pinned
            self.version = kafka_version(version) or DOCKER_VERSIONS.get(version, version)
        else:
            self.version = _exact(version)
        self.major = _key(self.version)[0]
        if self.mode == "zookeeper" and self.major >= 4:
            raise ValueError(f"Kafka {self.version} has no ZooKeeper mode; use a 3.x version")
        self.num_brokers = num_brokers
        self.config = dict(config or {})
        self.zookeeper_connect = zookeeper_connect
        self.heap = heap
        self.start_timeout = start_timeout
        self.keep_logs = False
        self.listeners = dict(listeners or {})
        self.format_args = list(format_args or [])
        self.nodes: list[Any] = []  # KafkaNode, or kafka_docker.DockerNode
        self.workdir: Path | None = None
        self._zookeeper: ZooKeeperServer | None = None
        self._network: Any = None  # the docker backend's network

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> KafkaServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Write configs, format storage (KRaft), start every node and wait until ready. A
        port taken by someone else between choosing and binding it costs one more try."""
        try:
            self._start_once()
        except RuntimeError:
            if "Address already in use" not in self.tails(400):
                raise
            self.keep_logs = False
            self._start_once()

    def _start_once(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix=f"kclient-kafka-{self.version}-"))
        if self.backend == "docker":
            self._start_containers()
            return
        self.nodes = [KafkaNode(i, self.workdir) for i in range(1, self.num_brokers + 1)]
        try:
            if self.mode == "zookeeper" and self.zookeeper_connect is None:
                self._zookeeper = ZooKeeperServer().__enter__()
                self.zookeeper_connect = self._zookeeper.connect
            self._log_config = log_config(self.version, self.workdir / "log.properties")
            for node in self.nodes:
                node.dir.mkdir(parents=True)
                node.extra_ports = {name: free_port() for name in self.listeners}
                node.properties.write_text(self._properties(node))
            if self.mode == "kraft":
                self._format()
            for node in self.nodes:
                self.start_node(node.node_id, wait=False)
            self.wait_ready()
        except BaseException:
            self.keep_logs = True
            self.stop()
            raise

    def _start_containers(self) -> None:
        """The docker backend: a network, one container per node, then wait until ready."""
        from testcontainers.core.network import Network

        from .kafka_docker import DockerNode, container_env, container_name, image_for

        prefix = f"kclient-kafka-{uuid.uuid4().hex[:8]}"
        ids = list(range(1, self.num_brokers + 1))
        settings = {
            **FAST_START,
            **(KRAFT_4 if self.major >= 4 else {}),
            "offsets.topic.replication.factor": str(min(3, self.num_brokers)),
            **self.config,
        }
        cluster_id = _random_cluster_id()
        self.nodes = []
        try:
            self._network = Network().create()
            for i in ids:
                port = free_port()
                self.nodes.append(
                    DockerNode(
                        i,
                        port,
                        image_for(self.version, kafka_version(self.version)),
                        container_env(i, port, ids, prefix, cluster_id, settings),
                        container_name(prefix, i),
                        self._network,
                    )
                )
            for node in self.nodes:
                node.start()
            self.wait_ready()
        except BaseException:
            self.keep_logs = True
            self.stop()
            raise

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every node (SIGTERM, SIGKILL after ``timeout``), delete the data and, unless
        ``keep_logs``, the logs (containers and their network are removed). The data is deleted,
        so a controlled shutdown saves nothing: brokers of a ZooKeeper-mode cluster all stopping
        at once retry theirs against a controller that is itself going for tens of seconds."""
        for node in self.nodes:
            node.signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            node.wait(deadline)
        if self.backend == "docker":
            for node in self.nodes:
                node.remove()
            if self._network is not None:
                self._network.remove()
                self._network = None
        if self._zookeeper is not None:
            self._zookeeper.__exit__(None, None, None)
            self._zookeeper = None
        if self.workdir is not None:
            for node in self.nodes:
                if isinstance(node, KafkaNode):
                    shutil.rmtree(node.data, ignore_errors=True)
            if not self.keep_logs:
                shutil.rmtree(self.workdir, ignore_errors=True)

    # -- configuration -----------------------------------------------------------------------
    def _properties(self, node: KafkaNode) -> str:
        props = dict(FAST_START)
        replicas = str(min(3, self.num_brokers))
        props.update(
            {
                "log.dirs": str(node.data),
                "offsets.topic.replication.factor": replicas,
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
                "advertised.listeners": f"PLAINTEXT://{node.address}",
            }
        )
        if self.mode == "kraft":
            voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
            props.update(
                {
                    "process.roles": "broker,controller",
                    "node.id": str(node.node_id),
                    "controller.quorum.voters": voters,
                    "controller.listener.names": "CONTROLLER",
                    "listeners": f"PLAINTEXT://{node.address},"
                    f"CONTROLLER://127.0.0.1:{node.controller_port}",
                }
            )
            if self.major >= 4:
                props.update(KRAFT_4)
        else:
            props.update(
                {
                    "broker.id": str(node.node_id),
                    "listeners": f"PLAINTEXT://{node.address}",
                    "zookeeper.connect": str(self.zookeeper_connect),
                    "zookeeper.session.timeout.ms": "18000",
                    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
                }
            )
        for name, protocol in self.listeners.items():
            where = f"{name}://127.0.0.1:{node.extra_ports[name]}"
            props["listeners"] += "," + where
            props["advertised.listeners"] += "," + where
            props["listener.security.protocol.map"] += f",{name}:{protocol}"
        props.update(self.config)
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def _format(self) -> None:
        """Format every node's storage with one cluster id (Kafka's StorageTool, in parallel)."""
        cluster_id = _random_cluster_id()
        procs = [
            subprocess.Popen(
                kafka_java(
                    self.version,
                    "kafka.tools.StorageTool",
                    ["format", "-t", cluster_id, "-c", str(n.properties), *self.format_args],
                ),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            for n in self.nodes
        ]
        for proc, node in zip(procs, self.nodes):
            out, _ = proc.communicate(timeout=self.start_timeout)
            (node.dir / "format.log").write_bytes(out)
            if proc.returncode != 0:
                raise RuntimeError(
                    f"formatting node {node.node_id} failed:\n{out.decode()[-3000:]}"
                )

    # -- nodes -------------------------------------------------------------------------------
    def node(self, node_id: int) -> Any:
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise KeyError(f"no Kafka node {node_id}")

    def start_node(self, node_id: int, wait: bool = True) -> None:
        """(Re)start one node with its existing data; ``wait`` until the cluster lists it."""
        node = self.node(node_id)
        if node.alive:
            return
        if self.backend == "docker":
            node.start()
            if wait:
                self.wait_ready()
            return
        opts = [
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:+ExitOnOutOfMemoryError",
            "-Dkafka.logs.dir=" + str(node.dir),
        ]
        node.start(
            kafka_java(
                self.version,
                "kafka.Kafka",
                [str(node.properties)],
                heap=self.heap,
                jvm_options=opts,
                log_file=self._log_config,
            )
        )
        if wait:
            self.wait_ready()

    def stop_node(self, node_id: int, timeout: float = 30.0) -> None:
        """Controlled shutdown of one node (SIGTERM), killed after ``timeout``."""
        node = self.node(node_id)
        node.signal(signal.SIGTERM)
        node.wait(time.monotonic() + timeout)

    def kill(self, node_id: int) -> None:
        """Kill one node at once (SIGKILL), as a crash would."""
        node = self.node(node_id)
        node.signal(signal.SIGKILL)
        node.wait(time.monotonic() + 10)

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until Metadata from kclient's own connection lists every live node."""
        from ..cluster import Cluster

        deadline = time.monotonic() + (timeout or self.start_timeout)
        live = lambda: {n.node_id for n in self.nodes if n.alive}  # noqa: E731
        problem = "no answer yet"
        while time.monotonic() < deadline:
            dead = [n for n in self.nodes if n.proc is not None and not n.alive]
            if dead and not live():
                break
            try:
                with Cluster(
                    self.bootstrap_of(live()), request_timeout_ms=5000, connect_timeout_ms=2000
                ) as cluster:
                    cluster.refresh([])
                    if set(cluster.brokers) >= live() and cluster.controller_id >= 0:
                        self._each_answers(live())
                        return
                    problem = f"metadata lists brokers {sorted(cluster.brokers)}"
            except Exception as exc:  # noqa: BLE001 - not listening yet, not ready: try again
                problem = f"{type(exc).__name__}: {exc}"
            time.sleep(0.2)
        self.keep_logs = True
        raise RuntimeError(
            f"Kafka {self.version} ({self.mode}) not ready: {problem}\n" + self.tails()
        )

    def _each_answers(self, node_ids: set[int]) -> None:
        """Raise unless every node answers Metadata itself: in ZooKeeper mode the others list
        a broker once it registers, a moment before its own socket server accepts."""
        from ..connection import BrokerConnection
        from ..protocol.apis import METADATA

        for node_id in sorted(node_ids):
            host, port = self.node(node_id).address.rsplit(":", 1)
            with BrokerConnection(
                host, int(port), connect_timeout_ms=2000, request_timeout_ms=5000
            ) as conn:
                conn.request(METADATA, {"topics": [], "allow_auto_topic_creation": False})

    # -- facts for tests ---------------------------------------------------------------------
    def bootstrap_of(self, node_ids: set[int] | list[int]) -> str:
        return ",".join(self.node(i).address for i in sorted(node_ids))

    def bootstrap_for(self, listener: str) -> str:
        """Every node's address on one of the ``listeners`` added at construction."""
        return ",".join(f"127.0.0.1:{n.extra_ports[listener]}" for n in self.nodes)

    @property
    def bootstrap(self) -> str:
        """ "127.0.0.1:P1,127.0.0.1:P2,..." for every node."""
        return ",".join(n.address for n in self.nodes)

    @property
    def log_paths(self) -> list[Path]:
        """The nodes' log files (the JVM backend's; containers keep theirs, see :meth:`tails`)."""
        return [n.log_path for n in self.nodes if isinstance(n, KafkaNode)]

    def tails(self, lines: int = 25) -> str:
        """The last ``lines`` of every node's log, each under its path (or container)."""
        return "\n".join(
            f"--- {getattr(n, 'log_path', None) or getattr(n, 'name', '')} "
            f"(last {lines} lines)\n{n.tail(lines)}"
            for n in self.nodes
        )

    def run_tool(self, main: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
        """Run one of Kafka's tool classes (same version as the brokers) to completion."""
        return run_kafka_tool(self.version, main, *args, **kwargs)

    def start_tool(self, main: str, *args: str, **popen) -> subprocess.Popen:
        """Start one of Kafka's tools (same version as the brokers) in the background."""
        return start_kafka_tool(self.version, main, *args, **popen)
