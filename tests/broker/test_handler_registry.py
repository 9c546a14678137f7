"""Handler registration: every handler module declares its API and served versions, and the
broker's ApiVersions answer and version checks come from those declarations alone."""

from __future__ import annotations

import dataclasses

import pytest

from kclient.broker import MiniBroker
from kclient.broker.handlers import HANDLER_MODULES, HANDLERS, handles, served_versions
from kclient.protocol import apis
from kclient.protocol.errors import UnsupportedVersionError


def test_every_handler_module_registers_one_api():
    registered = {r.handle.__module__ for r in HANDLERS.values()}
    assert registered == {m.__name__ for m in HANDLER_MODULES}
    for registration in HANDLERS.values():
        api = registration.api
        assert apis.APIS[api.key] is api
        assert (
            api.min_version
            <= registration.min_version
            <= registration.max_version
            <= api.max_version
        )


def test_api_versions_answer_is_the_registrations(mini_broker, raw_client):
    client = raw_client(mini_broker.bootstrap)
    for version in range(4):
        body = client.request(apis.API_VERSIONS, version, {})
        got = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
        assert got == {a.key: r for a, r in served_versions().items()}


def test_registration_refuses_versions_outside_the_definition():
    with pytest.raises(ValueError, match="outside"):
        handles(apis.METADATA, f"0-{apis.METADATA.max_version + 1}")
    with pytest.raises(ValueError, match="already has a handler"):
        handles(apis.METADATA, "0-1")(lambda broker, request: None)


def test_a_narrower_served_range_is_what_the_broker_accepts(monkeypatch, tmp_path, raw_client):
    narrow = dataclasses.replace(HANDLERS[apis.METADATA], max_version=5)
    monkeypatch.setitem(HANDLERS, apis.METADATA, narrow)
    with MiniBroker(log_dir=tmp_path) as broker:
        client = raw_client(broker.bootstrap)
        keys = client.request(apis.API_VERSIONS, 3, {}).api_keys
        assert [(k.min_version, k.max_version) for k in keys if k.api_key == 3] == [(0, 5)]
        assert client.request(apis.METADATA, 5, {"topics": []}).topics == []
        client.send(apis.METADATA, 6, {"topics": []})
        with pytest.raises(ConnectionError):
            client.receive()  # Kafka closes the connection on an unsupported version
        # an ApiVersions version the broker does not serve: error 35 and the ranges, as v0
        narrow_av = dataclasses.replace(HANDLERS[apis.API_VERSIONS], max_version=2)
        monkeypatch.setitem(HANDLERS, apis.API_VERSIONS, narrow_av)
    with MiniBroker(log_dir=tmp_path) as broker:
        client = raw_client(broker.bootstrap)
        client.send(apis.API_VERSIONS, 3, {})
        _, body = client.receive()
        assert body.error_code == UnsupportedVersionError.errno
        assert (18, 0, 2) in {(k.api_key, k.min_version, k.max_version) for k in body.api_keys}
