"""The mini-broker's authorizer over the wire: SASL principals refused with Kafka's error codes,
ACLs managed with CreateAcls / DescribeAcls / DeleteAcls and kept across restarts."""

from __future__ import annotations

import pytest

from kclient import Producer, ProducerData
from kclient.broker import MiniBroker
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.errors import (
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)
from kclient.protocol import error_codes as E
from kclient.protocol.acl import AclOperation as Op
from kclient.protocol.acl import AclPermissionType as Perm
from kclient.protocol.acl import PatternType as P
from kclient.protocol.acl import ResourceType as R
from kclient.protocol.apis import (
    CREATE_ACLS,
    DELETE_ACLS,
    DELETE_TOPICS,
    DESCRIBE_ACLS,
    INIT_PRODUCER_ID,
    METADATA,
)
from kclient.security import SecuritySettings
from kclient.simple import FetchRequest, SimpleConsumer

from .conftest import acl_keys as keys


def connect(broker, user):
    host, port = broker.bootstrap.rsplit(":", 1)
    settings = ConnectionSettings(security=SecuritySettings.from_keys(keys(user)))
    return BrokerConnection(host, int(port), settings).connect()


def grant(broker, *acls, user="admin"):
    """CreateAcls as ``user``; the result error codes."""
    creations = [
        {
            "resource_type": int(rtype),
            "resource_name": name,
            "resource_pattern_type": int(pattern),
            "principal": principal,
            "host": "*",
            "operation": int(op),
            "permission_type": int(perm),
        }
        for rtype, name, pattern, principal, op, perm in acls
    ]
    with connect(broker, user) as conn:
        return [r.error_code for r in conn.request(CREATE_ACLS, {"creations": creations}).results]


def allow(name, op, principal="User:alice", rtype=R.TOPIC, pattern=P.LITERAL):
    return rtype, name, pattern, principal, op, Perm.ALLOW


def deny(name, op, principal="User:alice", rtype=R.TOPIC, pattern=P.LITERAL):
    return rtype, name, pattern, principal, op, Perm.DENY


def produce(broker, user, topic="orders", value=b"v"):
    with Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "message.send.max.retries": 1,
            "retry.backoff.ms": 10,
            **keys(user),
        }
    ) as p:
        p.send([ProducerData(topic, value)])


def fetch(broker, user, topic="orders"):
    host, port = broker.bootstrap.rsplit(":", 1)
    with SimpleConsumer(host, int(port), security=keys(user)) as c:
        return [m.message.value for m in c.fetch(FetchRequest(topic, 0, 0, 1 << 20))]


def topic_errors(broker, user, topics):
    with connect(broker, user) as conn:
        return {t.name: t.error_code for t in conn.request(METADATA, {"topics": topics}).topics}


def test_a_principal_without_write_is_refused(acl_broker):
    assert grant(acl_broker, allow("orders", Op.WRITE)) == [0]
    produce(acl_broker, "alice", value=b"from-alice")
    with pytest.raises(TopicAuthorizationFailedError, match="orders"):
        produce(acl_broker, "bob")
    assert fetch(acl_broker, "admin") == [b"from-alice"]


def test_a_principal_without_read_cannot_fetch(acl_broker):
    produce(acl_broker, "admin", value=b"x")
    grant(acl_broker, allow("orders", Op.DESCRIBE))
    with pytest.raises(TopicAuthorizationFailedError):
        fetch(acl_broker, "alice")
    grant(acl_broker, allow("orders", Op.READ))
    assert fetch(acl_broker, "alice") == [b"x"]


def test_without_describe_the_topic_is_not_seen(acl_broker):
    acl_broker.create_topic("hidden")
    grant(acl_broker, allow("orders", Op.READ))  # Read implies Describe
    assert topic_errors(acl_broker, "alice", None) == {"orders": 0}
    assert topic_errors(acl_broker, "alice", [{"name": "hidden"}]) == {
        "hidden": E.TopicAuthorizationFailedError.errno
    }
    # not even whether it exists: an unknown name answers the same
    assert topic_errors(acl_broker, "alice", [{"name": "nope"}]) == {
        "nope": E.TopicAuthorizationFailedError.errno
    }
    assert set(topic_errors(acl_broker, "admin", None)) == {"orders", "hidden"}
    assert topic_errors(acl_broker, "bob", None) == {}


def test_delete_without_permission_leaves_the_files(acl_broker):
    produce(acl_broker, "admin", value=b"keep me")
    grant(acl_broker, allow("orders", Op.DESCRIBE, principal="User:bob"))
    files = acl_broker.log_dir / "orders-0"
    with connect(acl_broker, "bob") as conn:
        answer = conn.request(DELETE_TOPICS, {"topic_names": ["orders"], "timeout_ms": 5000})
    assert [r.error_code for r in answer.responses] == [E.TopicAuthorizationFailedError.errno]
    assert files.is_dir() and any(files.glob("*.log"))
    assert acl_broker.cluster.partitions("orders") is not None
    assert fetch(acl_broker, "admin") == [b"keep me"]
    grant(acl_broker, allow("orders", Op.DELETE, principal="User:bob"))
    with connect(acl_broker, "bob") as conn:
        answer = conn.request(DELETE_TOPICS, {"topic_names": ["orders"], "timeout_ms": 5000})
    assert [r.error_code for r in answer.responses] == [0]
    assert acl_broker.cluster.partitions("orders") is None


def test_a_group_without_read_cannot_commit(acl_broker):
    host, port = acl_broker.bootstrap.rsplit(":", 1)
    grant(acl_broker, allow("orders", Op.READ), allow("g", Op.DESCRIBE, rtype=R.GROUP))
    with SimpleConsumer(host, int(port), security=keys("alice")) as c:
        with pytest.raises(GroupAuthorizationFailedError):
            c.commit_offsets("g", {("orders", 0): 5})
        grant(acl_broker, allow("g", Op.READ, rtype=R.GROUP))
        c.commit_offsets("g", {("orders", 0): 5})
        assert c.fetch_offsets("g", [("orders", 0)])[("orders", 0)].offset == 5
    with SimpleConsumer(host, int(port), security=keys("bob")) as c:
        with pytest.raises(GroupAuthorizationFailedError):
            c.fetch_offsets("g", [("orders", 0)])


def test_super_users_may_do_anything(acl_broker):
    produce(acl_broker, "admin", topic="orders")
    assert fetch(acl_broker, "admin") == [b"v"]
    assert topic_errors(acl_broker, "admin", [{"name": "brand-new"}]) == {"brand-new": 0}


def test_deny_wins_over_allow(acl_broker):
    grant(acl_broker, allow("*", Op.ALL), deny("orders", Op.WRITE))
    with pytest.raises(TopicAuthorizationFailedError):
        produce(acl_broker, "alice")
    acl_broker.create_topic("other")
    produce(acl_broker, "alice", topic="other")


def test_prefixed_acls(acl_broker):
    for name in ("sales-eu", "salesman"):
        acl_broker.create_topic(name)
    grant(acl_broker, allow("sales-", Op.WRITE, pattern=P.PREFIXED))
    produce(acl_broker, "alice", topic="sales-eu")
    with pytest.raises(TopicAuthorizationFailedError):
        produce(acl_broker, "alice", topic="salesman")


def test_managing_acls_needs_alter_on_the_cluster(acl_broker):
    assert grant(acl_broker, allow("orders", Op.READ), user="alice") == [
        E.ClusterAuthorizationFailedError.errno
    ]
    bad = (R.CLUSTER, "not-the-cluster", P.LITERAL, "User:alice", Op.ALTER, Perm.ALLOW)
    assert grant(
        acl_broker,
        allow("orders", Op.READ),
        bad,
        (R.TOPIC, "t", P.LITERAL, "alice", Op.READ, Perm.ALLOW),
    ) == [0, E.InvalidRequestError.errno, E.InvalidRequestError.errno]
    grant(acl_broker, allow("kafka-cluster", Op.ALTER, rtype=R.CLUSTER))
    assert grant(acl_broker, allow("more", Op.READ), user="alice") == [0]
    with connect(acl_broker, "bob") as conn:
        described = conn.request(DESCRIBE_ACLS, _everything())
    assert described.error_code == E.ClusterAuthorizationFailedError.errno


def _everything(**overrides):
    return {
        "resource_type_filter": int(R.ANY),
        "resource_name_filter": None,
        "pattern_type_filter": int(P.ANY),
        "principal_filter": None,
        "host_filter": None,
        "operation": int(Op.ANY),
        "permission_type": int(Perm.ANY),
        **overrides,
    }


def test_describe_and_delete_acls_and_they_survive_a_restart(acl_broker):
    grant(
        acl_broker,
        allow("orders", Op.READ),
        allow("orders", Op.WRITE),
        deny("sales-", Op.READ, pattern=P.PREFIXED),
    )
    with connect(acl_broker, "admin") as conn:
        resources = conn.request(DESCRIBE_ACLS, _everything()).resources
        assert sorted((r.resource_name, r.pattern_type, len(r.acls)) for r in resources) == [
            ("orders", P.LITERAL, 2),
            ("sales-", P.PREFIXED, 1),
        ]
        match = conn.request(
            DESCRIBE_ACLS,
            _everything(
                resource_type_filter=int(R.TOPIC),
                resource_name_filter="sales-eu",
                pattern_type_filter=int(P.MATCH),
            ),
        )
        assert [r.resource_name for r in match.resources] == ["sales-"]
        deleted = conn.request(DELETE_ACLS, {"filters": [_everything(operation=int(Op.WRITE))]})
        assert [
            [(m.resource_name, m.operation) for m in f.matching_acls]
            for f in deleted.filter_results
        ] == [[("orders", Op.WRITE)]]
    acl_broker.stop()
    acl_broker.start()
    with connect(acl_broker, "admin") as conn:
        resources = conn.request(DESCRIBE_ACLS, _everything()).resources
    assert sorted((r.resource_name, [a.operation for a in r.acls]) for r in resources) == [
        ("orders", [Op.READ]),
        ("sales-", [Op.READ]),
    ]
    with pytest.raises(TopicAuthorizationFailedError):
        produce(acl_broker, "alice")


def test_without_an_authorizer_acl_requests_answer_security_disabled(tmp_path):
    with MiniBroker(log_dir=tmp_path / "b") as b:
        host, port = b.bootstrap.rsplit(":", 1)
        with BrokerConnection(host, int(port), ConnectionSettings()).connect() as conn:
            assert (
                conn.request(DESCRIBE_ACLS, _everything()).error_code
                == E.SecurityDisabledError.errno
            )
            result = conn.request(
                CREATE_ACLS,
                {
                    "creations": [
                        {
                            "resource_type": 2,
                            "resource_name": "t",
                            "resource_pattern_type": 3,
                            "principal": "User:a",
                            "host": "*",
                            "operation": 3,
                            "permission_type": 3,
                        }
                    ]
                },
            )
            assert [r.error_code for r in result.results] == [E.SecurityDisabledError.errno]


def test_an_unknown_authorizer_class_is_refused(tmp_path):
    with pytest.raises(ValueError, match="authorizer.class.name"):
        MiniBroker(log_dir=tmp_path / "b", config={"authorizer.class.name": "x.Custom"})


def _init_producer_id(broker, user, transactional_id=None):
    with connect(broker, user) as conn:
        return conn.request(
            INIT_PRODUCER_ID,
            {
                "transactional_id": transactional_id,
                "transaction_timeout_ms": 60000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        ).error_code


def test_producer_ids_need_write_somewhere_or_on_the_transactional_id(acl_broker):
    assert _init_producer_id(acl_broker, "bob") == E.ClusterAuthorizationFailedError.errno
    grant(acl_broker, allow("orders", Op.WRITE, principal="User:bob"))
    assert _init_producer_id(acl_broker, "bob") == 0  # KIP-679: Write on a topic
    assert (
        _init_producer_id(acl_broker, "bob", "tx-1")
        == E.TransactionalIdAuthorizationFailedError.errno
    )
    grant(
        acl_broker,
        allow("tx-", Op.WRITE, principal="User:bob", rtype=R.TRANSACTIONAL_ID, pattern=P.PREFIXED),
    )
    assert (
        _init_producer_id(acl_broker, "bob", "tx-1")
        != E.TransactionalIdAuthorizationFailedError.errno
    )


def test_a_group_consumer_without_the_group_is_refused_at_once(acl_broker):
    import time

    from kclient import consumer
    from tests.waiting import LOAD_SLACK

    grant(acl_broker, allow("orders", Op.READ))
    started = time.monotonic()
    with pytest.raises(GroupAuthorizationFailedError):
        conn = consumer.create(
            {
                "bootstrap.servers": acl_broker.bootstrap,
                "group.id": "g",
                "consumer.timeout.ms": 2000,
                "rebalance.max.retries": 10,
                "rebalance.backoff.ms": 2000,
                **keys("alice"),
            }
        )
        try:
            list(conn.create_message_streams({"orders": 1})["orders"][0])
        finally:
            conn.shutdown()
    # not retried rebalance.max.retries times (10 x 2 s)
    assert time.monotonic() - started < LOAD_SLACK


def test_certificate_principals_with_mapping_rules(tmp_path, certs):
    from .conftest import ssl_client, tls_broker_config

    config = tls_broker_config(
        certs,
        **{
            "ssl.client.auth": "required",
            "authorizer.class.name": "kclient",
            "ssl.principal.mapping.rules": "RULE:^CN=([a-z]+)$/svc-$1/L,DEFAULT",
            "super.users": "User:ANONYMOUS",
        },
    )  # the PLAINTEXT listener administers
    with MiniBroker(log_dir=tmp_path / "mtls", config=config) as b:
        b.create_topic("orders")
        mtls = ssl_client(certs, **{"ssl.certificate.location": str(certs.client_pem)})
        address = b.bootstrap_of("SSL")

        def produce_over_tls():
            with Producer(
                {
                    "bootstrap.servers": address,
                    "message.send.max.retries": 1,
                    "retry.backoff.ms": 10,
                    **mtls,
                }
            ) as p:
                p.send([ProducerData("orders", b"v")])

        with pytest.raises(TopicAuthorizationFailedError):
            produce_over_tls()
        assert b.authorizer is not None
        b.authorizer.store.add([binding_of_user("User:svc-client")])
        produce_over_tls()


def binding_of_user(principal):
    from kclient.protocol.acl import AclBinding

    return AclBinding(R.TOPIC, "orders", P.LITERAL, principal, "*", Op.WRITE, Perm.ALLOW)


def test_a_certificate_no_rule_maps_is_refused(tmp_path, certs):
    from kclient.errors import KafkaError

    from .conftest import ssl_client, tls_broker_config

    config = tls_broker_config(
        certs,
        **{"ssl.client.auth": "required", "ssl.principal.mapping.rules": "RULE:^CN=(ops)$/$1/"},
    )
    with MiniBroker(log_dir=tmp_path / "mtls", config=config) as b:
        host, port = b.bootstrap_of("SSL").rsplit(":", 1)
        keys = ssl_client(certs, **{"ssl.certificate.location": str(certs.client_pem)})
        settings = ConnectionSettings(security=SecuritySettings.from_keys(keys))
        with pytest.raises(KafkaError):
            with BrokerConnection(host, int(port), settings).connect() as conn:
                conn.request(METADATA, {"topics": None})


def test_groups_are_listed_and_described_only_with_describe(acl_broker):
    from kclient.protocol.apis import DESCRIBE_GROUPS, LIST_GROUPS

    host, port = acl_broker.bootstrap.rsplit(":", 1)
    with SimpleConsumer(host, int(port), security=keys("admin")) as c:
        for group in ("seen", "unseen"):
            c.commit_offsets(group, {("orders", 0): 1})
    grant(acl_broker, allow("seen", Op.DESCRIBE, rtype=R.GROUP))
    with connect(acl_broker, "alice") as conn:
        listed = conn.request(LIST_GROUPS, {}).groups
        described = conn.request(
            DESCRIBE_GROUPS, {"groups": ["seen", "unseen"], "include_authorized_operations": True}
        )
    assert [g.group_id for g in listed] == ["seen"]
    codes = {g.group_id: g.error_code for g in described.groups}
    assert codes == {"seen": 0, "unseen": E.GroupAuthorizationFailedError.errno}
    seen = next(g for g in described.groups if g.group_id == "seen")
    assert seen.authorized_operations == 1 << Op.DESCRIBE  # only what the ACL grants
    with connect(acl_broker, "admin") as conn:  # super user: every group
        assert sorted(g.group_id for g in conn.request(LIST_GROUPS, {}).groups) == [
            "seen",
            "unseen",
        ]
