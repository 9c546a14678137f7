"""The mini-broker's named listeners: several at once, each advertised for its own clients, and
fail closed: a secured listener without its material refuses to start, naming what is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kclient.broker import MiniBroker
from kclient.broker.server import main as broker_main
from kclient.cluster import Cluster

from .conftest import FAST_GROUPS, tls_broker_config


@pytest.mark.parametrize(
    "config,missing",
    [
        ({"listeners": "SSL://127.0.0.1:0"}, "ssl.keystore.location"),
        ({"listeners": "SASL_SSL://127.0.0.1:0"}, "ssl.keystore.location"),
        (
            {
                "listeners": "EXTERNAL://127.0.0.1:0",
                "listener.security.protocol.map": "EXTERNAL:SSL",
            },
            "ssl.keystore.location",
        ),
        ({"listeners": "EXTERNAL://127.0.0.1:0"}, "listener.security.protocol.map"),
        (
            {
                "listeners": "SSL://127.0.0.1:0",
                "ssl.keystore.type": "JKS",
                "ssl.keystore.location": "/x.jks",
            },
            "ssl.keystore.type=JKS is not supported",
        ),
        (
            {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": "/nonexistent.pem"},
            "ssl.keystore.location '/nonexistent.pem' cannot be loaded",
        ),
        (
            {
                "listeners": "PLAINTEXT://127.0.0.1:0",
                "listener.security.protocol.map": "PLAINTEXT:TLS",
            },
            "listener.security.protocol.map",
        ),
        (
            {"listeners": "PLAINTEXT://127.0.0.1:0", "inter.broker.listener.name": "INTERNAL"},
            "inter.broker.listener.name INTERNAL",
        ),
    ],
)
def test_a_listener_without_its_material_refuses_to_start(tmp_path, config, missing):
    with pytest.raises(ValueError, match=missing):
        MiniBroker(log_dir=tmp_path / "b", config=config)


def test_client_auth_required_needs_a_truststore(tmp_path, certs):
    config = tls_broker_config(certs, **{"ssl.client.auth": "required"})
    del config["ssl.truststore.location"]
    with pytest.raises(ValueError, match="ssl.client.auth=required needs ssl.truststore.location"):
        MiniBroker(log_dir=tmp_path / "b", config=config)


def test_the_command_line_refuses_an_ssl_listener_without_a_keystore(tmp_path, capsys):
    code = broker_main(
        ["--log-dir", str(tmp_path), "--port", "0", "--config", "listeners=SSL://127.0.0.1:0"]
    )
    assert code == 2
    assert "ssl.keystore.location is not set" in capsys.readouterr().err  # stderr since 828ed52


def test_the_command_line_serves_tls(tmp_path, certs):
    cmd = [
        sys.executable,
        "-m",
        "kclient.broker",
        "--log-dir",
        str(tmp_path / "d"),
        "--port",
        "0",
    ] + [
        arg
        for key, value in tls_broker_config(certs).items()
        for arg in ("--config", f"{key}={value}")
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "listening on" in line, line
    finally:
        proc.terminate()
        proc.wait(20)


def test_named_listeners_are_advertised_per_listener(tmp_path, certs):
    config = {
        **tls_broker_config(certs),
        "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "advertised.listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://proxy.example:9999",
        "inter.broker.listener.name": "INTERNAL",
        **FAST_GROUPS,
    }
    with MiniBroker(log_dir=tmp_path / "b", config=config) as broker:
        assert [each.name for each in broker.listeners] == ["INTERNAL", "EXTERNAL"]
        assert broker.endpoint("EXTERNAL") == ("proxy.example", 9999)
        assert (broker.advertised_host, broker.advertised_port) == tuple(
            broker.bootstrap_of("INTERNAL").split(":")[:1]
        ) + (broker.listeners[0].port,)
        with Cluster(broker.bootstrap_of("EXTERNAL")) as cluster:
            cluster.refresh([])
            (only,) = cluster.brokers.values()
            assert (only.host, only.port) == ("proxy.example", 9999)
        with Cluster(broker.bootstrap_of("INTERNAL")) as cluster:
            cluster.refresh([])
            (only,) = cluster.brokers.values()
            assert f"{only.host}:{only.port}" == broker.bootstrap_of("INTERNAL")


def test_listeners_keep_their_ports_across_a_restart(tmp_path, certs):
    broker = MiniBroker(log_dir=tmp_path / "b", config=tls_broker_config(certs))
    broker.start()
    try:
        before = [broker.bootstrap_of("PLAINTEXT"), broker.bootstrap_of("SSL")]
        broker.stop()
        broker.start()
        assert [broker.bootstrap_of("PLAINTEXT"), broker.bootstrap_of("SSL")] == before
    finally:
        broker.close()
