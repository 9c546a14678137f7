"""AdminClient.create_acls / describe_acls / delete_acls against a mini-broker enforcing ACLs."""

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
from kclient.connection import ConnectionSettings
from kclient.errors import (
    ClusterAuthorizationFailedError,
    InvalidRequestError,
    SecurityDisabledError,
    TopicAuthorizationFailedError,
)
from kclient.security import SecuritySettings

USERS = {"admin": "admin-pw", "alice": "alice-pw"}


def _keys(user):
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


def _admin(broker, user):
    settings = ConnectionSettings(security=SecuritySettings.from_keys(_keys(user)))
    return AdminClient(broker.bootstrap, settings=settings)


@pytest.fixture
def broker(tmp_path):
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "authorizer.class.name": "kclient",
        "super.users": "User:admin",
    }
    with MiniBroker(log_dir=tmp_path / "b", config=config, sasl_users=USERS) as b:
        b.create_topic("events")
        yield b


def _write(
    topic, principal="User:alice", permission=AclPermissionType.ALLOW, pattern=PatternType.LITERAL
):
    return AclBinding(
        ResourceType.TOPIC, topic, pattern, principal, "*", AclOperation.WRITE, permission
    )


def _produce(broker, user):
    with Producer(
        {"bootstrap.servers": broker.bootstrap, "message.send.max.retries": 1, **_keys(user)}
    ) as p:
        p.send(ProducerData("events", b"x"))


def test_create_describe_delete(broker):
    with _admin(broker, "admin") as admin:
        admin.create_acls([_write("events"), _write("ev", pattern=PatternType.PREFIXED)])
        assert set(admin.describe_acls()) == {
            _write("events"),
            _write("ev", pattern=PatternType.PREFIXED),
        }
        only_prefixed = AclBindingFilter(pattern_type=PatternType.PREFIXED)
        assert admin.describe_acls(only_prefixed) == [_write("ev", pattern=PatternType.PREFIXED)]
        _produce(broker, "alice")
        assert admin.delete_acls([AclBindingFilter(resource_type=ResourceType.TOPIC)]) != [[]]
        assert admin.describe_acls() == []
    with pytest.raises(TopicAuthorizationFailedError):
        _produce(broker, "alice")


def test_errors_are_typed(broker, tmp_path):
    with _admin(broker, "alice") as admin:
        with pytest.raises(ClusterAuthorizationFailedError, match="creating ACL"):
            admin.create_acls([_write("events")])
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.describe_acls()
    with _admin(broker, "admin") as admin:
        with pytest.raises(InvalidRequestError, match="principal"):
            admin.create_acls([_write("events", principal="alice")])
    with MiniBroker(log_dir=tmp_path / "open") as plain:
        with AdminClient(plain.bootstrap) as admin, pytest.raises(SecurityDisabledError):
            admin.describe_acls()
