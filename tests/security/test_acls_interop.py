"""Kafka's own kafka-acls tool (AclCommand, 3.9 and 4.x) and confluent-kafka's AdminClient manage
the mini-broker's ACLs over SASL, and the ACLs they make are enforced."""

from __future__ import annotations

import pytest

from kclient.errors import TopicAuthorizationFailedError
from kclient.testing import KafkaTools, kafka_problem
from tests.needs import missing, need_module

from .conftest import ACL_USERS as USERS
from .test_acls import produce


def _librdkafka(broker, user):
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


def test_confluent_admin_client_creates_describes_and_deletes_acls(acl_broker):
    ck = need_module("confluent_kafka")
    admin_mod = need_module("confluent_kafka.admin")
    admin = admin_mod.AdminClient(_librdkafka(acl_broker, "admin"))
    binding = admin_mod.AclBinding(
        admin_mod.ResourceType.TOPIC,
        "orders",
        admin_mod.ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        admin_mod.AclOperation.WRITE,
        admin_mod.AclPermissionType.ALLOW,
    )
    for future in admin.create_acls([binding], request_timeout=10).values():
        assert future.result(timeout=20) is None
    produce(acl_broker, "alice")
    flt = admin_mod.AclBindingFilter(
        admin_mod.ResourceType.ANY,
        None,
        admin_mod.ResourcePatternType.ANY,
        None,
        None,
        admin_mod.AclOperation.ANY,
        admin_mod.AclPermissionType.ANY,
    )
    described = admin.describe_acls(flt, request_timeout=10).result(timeout=20)
    assert described == [binding]
    deleted = admin.delete_acls([flt], request_timeout=10)
    assert [f.result(timeout=20) for f in deleted.values()] == [[binding]]
    with pytest.raises(TopicAuthorizationFailedError):
        produce(acl_broker, "alice")
    admin.create_acls([binding], request_timeout=10)[binding].result(timeout=20)
    # bob may not Describe the cluster: the broker answers CLUSTER_AUTHORIZATION_FAILED, which
    # librdkafka (2.x) reports as an empty list; either way he learns of no ACL
    refused = admin_mod.AdminClient(_librdkafka(acl_broker, "bob"))
    try:
        seen = refused.describe_acls(flt, request_timeout=10).result(timeout=20)
    except ck.KafkaException as exc:
        assert exc.args[0].code() == ck.KafkaError.CLUSTER_AUTHORIZATION_FAILED
        seen = []
    assert seen == []
    created = refused.create_acls([binding], request_timeout=10)[binding]
    with pytest.raises(ck.KafkaException) as info:
        created.result(timeout=20)
    assert info.value.args[0].code() == ck.KafkaError.CLUSTER_AUTHORIZATION_FAILED


@pytest.mark.parametrize("version", ["3", "4"])
def test_kafka_acls_tool(acl_broker, tmp_path, version):
    problem = kafka_problem(version)
    if problem:
        missing(problem)
    config = tmp_path / "admin.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="admin" password="{USERS["admin"]}";\n'
    )
    tools = KafkaTools(acl_broker.bootstrap, version=version)
    common = ("--command-config", str(config))
    tools.run(
        "acls",
        *common,
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Write",
        "--topic",
        "sales-",
        "--resource-pattern-type",
        "prefixed",
    )
    listed = tools.run(
        "acls", *common, "--list", "--topic", "sales-", "--resource-pattern-type", "prefixed"
    )
    assert "User:alice" in listed and "WRITE" in listed and "PREFIXED" in listed
    acl_broker.create_topic("sales-eu")
    produce(acl_broker, "alice", topic="sales-eu")
    tools.run(
        "acls",
        *common,
        "--remove",
        "--force",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Write",
        "--topic",
        "sales-",
        "--resource-pattern-type",
        "prefixed",
    )
    assert "User:alice" not in tools.run("acls", *common, "--list")
    with pytest.raises(TopicAuthorizationFailedError):
        produce(acl_broker, "alice", topic="sales-eu")
