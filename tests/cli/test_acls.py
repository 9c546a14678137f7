"""``kclient acls`` against a mini-broker enforcing ACLs (SASL/SCRAM; admin is a super user)."""

from tests.conftest import CliRunner
from tests.security.conftest import ACL_USERS, acl_broker  # noqa: F401  (fixture)


def _as(user):
    return [
        "--security-protocol",
        "SASL_PLAINTEXT",
        "--sasl-mechanism",
        "SCRAM-SHA-256",
        "--sasl-username",
        user,
        "--sasl-password",
        ACL_USERS[user],
    ]


def _rows(text):
    return [line.split() for line in text.splitlines() if line.startswith(("TOPIC ", "GROUP "))]


def test_add_list_remove_and_they_are_enforced(acl_broker):  # noqa: F811
    cli = CliRunner(acl_broker.bootstrap)
    admin = _as("admin")
    assert cli("produce", "orders", *_as("alice"), input=b"x\n").returncode == 1
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
            "orders",
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
        "g",
        "--resource-pattern-type",
        "prefixed",
        *admin,
        check=0,
    )
    cli("produce", "orders", *_as("alice"), input=b"x\n", check=0)
    assert _rows(cli.out("acls", "list", *admin)) == [
        ["TOPIC", "orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"],
        ["TOPIC", "orders", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW"],
        ["GROUP", "g", "PREFIXED", "User:bob", "*", "ALL", "DENY"],
    ]
    assert _rows(cli.out("acls", "list", "--principal", "User:bob", *admin)) == [
        ["GROUP", "g", "PREFIXED", "User:bob", "*", "ALL", "DENY"]
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
            "orders",
            *admin,
        )
        == "removed 1 ACL(s)\n"
    )
    assert cli("produce", "orders", *_as("alice"), input=b"y\n").returncode == 1
    denied = cli("acls", "list", *_as("alice"), check=1)
    assert b"ClusterAuthorizationFailedError" in denied.stderr
    assert b"--operation" in cli("acls", "add", "--topic", "t", *admin, check=2).stderr
    assert (
        b"one of"
        in cli(
            "acls",
            "add",
            "--allow-principal",
            "User:a",
            "--operation",
            "Fly",
            "--topic",
            "t",
            *admin,
            check=2,
        ).stderr
    )
