"""Fixtures of tests/core: ``drive`` runs a conversation through either driver, so every core test
is a test of both (parametrized as ``threaded`` and ``asyncio``)."""

from __future__ import annotations

import asyncio

import pytest

from kclient.aio import driver as aio_run
from kclient.aio.connection import AIOConnection
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.io import driver as io_run


def driver(kind: str, address: str, settings: ConnectionSettings):
    """``run(conversation_factory)`` -> its result, on a fresh connection to ``address`` with
    ``settings``, by the ``threaded`` or ``asyncio`` driver."""
    host, port = address.rsplit(":", 1)

    def threaded(factory):
        with BrokerConnection(host, int(port), settings) as conn:
            return io_run.run(factory(), io_run.ConnectionTransport(conn))

    def in_loop(factory):
        async def main():
            conn = await AIOConnection(host, int(port), settings).connect()
            try:
                return await aio_run.run(factory(), aio_run.ConnectionTransport(conn))
            finally:
                conn.close()

        return asyncio.run(main())

    return threaded if kind == "threaded" else in_loop


@pytest.fixture(params=["threaded", "asyncio"])
def drive(request, mini_broker):
    """``drive(conversation_factory)`` -> its result, run on a fresh connection to the
    mini-broker by the driver of this parameter."""
    return driver(request.param, mini_broker.bootstrap, ConnectionSettings(client_id="core-test"))
