"""The mini-broker's fetch session cache (kclient.broker.fetch_sessions), as Kafka keeps it:
slots, eviction of a stale session, of a smaller old one, never of a young one; and on a
running broker, a client that finds no slot fetches sessionless."""

from __future__ import annotations

from types import SimpleNamespace as NS

from kclient.broker.fetch_sessions import EVICTION_MS, FetchSessionCache
from kclient.connection import BrokerConnection
from kclient.core.fetch import PartitionFetch
from kclient.io.fetcher import Fetcher

EVICT_S = EVICTION_MS / 1000


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _full(cache: FetchSessionCache, partitions: int, replica: int = -1) -> int:
    """A full fetch of ``partitions`` partitions: the new session's id (0: none made)."""
    parts = [NS(partition=p, fetch_offset=0, partition_max_bytes=100) for p in range(partitions)]
    body = NS(
        topics=[NS(topic="t", partitions=parts)],
        session_id=0,
        session_epoch=0,
        replica_id=replica,
        forgotten_topics_data=[],
    )
    ctx = cache.context(body, 12)
    answer = {
        "error_code": 0,
        "responses": [
            {
                "topic": "t",
                "partitions": [
                    {
                        "partition_index": p,
                        "error_code": 0,
                        "high_watermark": 0,
                        "log_start_offset": 0,
                        "records": b"",
                    }
                    for p in range(partitions)
                ],
            }
        ],
    }
    return ctx.answer(answer)["session_id"]


def test_sessions_take_free_slots_then_none_is_made():
    clock = Clock()
    cache = FetchSessionCache(2, clock=clock)
    a, b = _full(cache, 3), _full(cache, 3)
    assert a and b and a != b
    assert _full(cache, 10) == 0  # both young: not evicted, however small
    assert len(cache) == 2 and cache.evictions == 0


def test_a_stale_session_is_evicted_first():
    clock = Clock()
    cache = FetchSessionCache(2, clock=clock)
    a = _full(cache, 5)
    clock.now += 1
    b = _full(cache, 1)
    clock.now += EVICT_S + 0.5  # a unused longer than the eviction time
    c = _full(cache, 1)
    assert c and a not in cache and b in cache and cache.evictions == 1


def test_an_old_smaller_session_makes_room_for_a_larger_one():
    clock = Clock()
    cache = FetchSessionCache(2, clock=clock)
    a, b = _full(cache, 2), _full(cache, 4)
    clock.now += EVICT_S + 1
    for sid in (a, b):  # both used just now: none stale
        cache._sessions[sid].last_used = clock.now
    assert _full(cache, 1) == 0  # smaller than the smallest: no room
    c = _full(cache, 3)
    assert c and a not in cache and b in cache


def test_a_replica_evicts_a_young_consumer_session():
    cache = FetchSessionCache(1, clock=Clock())
    a = _full(cache, 8)
    assert _full(cache, 1, replica=1) and a not in cache


def test_without_a_slot_a_fetcher_reads_sessionless(tmp_path):
    from kclient.broker import MiniBroker

    cfg = {"max.incremental.fetch.session.cache.slots": "1"}
    with MiniBroker(log_dir=tmp_path / "mb", config=cfg) as mb:
        mb.create_topic("one-slot", 2)
        host, port = mb.bootstrap.rsplit(":", 1)
        with BrokerConnection(host, int(port)) as c1, BrokerConnection(host, int(port)) as c2:
            first = Fetcher(c1, session=True, max_wait_ms=0)
            second = Fetcher(c2, session=True, max_wait_ms=0)
            asked = [PartitionFetch("one-slot", p, 0) for p in range(2)]
            for _ in range(2):
                first.fetch(asked)
                second.fetch(asked)
            assert first.session.id != 0 and first.session.incremental_requests == 1
            assert second.session.id == 0 and second.session.full_requests == 2
            first.close()  # the slot is free again
            second.fetch(asked)
            assert second.session.id != 0
