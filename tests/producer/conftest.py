"""Helpers for producer tests: read a partition back, check reports against the log."""

from __future__ import annotations

import threading

import pytest

from kclient.cluster import Cluster
from kclient.producer import CallbackHandler, DeliveryReport
from kclient.protocol.apis import FETCH
from kclient.protocol.records import RecordsReader


def read_partition(bootstrap: str, topic: str, partition: int, max_wait_ms: int = 100) -> list:
    """Every record of ``topic``/``partition`` from offset 0 to the high watermark."""
    with Cluster(bootstrap) as cluster:
        cluster.refresh([topic])
        out: list = []
        offset = 0
        while True:
            leader = cluster.leader_for(topic, partition)
            conn = cluster.connection(leader.node_id)
            body = {
                "replica_id": -1,
                "max_wait_ms": max_wait_ms,
                "min_bytes": 1,
                "max_bytes": 8 << 20,
                "isolation_level": 0,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {
                                "partition": partition,
                                "fetch_offset": offset,
                                "partition_max_bytes": 8 << 20,
                            }
                        ],
                    }
                ],
            }
            resp = conn.request(FETCH, body)
            part = resp.responses[0].partitions[0]
            assert part.error_code == 0, part.error_code
            records = [r for r in RecordsReader(part.records or b"") if r.offset >= offset]
            out += records
            if records:
                offset = records[-1].offset + 1
            if offset >= part.high_watermark:
                return out


def read_topic(bootstrap: str, topic: str) -> dict:
    """partition -> records."""
    with Cluster(bootstrap) as cluster:
        parts = cluster.partitions_for(topic)
    return {p: read_partition(bootstrap, topic, p) for p in parts}


def assert_reports_match_log(bootstrap: str, reports: list) -> int:
    """Every acknowledged message is in the log at the offset its report names; returns count."""
    logs: dict = {}
    checked = 0
    for r in reports:
        if r.error is not None or r.base_offset < 0:
            continue
        key = (r.topic, r.partition)
        if key not in logs:
            logs[key] = {rec.offset: rec for rec in read_partition(bootstrap, r.topic, r.partition)}
        log = logs[key]
        for msg, offset in r:
            rec = log.get(offset)
            assert rec is not None, f"{r.topic}/{r.partition}@{offset} missing for {msg!r}"
            assert bytes(rec.value) == msg.value, (offset, rec.value, msg.value)
            if msg.key is not None:
                assert bytes(rec.key) == msg.key
            checked += 1
    return checked


class Recorder(CallbackHandler):
    """A CallbackHandler that records every hook call (name, detail) in order."""

    def __init__(self) -> None:
        self.calls: list = []
        self.lock = threading.Lock()
        self.reports: list = []

    def _note(self, *item) -> None:
        with self.lock:
            self.calls.append(item)

    def init(self, config) -> None:
        self._note("init")

    def before_enqueue(self, data):
        self._note("before_enqueue", data.value)
        return data

    def after_enqueue(self, data, added):
        self._note("after_enqueue", data.value, added)

    def after_dequeuing_existing_data(self, data):
        self._note("after_dequeuing_existing_data", data.value)
        return [data]

    def before_sending_data(self, batch):
        self._note("before_sending_data", [d.value for d in batch])
        return batch

    def on_delivery(self, report: DeliveryReport) -> None:
        self._note("on_delivery", [m.value for m in report.messages], report.error is None)
        self.reports.append(report)

    def last_batch_before_close(self):
        self._note("last_batch_before_close")
        return []

    def close(self) -> None:
        self._note("close")

    def names(self) -> list:
        return [c[0] for c in self.calls]


@pytest.fixture
def recorder():
    return Recorder()
