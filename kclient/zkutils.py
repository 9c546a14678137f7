"""Kafka's ZooKeeper layout over kazoo (Kafka's ``ZkUtils``): reads and writes of the znodes.

The layout itself -- paths and the JSON of every znode, byte for byte -- lives in
:mod:`kclient.protocol.zookeeper`, shared with the mini-broker's registration; this module does
the kazoo I/O on top of it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kclient.errors import InvalidConfigError, ZooKeeperError
from kclient.protocol.zookeeper import (
    BROKER_IDS_PATH,
    BROKER_TOPICS_PATH,
    CONSUMERS_PATH,
    GroupDirs,
    broker_path,
    broker_registration,
    kafka_json,
    parse_broker,
    parse_partition_leader,
    parse_registration,
    parse_topic_assignment,
    partition_state,
    partition_state_path,
    registration_json,
    topic_assignment,
    topic_path,
)

#: why kazoo could not be imported (None when it is installed): kclient works without it
KAZOO_MISSING: ImportError | None = None

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from kazoo.exceptions import (
        ConnectionLoss,
        NodeExistsError,
        NoNodeError,
        NotEmptyError,
        OperationTimeoutError,
        SessionExpiredError,
    )
    from kazoo.handlers.threading import KazooTimeoutError
    from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE
else:
    try:
        from kazoo.client import KazooClient
        from kazoo.exceptions import (
            ConnectionLoss,
            NodeExistsError,
            NoNodeError,
            NotEmptyError,
            OperationTimeoutError,
            SessionExpiredError,
        )
        from kazoo.handlers.threading import KazooTimeoutError
        from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE
    except ImportError as _missing:  # kclient works without kazoo; only ZooKeeper needs it
        KAZOO_MISSING = _missing

        class _NeverRaised(Exception):
            """Stands in for kazoo's errors in except clauses: without kazoo none is raised."""

        KazooClient = None
        ConnectionLoss = NodeExistsError = NoNodeError = NotEmptyError = _NeverRaised
        OperationTimeoutError = SessionExpiredError = KazooTimeoutError = _NeverRaised
        CREATOR_ALL_ACL = READ_ACL_UNSAFE = []

__all__ = [
    "BROKER_IDS_PATH",
    "BROKER_TOPICS_PATH",
    "CONSUMERS_PATH",
    "kafka_json",
    "GroupDirs",
    "registration_json",
    "parse_registration",
    "get_children",
    "create_ephemeral_expect_conflict",
    "update_persistent",
    "read_data",
    "get_all_brokers",
    "parse_broker",
    "partitions_for_topics",
    "leader_for_partition",
    "get_all_topics",
    "consumers_in_group",
    "register_broker",
    "register_topic",
    "make_client",
    "kazoo_options",
    "zk_errors",
    "ZK_FAILURES",
]

log = logging.getLogger(__name__)


# -- generic helpers ----------------------------------------------------------------------------
def get_children(zk: KazooClient, path: str, watch=None) -> list[str]:
    """Children of ``path``; empty when it does not exist (``getChildrenParentMayNotExist``)."""
    try:
        return zk.get_children(path, watch=watch)
    except NoNodeError:
        return []


def read_data(zk: KazooClient, path: str) -> str | None:
    """The data of ``path`` as text, or None when the node does not exist."""
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return None
    return None if data is None else data.decode("utf-8")


def create_ephemeral_expect_conflict(zk: KazooClient, path: str, data: str) -> None:
    """Create an ephemeral node (parents as needed); NodeExistsError unless it holds ``data``.

    As Kafka's ``createEphemeralPathExpectConflict``: a node that already holds exactly our
    data (a create retried across a connection loss) counts as created.
    """
    raw = data.encode("utf-8")
    try:
        zk.create(path, raw, ephemeral=True, makepath=True)
    except NodeExistsError:
        try:
            stored, stat = zk.get(path)
        except NoNodeError:
            raise NodeExistsError(path) from None
        if stored != raw or stat.ephemeralOwner != zk.client_id[0]:
            raise
        log.info("%s exists with value %s during connection loss; this is ok", path, data)


def update_persistent(zk: KazooClient, path: str, data: str | bytes) -> None:
    """Set a persistent node's data, creating it and its parents when missing."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        zk.set(path, raw)
    except NoNodeError:
        try:
            zk.create(path, raw, makepath=True)
        except NodeExistsError:
            zk.set(path, raw)


#: kazoo's failures of the ensemble itself (not answers such as NoNodeError)
ZK_FAILURES = (KazooTimeoutError, ConnectionLoss, SessionExpiredError, OperationTimeoutError)


@contextmanager
def zk_errors(connect: str, what: str) -> Iterator[None]:
    """Turn kazoo's connection failures inside the block into :class:`ZooKeeperError` naming
    ``connect`` and ``what`` was being done (the kazoo error chained as the cause)."""
    try:
        yield
    except ZK_FAILURES as exc:
        detail = str(exc) or type(exc).__name__
        raise ZooKeeperError(connect, f"{what} failed: {type(exc).__name__}: {detail}") from exc


def kazoo_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """KazooClient arguments for the ``zookeeper.ssl.*``, ``zookeeper.digest`` and
    ``zookeeper.set.acl`` keys (none set: none)."""
    options: dict[str, Any] = {}
    if config.get("zookeeper.ssl.client.enable"):
        keystore = config.get("zookeeper.ssl.keystore.location")
        options.update(
            use_ssl=True,
            ca=config.get("zookeeper.ssl.truststore.location"),
            certfile=keystore,
            keyfile=keystore,
            keyfile_password=config.get("zookeeper.ssl.keystore.password"),
            verify_certs=True,
            check_hostname=config.get("zookeeper.ssl.endpoint.identification.algorithm", "https")
            == "https",
        )
    digest = config.get("zookeeper.digest")
    if digest:
        if ":" not in digest:
            raise InvalidConfigError("zookeeper.digest: expected user:password")
        options["auth_data"] = [("digest", digest)]
    if config.get("zookeeper.set.acl"):
        if not digest and not options.get("certfile"):
            raise InvalidConfigError(
                "zookeeper.set.acl needs an identity: zookeeper.digest, or "
                "zookeeper.ssl.keystore.location with zookeeper.ssl.client.enable"
            )
        options["default_acl"] = list(CREATOR_ALL_ACL) + list(READ_ACL_UNSAFE)
    return options


def make_client(
    connect: str,
    session_timeout_ms: int,
    connection_timeout_ms: int,
    options: Mapping[str, Any] | None = None,
) -> KazooClient:
    """A started kazoo client (``connect`` may end with a chroot path); ``options`` are
    :func:`kazoo_options` (TLS, digest credentials, ACLs of created znodes).

    Raises :class:`ZooKeeperError` naming ``connect`` when no server answers within
    ``connection_timeout_ms``."""
    if KAZOO_MISSING is not None:
        raise ImportError(
            f"ZooKeeper coordination needs kazoo (pip install kazoo): {KAZOO_MISSING}"
        ) from KAZOO_MISSING
    zk = KazooClient(hosts=connect, timeout=session_timeout_ms / 1000.0, **(options or {}))
    wait = max(1.0, connection_timeout_ms / 1000.0)
    try:
        with zk_errors(connect, f"connecting (zookeeper.connection.timeout.ms {wait * 1000:.0f})"):
            zk.start(timeout=wait)
    except ZooKeeperError:
        zk.stop()
        zk.close()
        raise
    return zk


# -- brokers and topics ------------------------------------------------------------------------
def get_all_brokers(
    zk: KazooClient, watch=None, security_protocol: str = "PLAINTEXT"
) -> dict[int, tuple[str, int]]:
    """``{broker id: (host, port)}`` of every registered broker, at its endpoint for
    ``security_protocol`` (the client's ``security.protocol``); a broker without one is left
    out (logged)."""
    out: dict[int, tuple[str, int]] = {}
    for child in get_children(zk, BROKER_IDS_PATH, watch):
        data = read_data(zk, f"{BROKER_IDS_PATH}/{child}")
        if data:
            try:
                out[int(child)] = parse_broker(data, security_protocol)
            except ValueError as exc:
                log.warning("broker %s left out: %s", child, exc)
    return dict(sorted(out.items()))


def get_all_topics(zk: KazooClient, watch=None) -> list[str]:
    return sorted(get_children(zk, BROKER_TOPICS_PATH, watch))


def partitions_for_topics(zk: KazooClient, topics: Iterable[str]) -> dict[str, list[int]]:
    """``{topic: sorted partition ids}`` from ``/brokers/topics/[topic]``; missing topics: []."""
    out: dict[str, list[int]] = {}
    for topic in topics:
        data = read_data(zk, topic_path(topic))
        out[topic] = sorted(parse_topic_assignment(data)) if data else []
    return out


def leader_for_partition(zk: KazooClient, topic: str, partition: int) -> int | None:
    """The leader broker id from the partition state znode, or None."""
    data = read_data(zk, partition_state_path(topic, partition))
    return parse_partition_leader(data) if data else None


# -- group membership --------------------------------------------------------------------------
def consumers_in_group(zk: KazooClient, group: str, watch=None) -> list[str]:
    return sorted(get_children(zk, GroupDirs(group).ids_dir, watch))


# -- writers for brokers (tests, tools; the mini-broker writes the same through kclient.broker.zk)
def register_broker(
    zk: KazooClient,
    broker_id: int,
    host: str,
    port: int,
    timestamp_ms: int | None = None,
    ephemeral: bool = True,
) -> None:
    """Write ``/brokers/ids/[id]`` as a Kafka 3.x broker does (host, port and endpoints)."""
    stamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    zk.create(
        broker_path(broker_id),
        broker_registration(host, port, stamp),
        ephemeral=ephemeral,
        makepath=True,
    )


def register_topic(zk: KazooClient, topic: str, replicas: Mapping[int, list[int]]) -> None:
    """Write ``/brokers/topics/[topic]`` and each partition's state (leader = first replica)."""
    update_persistent(zk, topic_path(topic), topic_assignment(replicas))
    for p, r in sorted(replicas.items()):
        update_persistent(zk, partition_state_path(topic, p), partition_state(r[0], 0, r))
