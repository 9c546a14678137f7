"""The mini-broker's SASL users: salted SCRAM credentials (Kafka's salt, stored key, server key,
iterations), never the password, from a file or ``kclient broker --sasl-user``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import subprocess
import sys

import pytest

from kclient.broker import MiniBroker
from kclient.broker.sasl import CredentialStore
from kclient.broker.server import main as broker_main
from kclient.connection import BrokerConnection, ConnectionSettings
from kclient.errors import SaslAuthenticationError
from kclient.security import SecuritySettings


def _login(address, mechanism, user, password):
    host, port = address.rsplit(":", 1)
    sec = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }
    BrokerConnection(
        host, int(port), ConnectionSettings(security=SecuritySettings.from_keys(sec))
    ).connect().close()


def test_the_file_holds_salted_keys_not_passwords(tmp_path):
    store = CredentialStore()
    store.add_user("alice", "correct horse")
    path = tmp_path / "users.json"
    store.save(path)
    text = path.read_text()
    assert "correct horse" not in text
    entry = json.loads(text)["users"]["alice"]
    assert set(entry) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert set(entry["SCRAM-SHA-512"]) == {"salt", "stored_key", "server_key", "iterations"}
    assert entry["SCRAM-SHA-512"]["iterations"] >= 4096
    for mechanism, name in (("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")):
        # Kafka's ScramCredential (RFC 5802): stored key H(HMAC(salted, "Client Key")), server
        # key HMAC(salted, "Server Key"), salted = PBKDF2(password, salt, iterations)
        each = {k: entry[mechanism][k] for k in ("salt", "stored_key", "server_key")}
        salt, stored, server = (base64.b64decode(each[k]) for k in each)
        assert len(salt) >= 16 and b"correct horse" not in salt + stored + server
        salted = hashlib.pbkdf2_hmac(name, b"correct horse", salt, entry[mechanism]["iterations"])
        client_key = hmac.new(salted, b"Client Key", name).digest()
        assert stored == hashlib.new(name, client_key).digest()
        assert server == hmac.new(salted, b"Server Key", name).digest()
    assert path.stat().st_mode & 0o077 == 0
    loaded = CredentialStore.load(path)
    assert loaded.check_plain("alice", "correct horse")
    assert not loaded.check_plain("alice", "wrong")


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_broker_reads_its_users_from_the_file(tmp_path, mechanism):
    store = CredentialStore()
    store.add_user("alice", "pw-a")
    store.save(tmp_path / "users.json")
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.credentials.file": str(tmp_path / "users.json"),
    }
    with MiniBroker(log_dir=tmp_path / "b", config=config) as broker:
        _login(broker.bootstrap, mechanism, "alice", "pw-a")
        with pytest.raises(SaslAuthenticationError):
            _login(broker.bootstrap, mechanism, "alice", "pw-b")


def test_a_malformed_file_is_refused_naming_it(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="sasl.credentials.file .*bad.json"):
        MiniBroker(
            log_dir=tmp_path / "b",
            config={
                "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.credentials.file": str(tmp_path / "bad.json"),
            },
        )


def test_the_command_line_writes_and_serves_users(tmp_path):
    path = tmp_path / "users.json"
    assert (
        broker_main(
            [
                "--log-dir",
                str(tmp_path),
                "--sasl-user",
                "bob:pw-b",
                "--write-credentials",
                str(path),
            ]
        )
        == 0
    )
    assert CredentialStore.load(path).check_plain("bob", "pw-b")
    cmd = [
        sys.executable,
        "-m",
        "kclient.broker",
        "--log-dir",
        str(tmp_path / "d"),
        "--port",
        "0",
        "--config",
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "--sasl-user",
        "eve:pw-e",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        address = re.search(r"listening on (\S+)", line).group(1)
        _login(address, "SCRAM-SHA-512", "eve", "pw-e")
    finally:
        proc.terminate()
        proc.wait(20)
