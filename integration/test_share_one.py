"""kclient.protocol.share_one reads real Kafka 4.x ShareFetch and ShareAcknowledge answers into
what the generic schema decoder reads from them (the reference), and writes the requests as
the generic encoder does, through a member that accepts, releases, rejects (redeliveries:
delivery counts above 1), commits between fetches and behind them, and closes its session."""

from __future__ import annotations

from typing import Any

import pytest

from integration.helpers import new_topic
from integration.share_scenarios import conf, new_group, produce
from kclient import AcknowledgeType, ShareConsumer
from kclient.protocol import framing, share_one
from kclient.protocol.apis import SHARE_ACKNOWLEDGE, SHARE_FETCH


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, bytes, int]]:
    """Every share answer the fast readers are given: (api key, version, frame, body start)."""
    got: list[tuple[int, int, bytes, int]] = []
    reader_for = share_one.reader_for

    def recording(key: int, version: int) -> Any:
        reader = reader_for(key, version)
        assert reader is not None, (key, version)

        def read(view: memoryview, pos: int) -> Any:
            got.append((key, version, bytes(view), pos))
            return reader(view, pos)

        return read

    monkeypatch.setattr(share_one, "reader_for", recording)
    return got


@pytest.fixture
def requests(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, Any, bytes | None]]:
    """Every share request the fast writer is given: (api key, version, body, its frame)."""
    got: list[tuple[int, int, Any, bytes | None]] = []
    request_frame = share_one.request_frame

    def recording(key: int, version: int, corr: int, header: bytes, body: Any) -> Any:
        frame = request_frame(key, version, corr, header, body)
        got.append((key, version, body, frame))
        return frame

    monkeypatch.setattr(share_one, "request_frame", recording)
    return got


def test_the_fast_codec_reads_and_writes_as_the_generic_one(kafka4, answers, requests):
    topic = new_topic(kafka4, partitions=2)
    produce(kafka4.bootstrap, topic, 40, 2)
    group = new_group(kafka4.bootstrap)
    config = conf(kafka4.bootstrap, group, **{"share.acknowledgement.mode": "explicit"})
    kinds = (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT)
    seen: list[tuple[int, int, int]] = []
    with ShareConsumer(config, topic) as c:
        for i in range(40):
            records = c.poll(0.5)
            for r in records:
                seen.append((r.partition, r.offset, r.delivery_count))
                c.acknowledge(r, kinds[(r.offset + i) % 3] if r.delivery_count < 3 else kinds[0])
            if records and i % 2:
                c.commit_sync()
            again = any(n > 1 for _, _, n in seen)
            if not records and again and len({(p, o) for p, o, _ in seen}) == 40:
                break  # each delivered, some again, and nothing more to come
    assert max(n for _, _, n in seen) >= 2, "no record was delivered again"
    apis = {SHARE_FETCH.key: SHARE_FETCH, SHARE_ACKNOWLEDGE.key: SHARE_ACKNOWLEDGE}
    keys = {key for key, *_ in answers}
    assert keys == set(apis), keys
    with_records = 0
    readers = {
        (SHARE_FETCH.key, 1): share_one.read_share_fetch,
        (SHARE_FETCH.key, 2): share_one.read_share_fetch,
        (SHARE_ACKNOWLEDGE.key, 1): share_one.read_share_acknowledge_v1,
        (SHARE_ACKNOWLEDGE.key, 2): share_one.read_share_acknowledge,
    }
    for key, version, frame, pos in answers:
        got = readers[key, version](memoryview(frame), pos)
        assert got is not None, (key, version, frame)
        assert got == apis[key].decode_response(version, memoryview(frame), pos)
        with_records += any(p.get("records") for t in got.responses for p in t.partitions)
    assert with_records >= 2
    for key, version, body, frame in requests:  # each written fast, as the generic encoder does
        assert frame is not None, (key, version, body)
        corr = int.from_bytes(frame[8:12], "big")
        client_id = frame[14 : 14 + int.from_bytes(frame[12:14], "big")].decode()
        parts = framing._encode_request_header(apis[key], version, corr, client_id)
        assert frame == framing._frame(parts + apis[key].encode_request(version, body))
    assert {key for key, *_ in requests} == set(apis)
