"""The asyncio driver's side of the coordinator: where the core's coordinator conversations'
requests go (:class:`AIOCoordinator`).

Retries, rediscovery and error handling are the core's (:mod:`kclient.core.coordinator`); this
only connects to the address the core's state holds, and sends ``ANY_NODE`` requests
(FindCoordinator, the leader's Metadata) through the cluster.
"""

from __future__ import annotations

import asyncio
from typing import TypeVar

from kclient.connection import ConnectionSettings
from kclient.core.coordinator import CoordinatorState
from kclient.core.steps import ANY_NODE, COORDINATOR, Conversation, Request, version_and_body

from .cluster import AIOCluster
from .connection import AIOConnection
from .driver import run

__all__ = ["AIOCoordinator"]

_T = TypeVar("_T")


class AIOCoordinator:
    """The coordinator of ``key`` for asyncio: run core conversations with :meth:`run`."""

    def __init__(
        self,
        cluster: AIOCluster,
        key: str,
        backoff_ms: int = 1000,
        retries: int = 5,
        settings: ConnectionSettings | None = None,
        key_type: int = 0,
    ) -> None:
        self.cluster = cluster
        self.state = CoordinatorState(key, key_type, retries, backoff_ms / 1000.0)
        self.settings = settings or cluster.settings
        self._conn: AIOConnection | None = None
        self._connecting: asyncio.Lock | None = None

    async def run(self, conversation: Conversation[_T]) -> _T:
        """Run a core conversation against this coordinator (in the calling task)."""
        return await run(conversation, self)

    async def connection(self) -> AIOConnection:
        """The connection to the coordinator the state names (opened when needed)."""
        address = self.state.located()
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            conn = self._conn
            if conn is not None and address.serves(conn):
                return conn
            if conn is not None:
                conn.close("the coordinator moved")
            self._conn = None
            conn = AIOConnection(address.host, address.port, self.settings, node_id=address.node_id)
            await conn.connect()
            self._conn = conn
            return conn

    async def request(self, request: Request) -> object:
        """The transport: ``COORDINATOR`` (or None) to the coordinator, ``ANY_NODE`` to any
        broker, a node id to that broker."""
        node = request.node
        if node is None or node == COORDINATOR:
            conn = await self.connection()
        elif node == ANY_NODE:
            conn = await self.cluster.any_connection()
        elif isinstance(node, int):
            conn = await self.cluster.connection(node)
        else:
            raise ValueError(f"unknown request destination {node!r}")
        version, body = version_and_body(request, conn)
        if not request.expect_response:
            conn.send(request.api, body, version, expect_response=False)
            return None
        return await conn.request(request.api, body, version)

    def close(self, reason: str = "closed by the client") -> None:
        """Close the coordinator connection (requests on it fail; later ones reconnect)."""
        if self._conn is not None:
            self._conn.close(reason)
            self._conn = None
