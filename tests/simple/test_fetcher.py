"""The reusable Fetcher on its own: partitions at offsets over one connection."""

import time

import pytest

from kclient import connection
from kclient.connection import BrokerConnection
from kclient.errors import CorruptRecordError, OffsetOutOfRangeError
from kclient.io import fetcher
from kclient.protocol.records import RecordsReader, build_batch
from kclient.simple import Fetcher, PartitionFetch
from tests.needs import c_twin
from tests.simple.segments import flip, segment
from tests.waiting import wait_until

VALUES = [b"v%03d" % i for i in range(120)]


@pytest.fixture
def loaded(target):
    topic = target.topic(partitions=3)
    for p in range(3):
        target.produce_values(topic, p, VALUES[p * 40 : (p + 1) * 40], batch=8)
    conn = BrokerConnection(target.host, target.port)
    conn.connect()
    yield target, topic, conn
    conn.close()


def test_fetch_partitions_decoded_with_high_watermarks(loaded):
    target, topic, conn = loaded
    f = Fetcher(conn, prefetch=False)
    sets = f.fetch(
        [PartitionFetch(topic, 2, 5), PartitionFetch(topic, 0, 0), PartitionFetch(topic, 1, 39)]
    )
    assert [(s.partition, s.fetch_offset, s.high_watermark) for s in sets] == [
        (2, 5, 40),
        (0, 0, 40),
        (1, 39, 40),
    ]
    assert [m.value for m in sets[0]] == VALUES[85:120]
    assert [m.value for m in sets[1]] == VALUES[0:40]
    assert [m.offset for m in sets[2]] == [39]
    assert f.requests_sent == 1


def test_send_and_receive_split_the_round_trip(loaded):
    target, topic, conn = loaded
    f = Fetcher(conn)
    first = f.send([PartitionFetch(topic, 0, 0, 64)])
    second = f.send([PartitionFetch(topic, 1, 0, 64)])
    b, a = f.receive(second), f.receive(first)
    assert [m.value for m in a[0]][:1] == [VALUES[0]]
    assert [m.value for m in b[0]][:1] == [VALUES[40]]


def test_per_partition_errors_carry_topic_partition_offset(mini):
    topic = mini.topic()
    mini.produce_values(topic, 0, VALUES[:3], batch=3)
    with BrokerConnection(mini.host, mini.port) as conn:
        sets = Fetcher(conn).fetch([PartitionFetch(topic, 0, 77)])
    err = sets[0].error
    assert isinstance(err, OffsetOutOfRangeError)
    assert (err.topic, err.partition, err.offset) == (topic, 0, 77)
    with pytest.raises(OffsetOutOfRangeError):
        list(sets[0])


def test_speculative_fetch_used_only_when_asked_for_and_fresh(loaded):
    target, topic, conn = loaded
    f = Fetcher(conn, prefetch_max_age_ms=50)
    first = f.fetch([PartitionFetch(topic, 0, 0, 100)])[0]
    nxt = first.next_offset
    assert 0 < nxt < 40
    second = f.fetch([PartitionFetch(topic, 0, nxt, 100)])[0]
    assert f.prefetch_hits == 1 and [m.offset for m in second][0] == nxt
    pending = f._speculative  # the speculative fetch for the third step, until too old
    assert pending is not None
    wait_until(lambda: time.monotonic() - pending.sent_at > f.prefetch_max_age, 5, "stale")
    third = f.fetch([PartitionFetch(topic, 0, second.next_offset, 100)])[0]
    assert f.prefetch_hits == 1 and f.prefetch_misses == 1
    assert [m.offset for m in third][0] == second.next_offset


def test_duplicate_partition_is_refused(loaded):
    target, topic, conn = loaded
    with pytest.raises(ValueError):
        Fetcher(conn).fetch([PartitionFetch(topic, 0, 0), PartitionFetch(topic, 0, 5)])


def steady_reads(host: str, port: int, topic: str, send) -> Fetcher:
    """A caught-up reader of ``topic``'s partitions 0 and 1 in a fetch session: each round
    ``send(partition, value)`` writes one value and the reader fetches it.  Returns the
    fetcher after checking every value came, in order, each round's request the usual one
    (sent from the prepared frame) once the session settled, and the session never restarted
    (a wrong epoch or offset would make the broker refuse it, and the next request full)."""
    conn = BrokerConnection(host, port)
    conn.connect()
    f = Fetcher(conn, session=True, max_wait_ms=0, prefetch=False)
    offsets, got = [0, 0], {0: [], 1: []}
    rounds = [(0, 1)] * 6 + [(0,)] + [(0, 1)] * 3  # one round with news in partition 0 only
    for i, parts in enumerate(rounds):
        for p in parts:
            send(p, b"r%02d-p%d" % (i, p))
        f.max_wait_ms = 0 if i % 2 else 1  # a moving max_wait_ms is written in, too
        asked = [PartitionFetch(topic, p, offsets[p], 1 << 16) for p in (0, 1)]
        for p, ms in enumerate(f.fetch(asked)):
            got[p] += [m.value for m in ms]
            offsets[p] = ms.next_offset if ms.entries else offsets[p]
    conn.close()
    assert got[0] == [b"r%02d-p0" % i for i in range(10)]
    assert got[1] == [b"r%02d-p1" % i for i in range(10) if i != 6]
    assert f.session.full_requests == 1  # the session lasted
    # full, then incremental (the frame kept), then from the frame except after the round
    # with no news in partition 1 (its offset did not move: that request is built)
    assert f.session.steady_requests == len(rounds) - 3
    return f


def test_a_caught_up_reader_sends_its_usual_request_from_a_prepared_frame(mini):
    topic = mini.topic(partitions=2)
    steady_reads(mini.host, mini.port, topic, lambda p, v: mini.produce_values(topic, p, [v]))


@pytest.mark.parametrize("plain", [False, True], ids=["fetch", "complete_plain"])
def test_the_next_request_goes_out_before_decoding_and_a_bad_crc_drops_it(mini, plain):
    """The next Fetch is read off the answer's entry headers and sent before the answer is
    decoded: past a batch whose CRC is bad too, whose records never come; the caller's next
    request (at the bad batch) then drops that speculative answer unused."""
    topic = mini.topic()
    for i in range(5):
        mini.produce(topic, 0, build_batch([b"payload-%d-%d" % (i, j) for j in range(10)]))
    path = segment(mini, topic)
    spans = RecordsReader(path.read_bytes()).entries
    third = spans[2]  # offsets 20..29
    flip(path, third.position + third.size - 5)  # inside its last value
    size = third.position + third.size  # the answer from 0 ends with the bad batch
    with BrokerConnection(mini.host, mini.port) as conn:
        f = Fetcher(conn, session=plain)
        started = f.begin([PartitionFetch(topic, 0, 0, size)])
        sets = f.complete_plain(started) if plain else f.complete(started)
        assert isinstance(sets, list)  # the plain lane declines the bad CRC
        assert f.requests_sent == 2
        assert f._speculative is not None
        assert f._speculative.key == (PartitionFetch(topic, 0, 30, size),)
        got = []
        with pytest.raises(CorruptRecordError) as info:
            for mo in sets[0]:
                got.append(mo.offset)
        assert got == list(range(20)) and info.value.offset == 20
        again = f.fetch([PartitionFetch(topic, 0, 20, size)])[0]
        assert f.prefetch_hits == 0 and f.prefetch_misses == 1
        with pytest.raises(CorruptRecordError):
            list(again)


def test_the_next_request_is_on_the_wire_when_decoding_starts(mini, monkeypatch):
    """The order itself, in the caught-up reader's lane: a large answer with more waiting at
    the broker has its next request written before decoding starts; a small one is decoded
    first, then its next request goes out only when more waits (a caught-up poll sends none)."""
    import kclient.io.fetcher as fetcher_module

    topic = mini.topic()
    big = [bytes([i]) * 4096 for i in range(40)]  # 8 per batch: about 32 KiB each
    for i in range(0, 40, 8):
        mini.produce(topic, 0, build_batch(big[i : i + 8]))
    seen = []
    real = fetcher_module.plain_answer
    with BrokerConnection(mini.host, mini.port) as conn:
        f = Fetcher(conn, session=True)

        def decode(*args):
            seen.append(f.requests_sent)
            return real(*args)

        monkeypatch.setattr(fetcher_module, "plain_answer", decode)
        size = 3 * 34000  # about three batches: over DECODE_FIRST_BYTES
        first = f.complete_plain(f.begin([PartitionFetch(topic, 0, 0, size)]))
        assert type(first) is tuple  # the plain lane: (columns, bytes)
        assert first[1] >= fetcher_module.DECODE_FIRST_BYTES
        nxt = first[0].next_offset
        assert 0 < nxt < 40 and seen == [2]  # the request ahead went out before decoding
        assert f._speculative is not None and f._speculative.key[0].offset == nxt
        f.discard_prefetch()
        small = f.complete_plain(f.begin([PartitionFetch(topic, 0, 8, 5000)]))
        assert small[1] < fetcher_module.DECODE_FIRST_BYTES and small[0].next_offset == 16
        assert seen[1:] == [3] and f.requests_sent == 4  # decoded first, then sent ahead
        assert f._speculative is not None and f._speculative.key[0].offset == 16
        f.discard_prefetch()
        last = f.complete_plain(f.begin([PartitionFetch(topic, 0, 32, 5000)]))
        assert last[0].next_offset == 40 == last[0].high_watermark
        assert f.requests_sent == 5 and f._speculative is None  # caught up: nothing ahead


@c_twin(connection._sock, "the C socket calls")
def test_after_a_large_answer_the_next_is_read_behind_and_all_come_in_order(mini, monkeypatch):
    # (the mini-broker: tansu's answers never let the next request go ahead, nothing to read)
    topic = mini.topic(partitions=3)
    values = [[b"p%d-%03d" % (p, i) for i in range(200)] for p in range(3)]
    for p in range(3):
        mini.produce_values(topic, p, values[p], batch=8)
    monkeypatch.setattr(fetcher, "READ_BEHIND_BYTES", 1)  # every answer counts as large
    with BrokerConnection(mini.host, mini.port) as conn:
        f = Fetcher(conn)
        offsets, got = [0, 0, 0], [[], [], []]
        while any(o < 200 for o in offsets):
            sets = f.fetch([PartitionFetch(topic, p, offsets[p], 300) for p in range(3)])
            for p, ms in enumerate(sets):
                got[p] += [m.value for m in ms]
                offsets[p] = ms.next_offset
        assert got == values
        assert f.reads_behind >= 2 and f.prefetch_hits >= 2
        assert f.reads_behind <= f.requests_sent - 1
        f.discard_prefetch()
        assert conn._behind is None and conn.in_flight == 0
