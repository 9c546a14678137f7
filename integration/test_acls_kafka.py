"""The mini-broker's authorizer answers as Apache Kafka 4.x's StandardAuthorizer: the same ACL
scenario, run through kclient's clients and AdminClient against both over SASL/SCRAM, must
give the same outcomes (who may produce, which topics Metadata shows, what DeleteTopics and an
offset commit without permission answer, who may list ACLs)."""

from __future__ import annotations

import pytest

from kclient import Producer, ProducerData
from kclient.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    PatternType,
    ResourceType,
)
from kclient.broker import MiniBroker
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.errors import KafkaError
from kclient.protocol.apis import DELETE_TOPICS, METADATA
from kclient.security import SecuritySettings
from kclient.simple import SimpleConsumer
from kclient.testing import KafkaServer, kafka_problem
from tests.needs import missing
from tests.waiting import wait_until

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


@pytest.fixture(scope="module")
def acl_kafka():
    """Kafka 4 with StandardAuthorizer and a SASL_PLAINTEXT/SCRAM-SHA-256 listener; the
    PLAINTEXT listener (controller, inter-broker, readiness checks) is a super user."""
    problem = kafka_problem("4")
    if problem:
        missing(problem)
    config = {
        "authorizer.class.name": STANDARD,
        "super.users": "User:admin;User:ANONYMOUS",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "auto.create.topics.enable": "false",
    }
    users = [
        arg
        for name, pw in USERS.items()
        for arg in ("--add-scram", f"SCRAM-SHA-256=[name={name},password={pw}]")
    ]
    with KafkaServer(
        "4", config=config, listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"}, format_args=users
    ) as kafka:
        yield kafka.bootstrap_for("SASL_PLAINTEXT")


@pytest.fixture
def acl_mini(tmp_path):
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "authorizer.class.name": STANDARD,
        "super.users": "User:admin",
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
    }
    with MiniBroker(log_dir=tmp_path / "b", config=config, sasl_users=USERS) as broker:
        yield broker.bootstrap


def _keys(user):
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


def _admin(bootstrap, user="admin"):
    settings = ConnectionSettings(security=SecuritySettings.from_keys(_keys(user)))
    return AdminClient(bootstrap, settings=settings)


def _connection(bootstrap, user):
    host, port = bootstrap.rsplit(":", 1)
    settings = ConnectionSettings(security=SecuritySettings.from_keys(_keys(user)))
    return BrokerConnection(host, int(port), settings).connect()


def _outcome(fn):
    """The error class name a call raised, or "ok"."""
    try:
        fn()
    except KafkaError as exc:
        return type(exc).__name__
    return "ok"


def _produce(bootstrap, user, topic):
    with Producer(
        {
            "bootstrap.servers": bootstrap,
            "message.send.max.retries": 1,
            "retry.backoff.ms": 50,
            **_keys(user),
        }
    ) as p:
        p.send(ProducerData(topic, b"x"))


def _acl(
    name,
    op,
    principal,
    rtype=ResourceType.TOPIC,
    pattern=PatternType.LITERAL,
    permission=AclPermissionType.ALLOW,
):
    return AclBinding(rtype, name, pattern, principal, "*", op, permission)


def scenario(bootstrap: str, suffix: str) -> dict[str, object]:
    """Run the ACL scenario; what each step answered."""
    orders, hidden, sales = f"orders{suffix}", f"hidden{suffix}", f"sales{suffix}-eu"
    out: dict[str, object] = {}
    with _admin(bootstrap) as admin:
        for name in (orders, hidden, sales):
            admin.create_topic(name, num_partitions=1)
        admin.create_acls(
            [
                _acl(orders, AclOperation.WRITE, "User:alice"),
                _acl(orders, AclOperation.READ, "User:alice"),
                _acl(
                    f"sales{suffix}-", AclOperation.ALL, "User:alice", pattern=PatternType.PREFIXED
                ),
                _acl(sales, AclOperation.WRITE, "User:alice", permission=AclPermissionType.DENY),
                _acl(orders, AclOperation.DESCRIBE, "User:bob"),
                _acl(f"g{suffix}", AclOperation.DESCRIBE, "User:alice", rtype=ResourceType.GROUP),
            ]
        )
        match = AclBindingFilter(
            resource_type=ResourceType.TOPIC, name=sales, pattern_type=PatternType.MATCH
        )
        # Kafka answers CreateAcls once its controller committed them; its authorizer applies
        # them from the metadata log a moment later: wait for that before using them
        wait_until(lambda: len(admin.describe_acls(match)) >= 2, 15, "the ACLs applied")
        mine = admin.describe_acls(match)
        out["match filter"] = sorted((a.pattern_type.name, a.permission.name) for a in mine)
    out["alice produces"] = _outcome(lambda: _produce(bootstrap, "alice", orders))
    out["bob produces"] = _outcome(lambda: _produce(bootstrap, "bob", orders))
    out["deny wins"] = _outcome(lambda: _produce(bootstrap, "alice", sales))
    with _connection(bootstrap, "alice") as conn:
        listed = conn.request(METADATA, {"topics": None}).topics
        out["alice sees"] = sorted(
            t.name.replace(suffix, "")
            for t in listed
            if t.name.endswith(suffix) or suffix in t.name
        )
        named = conn.request(
            METADATA,
            {
                "topics": [{"name": hidden}, {"name": f"nope{suffix}"}],
                "allow_auto_topic_creation": False,
            },
        ).topics
        out["named"] = [t.error_code for t in named]
    with _connection(bootstrap, "bob") as conn:
        deleted = conn.request(DELETE_TOPICS, {"topic_names": [orders], "timeout_ms": 5000})
        out["bob deletes"] = [r.error_code for r in deleted.responses]
    host, port = bootstrap.rsplit(":", 1)
    with SimpleConsumer(host, int(port), security=_keys("alice")) as c:
        out["alice commits"] = _outcome(lambda: c.commit_offsets(f"g{suffix}", {(orders, 0): 1}))
    with _admin(bootstrap, "bob") as admin:
        out["bob lists acls"] = _outcome(admin.describe_acls)
    with _admin(bootstrap) as admin:
        out["orders left"] = orders in {t.name for t in admin.list_topics()}
    return out


EXPECTED = {
    "match filter": [("LITERAL", "DENY"), ("PREFIXED", "ALLOW")],
    "alice produces": "ok",
    "bob produces": "TopicAuthorizationFailedError",
    "deny wins": "TopicAuthorizationFailedError",
    "alice sees": ["orders", "sales-eu"],
    "named": [29, 29],
    "bob deletes": [29],
    "alice commits": "GroupAuthorizationFailedError",
    "bob lists acls": "ClusterAuthorizationFailedError",
    "orders left": True,
}


def test_apache_kafka_answers_the_scenario_so(acl_kafka):
    assert scenario(acl_kafka, "-k") == EXPECTED


def test_the_mini_broker_answers_it_as_kafka(acl_mini):
    assert scenario(acl_mini, "-m") == EXPECTED


def test_kclient_acls_command_against_kafka(acl_kafka):
    """``kclient acls add|list|remove`` as a subprocess against Kafka's StandardAuthorizer:
    what it adds is listed and enforced, what it removes is no longer (exit codes 0/1/2)."""
    import time

    from tests.conftest import CliRunner

    def as_(user):
        return [
            "--security-protocol",
            "SASL_PLAINTEXT",
            "--sasl-mechanism",
            "SCRAM-SHA-256",
            "--sasl-username",
            user,
            "--sasl-password",
            USERS[user],
        ]

    def rows(text):
        return [line.split() for line in text.splitlines() if line.startswith(("TOPIC ", "GROUP "))]

    def produce_exit(want):  # Kafka applies ACL changes through its metadata log
        deadline = time.monotonic() + 20
        while True:
            code = cli("produce", "cli-orders", *as_("alice"), input=b"x\n").returncode
            if code == want or time.monotonic() > deadline:
                return code
            time.sleep(0.3)

    cli = CliRunner(acl_kafka)
    admin = as_("admin")
    cli("topics", "create", "cli-orders", *admin, check=0)
    assert produce_exit(1) == 1
    assert (
        cli.out(
            "acls",
            "add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Write",
            "--operation",
            "describe",
            "--topic",
            "cli-orders",
            *admin,
        )
        == "added 2 ACL(s)\n"
    )
    cli(
        "acls",
        "add",
        "--deny-principal",
        "User:bob",
        "--operation",
        "All",
        "--group",
        "cli-g",
        "--resource-pattern-type",
        "prefixed",
        *admin,
        check=0,
    )
    assert produce_exit(0) == 0
    listed = rows(cli.out("acls", "list", *admin))
    assert ["TOPIC", "cli-orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"] in listed
    assert ["TOPIC", "cli-orders", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW"] in listed
    bobs = rows(cli.out("acls", "list", "--principal", "User:bob", *admin))
    assert {r[3] for r in bobs} == {"User:bob"}  # other tests' ACLs of bob on this Kafka too
    assert [r for r in bobs if r[1].startswith("cli-")] == [
        ["GROUP", "cli-g", "PREFIXED", "User:bob", "*", "ALL", "DENY"]
    ]
    assert (
        cli.out(
            "acls",
            "remove",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Write",
            "--topic",
            "cli-orders",
            *admin,
        )
        == "removed 1 ACL(s)\n"
    )
    assert produce_exit(1) == 1
    assert b"ClusterAuthorizationFailedError" in cli("acls", "list", *as_("alice"), check=1).stderr
    assert b"--operation" in cli("acls", "add", "--topic", "t", *admin, check=2).stderr
