"""What a request handler may use of the broker: a small ``typing.Protocol``.

Handlers are typed against :class:`Broker` instead of the concrete MiniBroker, so the handler
modules import no server code (no server <-> handlers cycle) and a test can stand in for a broker
with any object offering these members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kclient.protocol.framing import Request
from kclient.protocol.schema import Struct

from .cluster import ClusterMember

if TYPE_CHECKING:
    from .authorizer import Authorizer
    from .cluster import ClusterView
    from .config import BrokerConfig
    from .coordinator import GroupCoordinator
    from .delayed import AppendWatchers, Scheduler
    from .fetch_sessions import FetchSessionCache
    from .log import Log
    from .producer_ids import ProducerIdManager
    from .share import ShareCoordinator
    from .txn_coordinator import TransactionCoordinator

__all__ = ["Broker", "body_of", "is_local_coordinator"]


class Broker(ClusterMember, Protocol):
    """The members of a broker the handlers call (beyond what the cluster view needs of a
    member: id, advertised address, rack, logs); MiniBroker provides them all."""

    config: BrokerConfig
    cluster: ClusterView
    coordinator: GroupCoordinator
    producer_ids: ProducerIdManager
    txn_coordinator: TransactionCoordinator
    share: ShareCoordinator
    scheduler: Scheduler
    watchers: AppendWatchers
    fetch_sessions: FetchSessionCache
    authorizer: Authorizer | None

    def ensure_topic(self, name: str) -> bool:
        """Auto-create an unknown topic if allowed; True if it exists now."""
        ...

    def partition_log(self, topic: str, partition: int) -> tuple[Log | None, int]:
        """(log, 0) when this broker leads the partition, else (None, error code)."""
        ...

    def notify_append(self, topic: str, partition: int, nbytes: int) -> None:
        """Wake delayed operations waiting on appends to a partition."""
        ...

    def coordinator_for(self, group_id: str, listener: str = "") -> tuple[int, str, int]:
        """(node id, advertised host, advertised port) of the group's coordinator, as the
        clients of ``listener`` see it."""
        ...


def is_local_coordinator(broker: Broker, group_id: str) -> bool:
    """Whether this broker coordinates the group."""
    return broker.coordinator_for(group_id)[0] == broker.node_id


def body_of(request: Request) -> Struct:
    """The decoded body of a request; handlers are only given requests that decoded (the
    network layer answers the others)."""
    body = request.body
    if body is None:
        raise ValueError(f"request without a body: {request.header}")
    return body
