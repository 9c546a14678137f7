"""delivery.timeout.ms (KIP-91): a message ends in a report within that long of send(),
however many retries ``message.send.max.retries`` would still allow."""

from __future__ import annotations

import threading
import time

import pytest

from kclient import Producer, ProducerData
from kclient.broker import MiniBroker
from kclient.cluster import Cluster
from kclient.config import load_config
from kclient.errors import FailedToSendMessageError, InvalidConfigError, KafkaTimeoutError
from kclient.protocol.apis import PRODUCE

from ..hostile import hostile_pair
from ..waiting import LOAD_SLACK


def test_config_default_floor_and_check():
    base = {"metadata.broker.list": "127.0.0.1:9092"}
    assert load_config("producer", base)["delivery.timeout.ms"] == 120000
    # not given: raised to linger + request timeout, as the Java producer does
    assert (
        load_config("producer", base, request_timeout_ms=200000, linger_ms=10)[
            "delivery.timeout.ms"
        ]
        == 200010
    )
    with pytest.raises(InvalidConfigError, match="delivery.timeout.ms") as info:
        load_config(
            "producer", base, delivery_timeout_ms=5000, request_timeout_ms=5000, linger_ms=100
        )
    assert info.value.key == "delivery.timeout.ms"


def _async(bootstrap: str, reports: list, done: threading.Event, **config) -> Producer:
    def on_delivery(r):
        reports.append((time.monotonic(), r))
        done.set()

    return Producer(
        {
            "metadata.broker.list": bootstrap,
            "producer.type": "async",
            "message.send.max.retries": 1000,
            "retry.backoff.ms": 100,
        },
        on_delivery=on_delivery,
        **config,
    )


def _expired(report) -> KafkaTimeoutError:
    err = report.error
    assert isinstance(err, KafkaTimeoutError), repr(err)
    assert "delivery.timeout.ms" in str(err) and err.__cause__ is not None
    return err


def test_unanswered_requests_expire(tmp_path):
    with hostile_pair(tmp_path / "b") as (proxy, _broker):
        with Cluster(proxy.bootstrap) as cluster:
            cluster.create_topic("t")
        proxy.arm("silent", {PRODUCE.key})
        reports: list = []
        done = threading.Event()
        p = _async(proxy.bootstrap, reports, done, request_timeout_ms=500, delivery_timeout_ms=3000)
        try:
            start = time.monotonic()
            p.send(ProducerData("t", b"x"))
            assert done.wait(15)
        finally:
            proxy.arm("pass")
            with pytest.raises(FailedToSendMessageError):
                p.close(timeout=5)
    at, report = reports[0]
    err = _expired(report)
    assert isinstance(err.__cause__, KafkaTimeoutError)  # the last request's timeout
    # the deadline, plus at most one request (1.5 s: request.timeout.ms + 1 s) in flight
    assert 3.0 <= at - start < 3.0 + 1.5 + 1.0, at - start
    assert report.attempts >= 2


def test_unknown_topic_expires_while_parked(tmp_path):
    with MiniBroker(
        log_dir=tmp_path / "b", config={"auto.create.topics.enable": "false"}
    ) as broker:
        reports: list = []
        done = threading.Event()
        p = _async(
            broker.bootstrap, reports, done, request_timeout_ms=1000, delivery_timeout_ms=2000
        )
        try:
            start = time.monotonic()
            p.send([ProducerData("missing", b"x"), ProducerData("missing", b"y")])
            assert done.wait(15)
        finally:
            with pytest.raises(FailedToSendMessageError):
                p.close(timeout=5)
    at, report = reports[0]
    _expired(report)
    assert len(report) == 2
    assert 1.5 <= at - start < 3.5, at - start


def test_sync_send_is_bounded_too(tmp_path):
    with hostile_pair(tmp_path / "b") as (proxy, _broker):
        with Cluster(proxy.bootstrap) as cluster:
            cluster.create_topic("t")
        proxy.arm("silent", {PRODUCE.key})
        with Producer(
            {
                "metadata.broker.list": proxy.bootstrap,
                "request.timeout.ms": 500,
                "delivery.timeout.ms": 2000,
                "message.send.max.retries": 1000,
                "retry.backoff.ms": 100,
            }
        ) as p:
            start = time.monotonic()
            with pytest.raises(FailedToSendMessageError) as info:
                p.send(ProducerData("t", b"x"))
            took = time.monotonic() - start
            proxy.arm("pass")
    assert isinstance(info.value.failed[0][1], KafkaTimeoutError)
    assert took < 2.0 + LOAD_SLACK, took  # delivery.timeout.ms, not 1000 retries
