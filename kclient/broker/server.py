"""MiniBroker: a real Kafka-protocol server in one process (and ``kclient broker`` to run it).

It ties together the socket server (network.py), the request handlers (handlers/), the storage
layer (log/), the group coordinator, fault injection (faults.py), the cluster view it shares
with other brokers of a MiniCluster (cluster.py) and ZooKeeper registration (zk.py).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kclient.protocol.apis import METADATA
from kclient.protocol.errors import (
    NotLeaderForPartitionError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kclient.protocol.framing import Request
from kclient.protocol.zookeeper import registration_version

from .authorizer import ACL_DIR, AclStore, Authorizer, authorizer_enabled, authorizer_from_config
from .cluster import ClusterView
from .config import BrokerConfig
from .connection_quotas import ConnectionQuotas, parse_overrides
from .coordinator import GroupCoordinator
from .delayed import AppendWatchers, Scheduler
from .faults import Fault, Faults, error_body, stamp_metadata_error
from .fetch_sessions import FetchSessionCache
from .handlers import HANDLERS, served_versions
from .listeners import (
    Listener,
    ListenerError,
    inter_broker_listener,
    parse_listeners,
    split_entries,
)
from .log import Log, LogConfig, LogManager
from .log.log import CLEAN_SHUTDOWN
from .memory_pool import MemoryPool, pool_for
from .network import DropConnection, SocketServer
from .principal import NoMatchingRule, PrincipalMapper
from .producer_ids import ProducerIdManager
from .registry.server import RegistryServer
from .request_stats import RequestStats
from .sasl import CredentialStore, SaslSession, Session
from .sasl.mechanisms import SUPPORTED
from .sasl.session import RefusedSession, SaslSettings, tls_principal
from .share import ShareCoordinator
from .txn_coordinator import TransactionCoordinator
from .txn_markers import MarkerWriter

if TYPE_CHECKING:
    from .zk import ZkRegistry

__all__ = ["MiniBroker", "main"]

log = logging.getLogger("kclient.broker")


class MiniBroker:
    """One broker: ``with MiniBroker() as b: b.bootstrap``; stop()/start() keep port and data."""

    def __init__(
        self,
        log_dir: str | Path | None = None,
        port: int = 0,
        broker_id: int = 0,
        zookeeper_connect: str | None = None,
        config: Mapping[str, Any] | None = None,
        host: str = "127.0.0.1",
        *,
        cluster: ClusterView | None = None,
        sasl_users: Mapping[str, str] | None = None,
        schema_registry: bool | int = False,
        schema_registry_users: Mapping[str, str] | None = None,
    ):
        """``schema_registry``: also serve a Schema Registry (True: on any free port; a
        number: on that port), its schemas in the compacted ``_schemas`` topic; with
        ``schema_registry_users`` (name -> password) it asks for HTTP basic auth."""
        self.config = BrokerConfig(config)
        cfg = self.config
        self.node_id = (
            broker_id if broker_id or "broker.id" not in cfg.explicit else int(cfg["broker.id"])
        )
        self.config.set("broker.id", self.node_id)
        _request_pool(cfg), _connection_quotas(cfg)  # refuse bad limits before start()
        self.host, self.port = _listener(cfg, host, port)
        self.listeners: list[Listener] = parse_listeners(cfg, self.host, self.port)
        inter_broker_listener(cfg, self.listeners)  # a wrong name fails now, not later
        self.sasl = _sasl_settings(cfg, self.listeners, sasl_users)
        self.principal_mapper = PrincipalMapper(cfg["ssl.principal.mapping.rules"])
        self.zookeeper_connect = zookeeper_connect or cfg.get("zookeeper.connect")
        self._tmp = log_dir is None and not (cfg.get("log.dirs") or cfg.get("log.dir"))
        if log_dir is None:
            log_dir = (
                (cfg.get("log.dirs") or "").split(",")[0]
                or cfg.get("log.dir")
                or tempfile.mkdtemp(prefix=f"kclient-broker-{self.node_id}-")
            )
        self.log_dir = Path(log_dir)
        self.cluster = cluster if cluster is not None else ClusterView()
        self.faults = Faults()
        self.watchers = AppendWatchers()
        self.fetch_sessions = FetchSessionCache(
            self.config.int_setting("max.incremental.fetch.session.cache.slots")
        )
        self.log_manager: LogManager = None  # type: ignore[assignment]  # set by start()
        self.coordinator: GroupCoordinator = None  # type: ignore[assignment]  # set by start()
        self.producer_ids: ProducerIdManager = None  # type: ignore[assignment]  # by start()
        self.txn_coordinator: TransactionCoordinator = None  # type: ignore[assignment]
        self.share: ShareCoordinator = None  # type: ignore[assignment]  # set by start()
        self.scheduler: Scheduler = None  # type: ignore[assignment]  # set by start()
        self.zk: ZkRegistry | None = None
        self.authorizer: Authorizer | None = None
        self._authorizing = authorizer_enabled(cfg)  # an unknown class fails now
        self._server: SocketServer | None = None  # the first listener's
        self.registry = (
            None
            if schema_registry is False
            else RegistryServer(
                self,
                0 if schema_registry is True else int(schema_registry),
                self.host,
                schema_registry_users,
            )
        )
        self._servers: list[SocketServer] = []
        #: per API requests, errors, bytes and latency; connections (metrics())
        self.request_stats = RequestStats()
        self.running = False

    # ------------------------------------------------------------------ identity
    @property
    def broker_id(self) -> int:
        """Kafka's name for the node id."""
        return self.node_id

    def metrics(self) -> dict[str, Any]:
        """Request metrics: per API requests answered, answers with an error code, bytes in
        and out, latency histogram; connections open and accepted (docs/observability.md)."""
        return self.request_stats.snapshot(self.node_id)

    @property
    def bootstrap(self) -> str:
        """ "host:port" for clients."""
        return f"{self.host}:{self.port}"

    @property
    def advertised_host(self) -> str:
        """The host this broker names itself by in ZooKeeper (the inter-broker listener's)."""
        return self.endpoint(inter_broker_listener(self.config, self.listeners).name)[0]

    @property
    def advertised_port(self) -> int:
        """The port this broker names itself by in ZooKeeper (the bound port unless
        advertised)."""
        return self.endpoint(inter_broker_listener(self.config, self.listeners).name)[1]

    def endpoint(self, listener: str = "") -> tuple[str, int]:
        """(host, port) clients of ``listener`` are told (Metadata, FindCoordinator,
        DescribeCluster): its ``advertised.listeners`` entry, else where it is bound; an
        unknown or empty name means the first listener."""
        chosen = next((each for each in self.listeners if each.name == listener), self.listeners[0])
        if chosen is self.listeners[0]:
            return _advertised(self.config, chosen.host, chosen.port)
        if "advertised.listeners" in self.config.explicit:
            for name, host, port in split_entries(self.config["advertised.listeners"]):
                if name == chosen.name:
                    return host or chosen.host, port or chosen.port
        return chosen.host, chosen.port

    def bootstrap_of(self, listener: str) -> str:
        """ "host:port" where listener ``listener`` is bound (e.g. ``bootstrap_of("SASL_SSL")``)."""
        for each in self.listeners:
            if each.name == listener.upper():
                return f"{each.host}:{each.port}"
        raise KeyError(
            f"broker {self.node_id} has no listener {listener!r} "
            f"({', '.join(e.name for e in self.listeners)})"
        )

    @property
    def schema_registry_url(self) -> str:
        """``http://127.0.0.1:PORT`` of this broker's Schema Registry."""
        if self.registry is None:
            raise RuntimeError("this broker serves no schema registry (schema_registry=True)")
        return self.registry.url

    @property
    def rack(self) -> str | None:
        """``broker.rack``, or None."""
        return self.config.get("broker.rack")

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"MiniBroker(id={self.node_id}, {self.bootstrap}, {self.log_dir}, {state})"

    # ------------------------------------------------------------------ life cycle
    def start(self) -> MiniBroker:
        """Open the logs, bind the port, start coordinator and network, register in ZooKeeper."""
        if self.running:
            return self
        self.running = True
        try:
            self._start_components()
        except BaseException:
            self._shutdown(clean=True)
            raise
        log.info(
            "broker %d listening on %s (log dir %s)", self.node_id, self.bootstrap, self.log_dir
        )
        return self

    def _start_components(self) -> None:
        """Start storage, timers, coordinator, network and registration, in that order."""
        cfg = self.config
        self.log_dir.mkdir(parents=True, exist_ok=True)
        defaults = LogConfig.from_properties({k: cfg[k] for k in cfg.explicit})
        self.log_manager = LogManager(
            self.log_dir,
            defaults,
            flush_check_ms=cfg.get_int("log.flush.scheduler.interval.ms", 1000),
            retention_check_ms=cfg.get_int("log.retention.check.interval.ms", 300000),
            checkpoint_interval_ms=cfg.get_int("log.flush.offset.checkpoint.interval.ms", 60000),
            cleaner_config=cfg,
        )
        self.log_manager.start()
        self.scheduler = Scheduler(f"kclient-broker-{self.node_id}-timer")
        self._open_authorizer()
        self._servers = []
        pool, quotas = _request_pool(cfg), _connection_quotas(cfg)  # shared by the listeners
        for i, listener in enumerate(self.listeners):
            server = SocketServer(
                listener.host,
                listener.port,
                self.dispatch,
                served=served_versions(),
                num_processors=cfg.get_int("num.network.threads", 3),
                max_request_size=cfg.int_setting("socket.request.max.bytes"),
                max_idle_ms=cfg.get_int("connections.max.idle.ms", 600000),
                listener=listener,
                pool=pool,
                quotas=quotas,
                sessions=self._sessions(listener),
                stats=self.request_stats,
            )
            self._servers.append(server)
            server.bind()
            self.listeners[i] = listener.with_port(server.port)
        self._server = self._servers[0]
        self.host, self.port = self.listeners[0].host, self.listeners[0].port
        self.coordinator = GroupCoordinator(
            self.log_dir / "__group_coordinator", self.node_id, cfg.coordinator_properties()
        )
        self.coordinator.consumer.topics = self.cluster.topic_metadata
        self.coordinator.start()
        self.producer_ids = ProducerIdManager(self.log_dir / "producer_id_block", self.node_id)
        self.cluster.add_broker(self)
        self.share = ShareCoordinator(
            self.log_dir / "__share_coordinator",
            cfg.coordinator_properties(),
            self.cluster,
            self.partition_log,
        )
        self.share.start()
        self.txn_coordinator = TransactionCoordinator(
            self.log_dir / "__transaction_coordinator",
            self.node_id,
            cfg.coordinator_properties(),
            self.producer_ids.next_id,
            MarkerWriter(self.cluster),
        )
        self.txn_coordinator.start()
        for server in self._servers:
            server.start()
        if self.registry is not None:
            self.registry.start()
        if self.zookeeper_connect:
            self._register_zk()

    def _open_authorizer(self) -> None:
        """The authorizer, when ``authorizer.class.name`` asks for one; the ACLs are the
        cluster's (the first broker of a MiniCluster opens them under its log dir)."""
        if not self._authorizing:
            return
        if self.cluster.acls is None:
            self.cluster.acls = AclStore(self.log_dir / ACL_DIR, self.config)
        self.authorizer = authorizer_from_config(self.config, self.cluster.acls)

    def _close_authorizer(self) -> None:
        """The last broker of the cluster to stop closes the ACL store."""
        self.authorizer = None
        if self._authorizing and not self.cluster.live and self.cluster.acls is not None:
            self.cluster.acls.close()
            self.cluster.acls = None

    def _sessions(self, listener: Listener) -> Callable[[Any, str], Session]:
        """The factory of each connection's security state on ``listener``."""
        sasl, name = self.sasl, listener.name
        if listener.uses_sasl and sasl is not None:
            return lambda sock, peer: SaslSession(sasl, name, peer)
        mapper = self.principal_mapper

        def transport_session(sock: Any, peer: str) -> Session:
            """The certificate's principal (mapped), or a refusal when no rule matches."""
            try:
                return Session(tls_principal(sock, mapper), name)
            except NoMatchingRule as exc:
                return RefusedSession(str(exc), name)

        return transport_session

    def _register_zk(self) -> None:
        from .zk import ZkRegistry  # kazoo is needed only for a broker registered in ZooKeeper

        """Register this broker and the partitions it leads in ZooKeeper."""
        cfg, connect = self.config, self.zookeeper_connect
        assert connect, "only called with zookeeper.connect set"
        self.zk = ZkRegistry(
            connect,
            self.node_id,
            self.advertised_host,
            self.advertised_port,
            cfg.get_int("zookeeper.session.timeout.ms", 18000),
            cfg.get_int("zookeeper.connection.timeout.ms"),
            rack=self.rack,
            version=registration_version(cfg.get("inter.broker.protocol.version")),
            listeners=self._zk_endpoints(),
        )
        self.zk.start()
        for topic in self.log_manager.topics():
            leaders = self.cluster.partitions(topic) or {}
            epochs = {p: self.cluster.leader_epoch(topic, p) for p in leaders}
            self.zk.register_topic(topic, leaders, self.cluster.configs.get(topic), epochs)

    def _zk_endpoints(self) -> list[tuple[str, str, str, int]]:
        """Every listener's advertised (name, protocol, host, port) for the registration, so
        ZooKeeper clients of a secured listener find it; empty with one PLAINTEXT listener."""
        if [each.security_protocol for each in self.listeners] == ["PLAINTEXT"]:
            return []
        return [
            (each.name, each.security_protocol, *self.endpoint(each.name))
            for each in self.listeners
        ]

    def stop(self) -> None:
        """Clean shutdown: leave ZooKeeper and the cluster, close connections, flush the logs."""
        self._shutdown(clean=True)

    def kill(self) -> None:
        """Abrupt stop: connections cut and logs closed without a final flush or clean marker."""
        self._shutdown(clean=False)

    def _shutdown(self, clean: bool) -> None:
        """Take the broker down in reverse start order."""
        if not self.running:
            return
        self.running = False
        if self.zk is not None:
            self.zk.close()
            self.zk = None
        if self.registry is not None:
            self.registry.stop()
        self.cluster.remove_broker(self.node_id)
        for server in self._servers:
            server.stop()
        self._servers, self._server = [], None
        if self.scheduler is not None:
            self.scheduler.close()
            self.scheduler = None  # type: ignore[assignment]  # until the next start()
        if self.txn_coordinator is not None:
            self.txn_coordinator.close()
            self.txn_coordinator = None  # type: ignore[assignment]  # until the next start()
        if self.share is not None:
            self.share.close()
            self.share = None  # type: ignore[assignment]  # until the next start()
        if self.coordinator is not None:
            self.coordinator.close()
            self.coordinator = None  # type: ignore[assignment]  # until the next start()
        if self.log_manager is not None and clean:
            self.log_manager.close()
        elif self.log_manager is not None:
            _abandon(self.log_manager)
        self._close_authorizer()
        log.info("broker %d %s", self.node_id, "stopped" if clean else "killed")

    def close(self) -> None:
        """Stop and remove a temporary log directory."""
        self.stop()
        if self._tmp:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def __enter__(self) -> MiniBroker:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ topics and partitions
    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, Any] | None = None
    ) -> dict[int, int]:
        """Create a topic (leaders spread over the cluster's live brokers)."""
        return self.cluster.create_topic(name, partitions, config)

    def delete_topic(self, name: str) -> None:
        """Delete a topic everywhere."""
        self.cluster.delete_topic(name)

    def ensure_topic(self, name: str) -> bool:
        """Auto-create an unknown topic if auto.create.topics.enable; True if it exists now."""
        if self.cluster.partitions(name) is not None:
            return True
        if not self.config.get_bool("auto.create.topics.enable"):
            return False
        try:
            self.cluster.create_topic(name, self.config.get_int("num.partitions", 1))
        except TopicAlreadyExistsError:
            pass
        log.info("auto-created topic %r", name)
        return True

    def partition_log(self, topic: str, partition: int) -> tuple[Log | None, int]:
        """(log, 0) if this broker leads the partition, else (None, error code)."""
        leader = self.cluster.leader(topic, partition)
        if leader is None:
            return None, UnknownTopicOrPartitionError.errno
        if leader != self.node_id:
            return None, NotLeaderForPartitionError.errno
        log_ = self.log_manager.get_log(topic, partition)
        return (log_, 0) if log_ is not None else (None, UnknownTopicOrPartitionError.errno)

    def topic_config(self, topic: str) -> LogConfig:
        """The effective log config of a topic on this broker."""
        return self.log_manager.topic_config(topic)

    def coordinator_for(self, group_id: str, listener: str = "") -> tuple[int, str, int]:
        """(node_id, host, port) of the broker coordinating ``group_id``."""
        return self.cluster.coordinator_for(group_id, listener)

    def notify_append(self, topic: str, partition: int, nbytes: int) -> None:
        """Wake delayed fetches waiting on this partition."""
        self.watchers.notify(topic, partition, nbytes)

    # ------------------------------------------------------------------ requests
    def dispatch(self, request: Request) -> Any:
        """Answer one request: armed faults first, then the API's registered handler."""
        registration = HANDLERS.get(request.api) if request.api is not None else None
        if registration is None:
            raise DropConnection(f"no handler for api key {request.header.api_key}")
        fault = self.faults.take(request.header.api_key)
        if fault is not None:
            return self._apply_fault(fault, request, registration.handle)
        return registration.handle(self, request)

    def _apply_fault(self, fault: Fault, request: Request, handler: Callable[..., Any]) -> Any:
        """Turn an armed fault into an error answer, a delayed answer or a dropped connection."""
        if fault.kind == "drop":
            raise DropConnection("fault injection")
        if fault.kind == "lose":
            _resolve(handler(self, request))
            raise DropConnection("fault injection: response lost")
        if fault.kind == "error":
            if request.api is METADATA:
                return stamp_metadata_error(_resolve(handler(self, request)), fault.error)
            return error_body(request, fault.error)
        future: Future[Any] = Future()

        def run() -> None:
            """Answer the request now that the delay is over."""
            try:
                _chain(handler(self, request), future)
            except BaseException as exc:  # noqa: BLE001 - handed on to the waiting request
                future.set_exception(exc)

        self.scheduler.call_later(fault.ms / 1000.0, run)
        return future


def _sasl_settings(
    cfg: BrokerConfig, listeners: list[Listener], users: Mapping[str, str] | None
) -> SaslSettings | None:
    """The SASL users and mechanisms, when some listener uses SASL; fail closed: no users for
    a password mechanism, or an unknown mechanism, refuses to start."""
    if not any(each.uses_sasl for each in listeners):
        return None
    mechanisms = tuple(
        m.strip().upper() for m in cfg["sasl.enabled.mechanisms"].split(",") if m.strip()
    )
    unknown = [m for m in mechanisms if m not in SUPPORTED]
    if unknown or not mechanisms:
        raise ListenerError(
            f"sasl.enabled.mechanisms: {', '.join(unknown) or 'none given'} "
            f"(the mini-broker supports {', '.join(SUPPORTED)}; GSSAPI is not "
            "supported)"
        )
    path = cfg.get("sasl.credentials.file")
    store = CredentialStore.load(path) if path else CredentialStore()
    for name, password in (users or {}).items():
        store.add_user(name, password)
    if not len(store) and any(m != "OAUTHBEARER" for m in mechanisms):
        names = ", ".join(e.name for e in listeners if e.uses_sasl)
        raise ListenerError(
            f"listener {names} uses SASL but there are no users: set "
            "sasl.credentials.file or give kclient broker --sasl-user NAME:PASSWORD"
        )
    return SaslSettings(mechanisms, store, cfg.get_int("connections.max.reauth.ms", 0))


def _request_pool(cfg: BrokerConfig) -> MemoryPool | None:
    """The ``queued.max.request.bytes`` pool (None: unbounded, Kafka's default of -1)."""
    return pool_for(
        cfg.int_setting("queued.max.request.bytes"), cfg.int_setting("socket.request.max.bytes")
    )


def _connection_quotas(cfg: BrokerConfig) -> ConnectionQuotas:
    """``max.connections``, ``max.connections.per.ip`` and its overrides."""
    return ConnectionQuotas(
        cfg.int_setting("max.connections"),
        cfg.int_setting("max.connections.per.ip"),
        parse_overrides(cfg.get("max.connections.per.ip.overrides") or ""),
    )


def _listener(cfg: BrokerConfig, host: str, port: int) -> tuple[str, int]:
    """Address to serve on: explicit arguments, else listeners / host.name / port settings."""
    if "listeners" in cfg.explicit and not port:
        _, name, number = _listener_entry(cfg["listeners"])
        return (name or host), number
    if "host.name" in cfg.explicit and host == "127.0.0.1":
        host = cfg["host.name"]
    if not port and "port" in cfg.explicit:
        port = int(cfg["port"])
    return host, port


def _listener_entry(value: str, name: str | None = None) -> tuple[str, str, int]:
    """(name, host, port) of the ``NAME://host:port`` entry called ``name`` (default: first)."""
    entries = split_entries(value)
    return next((e for e in entries if e[0] == name), entries[0])


def _advertised(cfg: BrokerConfig, host: str, port: int) -> tuple[str, int]:
    """The advertised address as Kafka picks it: ``advertised.listeners`` (the entry of the
    serving listener's name), else ``advertised.host.name`` / ``advertised.port``, else the
    bound address; an empty host or a port of 0 means the bound one."""
    if "advertised.listeners" in cfg.explicit:
        name = _listener_entry(cfg["listeners"])[0] if "listeners" in cfg.explicit else None
        _, adv_host, adv_port = _listener_entry(cfg["advertised.listeners"], name)
    else:
        adv_host = cfg.get("advertised.host.name") or ""
        adv_port = cfg.get_int("advertised.port") or 0
    return adv_host or host, adv_port or port


def _resolve(result: Any) -> Any:
    """A handler result that may be a Future, waited for (Metadata never delays)."""
    return result.result(30) if isinstance(result, Future) else result


def _chain(result: Any, future: Future[Any]) -> None:
    """Complete ``future`` with ``result`` (itself possibly a Future)."""
    if not isinstance(result, Future):
        future.set_result(result)
        return

    def relay(done: Future[Any]) -> None:
        """Copy the inner future's outcome."""
        exc = done.exception()
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(done.result())

    result.add_done_callback(relay)


def _abandon(manager: Any) -> None:
    """Close a log manager the way a crash leaves it: next start must run recovery."""
    abandon = getattr(manager, "abandon", None)
    if abandon is not None:
        abandon()
        return
    dirs = [each.directory for each in manager.logs()]
    manager.close()
    for directory in dirs:
        (Path(directory) / CLEAN_SHUTDOWN).unlink(missing_ok=True)


# ---------------------------------------------------------------------- command line
def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    """``kclient broker`` options."""
    parser = argparse.ArgumentParser(
        prog="kclient broker",
        description="Run the kclient mini-broker.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  kclient broker --log-dir /tmp/kdata --port 9092 "
        "--config num.partitions=3\n"
        "  kclient broker --log-dir /tmp/kdata --config "
        "listeners=SASL_PLAINTEXT://127.0.0.1:9093 --sasl-user alice:secret",
    )
    parser.add_argument("--log-dir", required=True, help="directory for the partition logs")
    parser.add_argument(
        "--port", type=int, default=9092, help="port to listen on (0: any; default 9092)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--broker-id", type=int, default=0, help="this broker's id, Kafka's broker.id (default 0)"
    )
    parser.add_argument(
        "--zookeeper",
        default=None,
        metavar="HOST:PORT",
        help="register in ZooKeeper (Kafka 0.8 layout)",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server.properties setting (repeatable)",
    )
    parser.add_argument(
        "--sasl-user",
        action="append",
        default=[],
        metavar="NAME:PASSWORD",
        help="a SASL user (PLAIN and SCRAM; kept salted, repeatable)",
    )
    parser.add_argument(
        "--schema-registry",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve a Schema Registry on PORT (0: any)",
    )
    parser.add_argument(
        "--schema-registry-user",
        action="append",
        default=[],
        metavar="NAME:PASSWORD",
        help="the registry asks for HTTP basic auth of these users",
    )
    parser.add_argument(
        "--prometheus-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve the broker's request metrics for Prometheus on PORT "
        "(0: any) at /metrics (needs prometheus_client)",
    )
    parser.add_argument(
        "--write-credentials",
        metavar="FILE",
        default=None,
        help="write the --sasl-user users (salted) to FILE for sasl.credentials.file, and exit",
    )
    return parser.parse_args(argv)


#: what ``kclient broker`` sets to 0 unless --config says otherwise
_REBALANCE_DELAY = "group.initial.rebalance.delay.ms"


def _config_pairs(items: list[str]) -> dict[str, str]:
    """Parse KEY=VALUE options."""
    config = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"kclient broker: --config expects KEY=VALUE, got {item!r}", file=sys.stderr)
            raise SystemExit(2)
        config[key.strip()] = value.strip()
    return config


def _os_reason(exc: OSError) -> str:
    """An OSError as one line: its reason and the file it was about."""
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def main(
    argv: list[str] | None = None, expose: Callable[[MiniBroker, int, str], str] | None = None
) -> int:
    """Run a broker until SIGTERM or SIGINT, then shut it down cleanly.  ``expose(broker,
    port, host)`` serves its metrics for ``--prometheus-port`` and returns the URL (``kclient
    broker`` gives it: the broker itself knows nothing of the exporters)."""
    args = _parse_args(argv)
    if args.prometheus_port is not None and expose is None:
        print(
            "kclient broker: --prometheus-port needs the kclient command (kclient broker ...)",
            file=sys.stderr,
        )
        return 2
    users = dict(u.partition(":")[::2] for u in args.sasl_user)
    if args.write_credentials:
        store = CredentialStore()
        for name, password in users.items():
            store.add_user(name, password)
        store.save(args.write_credentials)
        print(f"wrote {len(store)} SASL users to {args.write_credentials}")
        return 0
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = _config_pairs(args.config)
    # local development: a new group's first member starts at once instead of after Kafka's
    # 3 s wait for more members (say so in the banner; --config overrides it)
    config.setdefault(_REBALANCE_DELAY, "0")
    try:
        broker = MiniBroker(
            log_dir=args.log_dir,
            port=args.port,
            broker_id=args.broker_id,
            zookeeper_connect=args.zookeeper,
            config=config,
            host=args.host,
            sasl_users=users,
            schema_registry=False if args.schema_registry is None else args.schema_registry,
            schema_registry_users=dict(u.partition(":")[::2] for u in args.schema_registry_user),
        )
    except ValueError as exc:  # an unknown key, a listener without its TLS material, ...
        print(f"kclient broker: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the log dir cannot be made or written
        print(
            f"kclient broker: cannot use log dir {args.log_dir}: {_os_reason(exc)}", file=sys.stderr
        )
        return 1
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    try:
        broker.start()
    except OSError as exc:  # the address is taken, or the log dir is not writable
        what = (
            f"use log dir {args.log_dir}" if exc.filename else f"listen on {args.host}:{args.port}"
        )
        print(f"kclient broker: cannot {what}: {_os_reason(exc)}", file=sys.stderr)
        return 1
    print(
        f"kclient broker {broker.node_id} listening on {broker.bootstrap} "
        f"({_REBALANCE_DELAY}={config[_REBALANCE_DELAY]}; Kafka's default is 3000, "
        f"--config {_REBALANCE_DELAY}=3000 to match it)",
        flush=True,
    )
    if broker.registry is not None:
        print(f"schema registry listening on {broker.schema_registry_url}", flush=True)
    if args.prometheus_port is not None and expose is not None:
        print(
            f"metrics for Prometheus at {expose(broker, args.prometheus_port, args.host)}",
            flush=True,
        )
    while not done.wait(0.5):
        pass
    broker.stop()
    return 0
