"""kclient.aio over secured listeners of the mini-broker: TLS, SASL PLAIN and SCRAM (plain and
over TLS), a wrong password, and a topic authorization failure given to that send only."""

from __future__ import annotations

import asyncio

import pytest

from kclient.aio import AIOConsumer, AIOProducer
from kclient.errors import SaslAuthenticationError, TopicAuthorizationFailedError
from kclient.protocol.acl import AclOperation as Op
from kclient.structs import TopicPartition as TP
from tests.security.conftest import acl_keys, sasl_client, ssl_client
from tests.security.test_acls import allow, grant


def _keys(conf: dict) -> dict:
    return {k.replace(".", "_"): v for k, v in conf.items()}


async def _roundtrip(bootstrap: str, keys: dict, topic: str) -> list[bytes]:
    async with AIOProducer(bootstrap_servers=bootstrap, **keys) as p:
        mds = [await p.send(topic, b"s%d" % i, partition=0) for i in range(3)]
        assert [m.offset for m in mds] == [0, 1, 2]
    async with AIOConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **keys) as c:
        c.assign([TP(topic, 0)])
        got: list = []
        while len(got) < 3:
            for recs in (await c.getmany(timeout_ms=3000)).values():
                got += [r.value for r in recs]
        return got


def test_tls(tls_broker, certs):
    tls_broker.create_topic("sec-tls")
    got = asyncio.run(
        _roundtrip(tls_broker.bootstrap_of("SSL"), _keys(ssl_client(certs)), "sec-tls")
    )
    assert got == [b"s0", b"s1", b"s2"]


@pytest.mark.parametrize(
    "protocol,mechanism",
    [
        ("SASL_PLAINTEXT", "PLAIN"),
        ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
        ("SASL_SSL", "SCRAM-SHA-512"),
    ],
)
def test_sasl(sasl_broker, certs, protocol, mechanism):
    topic = f"sec-{mechanism.lower()}-{protocol.lower()}"
    sasl_broker.create_topic(topic)
    keys = _keys(sasl_client(certs, protocol, mechanism))
    assert asyncio.run(_roundtrip(sasl_broker.bootstrap_of(protocol), keys, topic)) == [
        b"s0",
        b"s1",
        b"s2",
    ]


def test_wrong_password_is_an_authentication_error(sasl_broker, certs):
    keys = _keys(sasl_client(certs, "SASL_PLAINTEXT", "SCRAM-SHA-256", password="nope"))

    async def main() -> None:
        p = AIOProducer(bootstrap_servers=sasl_broker.bootstrap_of("SASL_PLAINTEXT"), **keys)
        with pytest.raises(SaslAuthenticationError, match="SCRAM-SHA-256"):
            await p.start()

    asyncio.run(main())


def test_topic_authorization_fails_that_send_only(acl_broker):
    acl_broker.create_topic("allowed", partitions=1)
    grant(acl_broker, allow("allowed", Op.WRITE), allow("allowed", Op.DESCRIBE))

    async def main() -> None:
        async with AIOProducer(
            bootstrap_servers=acl_broker.bootstrap, **_keys(acl_keys("alice"))
        ) as p:
            with pytest.raises(TopicAuthorizationFailedError):
                await p.send("orders", b"refused")
            assert (await p.send("allowed", b"fine")).offset == 0

    asyncio.run(main())
