"""The authorizer's decisions (Kafka's ACL semantics) and its durable ACL store."""

from __future__ import annotations

import pytest

from kclient.broker.authorizer import (
    ACL_DIR,
    AclStore,
    Authorizer,
    authorizer_enabled,
    authorizer_from_config,
)
from kclient.protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    invalid_binding,
)

Op, R, P = AclOperation, ResourceType, PatternType
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ALICE, BOB = "User:alice", "User:bob"


def acl(name, op, perm=ALLOW, principal=ALICE, rtype=R.TOPIC, pattern=P.LITERAL, host="*"):
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


@pytest.fixture
def store(tmp_path):
    s = AclStore(tmp_path / ACL_DIR)
    yield s
    s.close()


def test_allow_grants_only_its_principal_operation_and_resource(store):
    store.add([acl("orders", Op.WRITE)])
    auth = Authorizer(store)
    assert auth.authorize(ALICE, "10.0.0.1", Op.WRITE, R.TOPIC, "orders")
    assert not auth.authorize(BOB, "10.0.0.1", Op.WRITE, R.TOPIC, "orders")
    assert not auth.authorize(ALICE, "10.0.0.1", Op.READ, R.TOPIC, "orders")
    assert not auth.authorize(ALICE, "10.0.0.1", Op.WRITE, R.TOPIC, "orders2")
    assert not auth.authorize(ALICE, "10.0.0.1", Op.WRITE, R.GROUP, "orders")


@pytest.mark.parametrize(
    "granted,asked,expected",
    [
        (Op.READ, Op.DESCRIBE, True),
        (Op.WRITE, Op.DESCRIBE, True),
        (Op.DELETE, Op.DESCRIBE, True),
        (Op.ALTER, Op.DESCRIBE, True),
        (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, True),
        (Op.ALTER_CONFIGS, Op.DESCRIBE, False),
        (Op.DESCRIBE, Op.READ, False),
        (Op.ALL, Op.CREATE, True),
        (Op.ALL, Op.ALTER_CONFIGS, True),
        (Op.CREATE, Op.DESCRIBE, False),
    ],
)
def test_implied_operations_as_kafka(store, granted, asked, expected):
    # Read/Write/Delete/Alter imply Describe; AlterConfigs implies DescribeConfigs; ALL all
    store.add([acl("t", granted)])
    assert Authorizer(store).authorize(ALICE, "h", asked, R.TOPIC, "t") is expected


def test_deny_wins_and_a_denied_read_still_describes(store):
    store.add(
        [
            acl("t", Op.ALL),
            acl("t", Op.WRITE, DENY),
            acl("*", Op.READ, DENY, principal="User:*", host="10.9.9.9"),
        ]
    )
    auth = Authorizer(store)
    assert not auth.authorize(ALICE, "h", Op.WRITE, R.TOPIC, "t")
    assert auth.authorize(ALICE, "h", Op.READ, R.TOPIC, "t")
    assert not auth.authorize(ALICE, "10.9.9.9", Op.READ, R.TOPIC, "t")  # host-scoped deny
    assert auth.authorize(ALICE, "10.9.9.9", Op.DESCRIBE, R.TOPIC, "t")  # deny is not implied


def test_prefixed_and_wildcard_patterns(store):
    store.add(
        [
            acl("sales-", Op.READ, pattern=P.PREFIXED),
            acl("*", Op.DESCRIBE, principal="User:*", rtype=R.GROUP),
        ]
    )
    auth = Authorizer(store)
    assert auth.authorize(ALICE, "h", Op.READ, R.TOPIC, "sales-eu")
    assert not auth.authorize(ALICE, "h", Op.READ, R.TOPIC, "sale")
    assert not auth.authorize(ALICE, "h", Op.READ, R.TOPIC, "marketing")
    assert auth.authorize(BOB, "h", Op.DESCRIBE, R.GROUP, "any-group")
    assert not auth.authorize(BOB, "h", Op.READ, R.GROUP, "any-group")


def test_super_users_and_allow_everyone_if_no_acl_found(store):
    store.add([acl("guarded", Op.READ)])
    config = {"super.users": "User:admin; User:CN=ops", "allow.everyone.if.no.acl.found": "true"}
    auth = authorizer_from_config(config, store)
    assert auth.authorize("User:admin", "h", Op.DELETE, R.TOPIC, "guarded")
    assert auth.authorize("User:CN=ops", "h", Op.ALTER, R.CLUSTER, "kafka-cluster")
    assert auth.authorize(BOB, "h", Op.WRITE, R.TOPIC, "open")  # no ACL: everyone
    assert not auth.authorize(BOB, "h", Op.READ, R.TOPIC, "guarded")  # an ACL exists
    assert not Authorizer(store).authorize(BOB, "h", Op.WRITE, R.TOPIC, "open")  # default false


def test_authorize_by_resource_type_for_idempotent_producers(store):
    auth = Authorizer(store)
    assert not auth.authorize_any(ALICE, "h", Op.WRITE, R.TOPIC)
    store.add([acl("x-", Op.WRITE, pattern=P.PREFIXED)])
    assert auth.authorize_any(ALICE, "h", Op.WRITE, R.TOPIC)
    store.add([acl("*", Op.WRITE, DENY)])
    assert not auth.authorize_any(ALICE, "h", Op.WRITE, R.TOPIC)


def test_authorized_operations_field(store):
    store.add([acl("t", Op.READ), acl("t", Op.DESCRIBE_CONFIGS)])
    field = Authorizer(store).operations(ALICE, "h", R.TOPIC, "t")
    assert field == (1 << Op.READ) | (1 << Op.DESCRIBE) | (1 << Op.DESCRIBE_CONFIGS)


def test_acls_survive_a_restart_and_deletions_too(tmp_path):
    path = tmp_path / ACL_DIR
    s = AclStore(path)
    keep, drop = acl("a", Op.READ), acl("b", Op.WRITE, DENY, pattern=P.PREFIXED)
    s.add([keep, drop, keep])
    removed = s.remove([AclBindingFilter(permission=DENY)])
    assert removed == [[drop]]
    s.close()
    again = AclStore(path)
    assert again.find(AclBindingFilter()) == [keep]
    again.close()


def test_filters_as_kafkas_acl_binding_filter(store):
    lit, pre, star = (
        acl("sales-eu", Op.READ),
        acl("sales-", Op.READ, pattern=P.PREFIXED),
        acl("*", Op.READ, principal=BOB),
    )
    store.add([lit, pre, star])
    find = store.find
    assert set(find(AclBindingFilter(name="sales-eu", pattern_type=P.MATCH))) == {lit, pre, star}
    assert find(AclBindingFilter(name="sales-", pattern_type=P.ANY)) == [pre]
    assert find(AclBindingFilter(name="sales-eu", pattern_type=P.LITERAL)) == [lit]
    assert find(AclBindingFilter(principal=BOB)) == [star]
    assert find(AclBindingFilter(resource_type=R.GROUP)) == []


def test_invalid_bindings_are_named():
    assert "CLUSTER" in invalid_binding(acl("other", Op.ALTER, rtype=R.CLUSTER))
    assert "principal" in invalid_binding(acl("t", Op.READ, principal="alice"))
    assert "operation" in invalid_binding(acl("t", Op.ANY))
    assert "pattern" in invalid_binding(acl("t", Op.READ, pattern=P.MATCH))
    assert invalid_binding(acl("kafka-cluster", Op.ALTER, rtype=R.CLUSTER)) is None


def test_authorizer_class_names():
    assert not authorizer_enabled({"authorizer.class.name": ""})
    assert authorizer_enabled(
        {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    )
    assert authorizer_enabled({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(ValueError, match="not supported"):
        authorizer_enabled({"authorizer.class.name": "com.example.Custom"})
