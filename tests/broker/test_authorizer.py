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

O, R, P = AclOperation, ResourceType, PatternType
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
    store.add([acl("orders", O.WRITE)])
    auth = Authorizer(store)
    assert auth.authorize(ALICE, "10.0.0.1", O.WRITE, R.TOPIC, "orders")
    assert not auth.authorize(BOB, "10.0.0.1", O.WRITE, R.TOPIC, "orders")
    assert not auth.authorize(ALICE, "10.0.0.1", O.READ, R.TOPIC, "orders")
    assert not auth.authorize(ALICE, "10.0.0.1", O.WRITE, R.TOPIC, "orders2")
    assert not auth.authorize(ALICE, "10.0.0.1", O.WRITE, R.GROUP, "orders")


@pytest.mark.parametrize("granted,asked,expected", [
    (O.READ, O.DESCRIBE, True), (O.WRITE, O.DESCRIBE, True), (O.DELETE, O.DESCRIBE, True),
    (O.ALTER, O.DESCRIBE, True), (O.ALTER_CONFIGS, O.DESCRIBE_CONFIGS, True),
    (O.ALTER_CONFIGS, O.DESCRIBE, False), (O.DESCRIBE, O.READ, False), (O.ALL, O.CREATE, True),
    (O.ALL, O.ALTER_CONFIGS, True), (O.CREATE, O.DESCRIBE, False),
])
def test_implied_operations_as_kafka(store, granted, asked, expected):
    # Read/Write/Delete/Alter imply Describe; AlterConfigs implies DescribeConfigs; ALL all
    store.add([acl("t", granted)])
    assert Authorizer(store).authorize(ALICE, "h", asked, R.TOPIC, "t") is expected


def test_deny_wins_and_a_denied_read_still_describes(store):
    store.add([acl("t", O.ALL), acl("t", O.WRITE, DENY),
               acl("*", O.READ, DENY, principal="User:*", host="10.9.9.9")])
    auth = Authorizer(store)
    assert not auth.authorize(ALICE, "h", O.WRITE, R.TOPIC, "t")
    assert auth.authorize(ALICE, "h", O.READ, R.TOPIC, "t")
    assert not auth.authorize(ALICE, "10.9.9.9", O.READ, R.TOPIC, "t")    # host-scoped deny
    assert auth.authorize(ALICE, "10.9.9.9", O.DESCRIBE, R.TOPIC, "t")   # deny is not implied


def test_prefixed_and_wildcard_patterns(store):
    store.add([acl("sales-", O.READ, pattern=P.PREFIXED),
               acl("*", O.DESCRIBE, principal="User:*", rtype=R.GROUP)])
    auth = Authorizer(store)
    assert auth.authorize(ALICE, "h", O.READ, R.TOPIC, "sales-eu")
    assert not auth.authorize(ALICE, "h", O.READ, R.TOPIC, "sale")
    assert not auth.authorize(ALICE, "h", O.READ, R.TOPIC, "marketing")
    assert auth.authorize(BOB, "h", O.DESCRIBE, R.GROUP, "any-group")
    assert not auth.authorize(BOB, "h", O.READ, R.GROUP, "any-group")


def test_super_users_and_allow_everyone_if_no_acl_found(store):
    store.add([acl("guarded", O.READ)])
    config = {"super.users": "User:admin; User:CN=ops", "allow.everyone.if.no.acl.found": "true"}
    auth = authorizer_from_config(config, store)
    assert auth.authorize("User:admin", "h", O.DELETE, R.TOPIC, "guarded")
    assert auth.authorize("User:CN=ops", "h", O.ALTER, R.CLUSTER, "kafka-cluster")
    assert auth.authorize(BOB, "h", O.WRITE, R.TOPIC, "open")         # no ACL: everyone
    assert not auth.authorize(BOB, "h", O.READ, R.TOPIC, "guarded")   # an ACL exists
    assert not Authorizer(store).authorize(BOB, "h", O.WRITE, R.TOPIC, "open")  # default false


def test_authorize_by_resource_type_for_idempotent_producers(store):
    auth = Authorizer(store)
    assert not auth.authorize_any(ALICE, "h", O.WRITE, R.TOPIC)
    store.add([acl("x-", O.WRITE, pattern=P.PREFIXED)])
    assert auth.authorize_any(ALICE, "h", O.WRITE, R.TOPIC)
    store.add([acl("*", O.WRITE, DENY)])
    assert not auth.authorize_any(ALICE, "h", O.WRITE, R.TOPIC)


def test_authorized_operations_field(store):
    store.add([acl("t", O.READ), acl("t", O.DESCRIBE_CONFIGS)])
    field = Authorizer(store).operations(ALICE, "h", R.TOPIC, "t")
    assert field == (1 << O.READ) | (1 << O.DESCRIBE) | (1 << O.DESCRIBE_CONFIGS)


def test_acls_survive_a_restart_and_deletions_too(tmp_path):
    path = tmp_path / ACL_DIR
    s = AclStore(path)
    keep, drop = acl("a", O.READ), acl("b", O.WRITE, DENY, pattern=P.PREFIXED)
    s.add([keep, drop, keep])
    removed = s.remove([AclBindingFilter(permission=DENY)])
    assert removed == [[drop]]
    s.close()
    again = AclStore(path)
    assert again.find(AclBindingFilter()) == [keep]
    again.close()


def test_filters_as_kafkas_acl_binding_filter(store):
    lit, pre, star = acl("sales-eu", O.READ), acl("sales-", O.READ, pattern=P.PREFIXED), \
        acl("*", O.READ, principal=BOB)
    store.add([lit, pre, star])
    find = store.find
    assert set(find(AclBindingFilter(name="sales-eu", pattern_type=P.MATCH))) == {lit, pre, star}
    assert find(AclBindingFilter(name="sales-", pattern_type=P.ANY)) == [pre]
    assert find(AclBindingFilter(name="sales-eu", pattern_type=P.LITERAL)) == [lit]
    assert find(AclBindingFilter(principal=BOB)) == [star]
    assert find(AclBindingFilter(resource_type=R.GROUP)) == []


def test_invalid_bindings_are_named():
    assert "CLUSTER" in invalid_binding(acl("other", O.ALTER, rtype=R.CLUSTER))
    assert "principal" in invalid_binding(acl("t", O.READ, principal="alice"))
    assert "operation" in invalid_binding(acl("t", O.ANY))
    assert "pattern" in invalid_binding(acl("t", O.READ, pattern=P.MATCH))
    assert invalid_binding(acl("kafka-cluster", O.ALTER, rtype=R.CLUSTER)) is None


def test_authorizer_class_names():
    assert not authorizer_enabled({"authorizer.class.name": ""})
    assert authorizer_enabled(
        {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    assert authorizer_enabled({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(ValueError, match="not supported"):
        authorizer_enabled({"authorizer.class.name": "com.example.Custom"})
