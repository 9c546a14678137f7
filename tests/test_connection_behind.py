"""``BrokerConnection.read_behind``: the next answer read on a helper thread in C (GIL
released) while the caller works, then taken over by ``receive``.  On the mini-broker, and
behind a hostile proxy for answers that stop, lie about their size or never come: each ends
as the same answer or the same error a read on the caller's thread gives."""

from __future__ import annotations

import threading
import time

import pytest

import kclient.connection as connection
from kclient.connection import BrokerConnection
from kclient.core.fetch import FetchSettings, PartitionFetch, fetch_body
from kclient.errors import KafkaConnectionError, KafkaTimeoutError
from kclient.protocol.apis import FETCH, METADATA
from kclient.protocol.records import build_batch
from kclient.protocol.records.reader import read_records
from tests.broker.txn_support import produce
from tests.hostile import hostile_pair
from tests.needs import c_twin

pytestmark = c_twin(connection._sock, "the C socket calls")

BIG = [bytes([i]) * 100_000 for i in range(12)]  # ~1.2 MB in one partition


def connect(address: str, **overrides) -> BrokerConnection:
    host, port = address.rsplit(":", 1)
    return BrokerConnection(host, int(port), **overrides).connect()


def send_fetch(conn, offset=0, wait_ms=0):
    settings = FetchSettings(max_wait_ms=wait_ms)
    return conn.send(FETCH, fetch_body([PartitionFetch("w", 0, offset, 4 << 20)], settings), 12)


def values(resp):
    part = resp.responses[0].partitions[0]
    return [r.value for r in read_records(bytes(part.records))[0]], part.high_watermark


@pytest.fixture
def loaded(mini_broker):
    load(mini_broker)
    return mini_broker


def load(broker):
    broker.create_topic("w", 1)
    for i in range(0, len(BIG), 4):
        assert produce(broker, "w", 0, [], batch=build_batch(BIG[i : i + 4])).error_code == 0


def test_an_answer_read_behind_equals_one_read_here(loaded):
    with connect(loaded.bootstrap) as conn:
        here = values(conn.receive(send_fetch(conn)))
        before = conn.stats.responses, conn.stats.bytes_in
        corr = send_fetch(conn)
        assert conn.read_behind(8 << 20)
        helper = conn._behind
        assert not conn.read_behind(8 << 20)  # one at a time
        behind = values(conn.receive(corr))
        assert helper.result == (4, conn.stats.bytes_in - before[1] - 4)  # all read there
        assert behind == here == (BIG, 12)
        assert conn._behind is None and conn.stats.responses == before[0] + 1
        assert conn.stats.bytes_in - before[1] > 1_200_000
        assert conn.request(METADATA, {"topics": []}).brokers and conn.in_flight == 0


def test_a_frame_larger_than_the_buffer_is_read_here(loaded):
    with connect(loaded.bootstrap) as conn:
        corr = send_fetch(conn)
        assert conn.read_behind(1000)  # only the size prefix is read behind
        assert values(conn.receive(corr)) == (BIG, 12)
        assert conn.request(METADATA, {"topics": []}).brokers and conn.in_flight == 0


def test_another_answer_first_is_kept_for_its_caller(loaded):
    with connect(loaded.bootstrap) as conn:
        meta = conn.send(METADATA, {"topics": []})
        corr = send_fetch(conn)
        assert conn.read_behind(8 << 20)  # reads Metadata's answer, the first to come
        assert values(conn.receive(corr)) == (BIG, 12)
        assert conn.receive(meta).brokers and conn.in_flight == 0


def test_the_fetch_answer_first_is_kept_when_another_is_asked_for(loaded):
    with connect(loaded.bootstrap) as conn:
        corr = send_fetch(conn)
        meta = conn.send(METADATA, {"topics": []})
        assert conn.read_behind(8 << 20)
        assert conn.receive(meta).brokers
        assert values(conn.receive(corr)) == (BIG, 12) and conn.in_flight == 0


def test_not_started_without_the_c_reader_or_with_an_answer_waiting(loaded, monkeypatch):
    with connect(loaded.bootstrap) as conn:
        corr = send_fetch(conn)
        monkeypatch.setattr(connection, "_sock", None)
        assert not conn.read_behind(8 << 20)
        monkeypatch.undo()
        meta = conn.send(METADATA, {"topics": []})
        assert values(conn.receive(corr)) == (BIG, 12)
        time.sleep(0.2)
        conn._rbuf[:1] = b"\0"
        conn._rend = 1  # a byte read ahead here: the helper would read past it
        assert not conn.read_behind(8 << 20)
        conn._rend = 0
        assert conn.receive(meta).brokers


def test_close_wakes_the_caller_waiting_for_it(loaded):
    with connect(loaded.bootstrap) as conn:
        corr = send_fetch(conn, offset=12, wait_ms=20_000)  # nothing there: a long poll
        assert conn.read_behind(8 << 20)
        threading.Timer(0.3, conn.close).start()
        start = time.monotonic()
        with pytest.raises(KafkaConnectionError, match="closed by the client"):
            conn.receive(corr)
        assert time.monotonic() - start < 5
        helper = [t for t in threading.enumerate() if t.name == "kclient-read-behind"]
        for t in helper:
            t.join(5)
            assert not t.is_alive()


@pytest.mark.parametrize(
    "mode, error, match",
    [
        ("short", KafkaConnectionError, "bad response"),
        ("long", KafkaTimeoutError, "no complete response"),
    ],
)
def test_a_lying_size_prefix_fails_as_it_does_here(tmp_path, mode, error, match):
    with hostile_pair(tmp_path) as (hostile, broker):
        load(broker)
        with connect(hostile.bootstrap, request_timeout_ms=1500) as conn:
            hostile.arm(mode, {FETCH.key})
            corr = send_fetch(conn)
            assert conn.read_behind(8 << 20)
            start = time.monotonic()
            with pytest.raises(error, match=match):
                conn.receive(corr)
            assert time.monotonic() - start < 10
            assert not conn.connected


def test_a_cut_while_reading_behind_is_closed_by_the_broker(tmp_path):
    with hostile_pair(tmp_path) as (hostile, broker):
        broker.create_topic("w", 1)
        with connect(hostile.bootstrap) as conn:
            hostile.arm("silent", {FETCH.key})
            corr = send_fetch(conn)
            assert conn.read_behind(8 << 20)
            threading.Timer(0.3, hostile.cut).start()
            with pytest.raises(KafkaConnectionError, match="closed by the broker"):
                conn.receive(corr)
