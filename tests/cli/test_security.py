"""The CLI's security flags reach the connections: SASL_SSL with SCRAM and the CA file, and
-X for the same keys, against a mini-broker with SASL listeners."""

from tests.conftest import CliRunner
from tests.security.conftest import USERS, certs, sasl_broker  # noqa: F401  (fixtures)


def test_sasl_ssl_flags_and_x_keys(sasl_broker, certs):  # noqa: F811
    cli = CliRunner(sasl_broker.bootstrap_of("SASL_SSL"))
    flags = [
        "--security-protocol",
        "SASL_SSL",
        "--sasl-mechanism",
        "SCRAM-SHA-512",
        "--sasl-username",
        "alice",
        "--sasl-password",
        USERS["alice"],
        "--ssl-cafile",
        certs.ca,
    ]
    cli("topics", "create", "sec", "-p", "1", *flags, check=0)
    cli("produce", "sec", *flags, input=b"secret\n", check=0)
    assert cli.out("consume", "sec", "-o", "earliest", "-e", *flags) == "secret\n"
    x_keys = [
        "-X",
        "security.protocol=SASL_SSL",
        "-X",
        "sasl.mechanism=PLAIN",
        "-X",
        "sasl.username=bob",
        "-X",
        f"sasl.password={USERS['bob']}",
        "-X",
        f"ssl.ca.location={certs.ca}",
    ]
    assert cli.out("topics", "list", *x_keys).split() == ["sec"]
    wrong = flags[:-3] + ["wrong", "--ssl-cafile", certs.ca]
    done = cli("topics", "list", *wrong, check=1)
    assert b"Authentication" in done.stderr and b"Traceback" not in done.stderr
