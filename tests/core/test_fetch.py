"""The fetch pipeline's conversation (kclient.core.fetch) through both drivers, on the mini-broker:
partitions at offsets decoded in request order, an oversized first entry grown and bounded
(and ``may_grow``, the drivers' shortcut past that step, true exactly when it acts), an offset
out of range and an unknown partition reported by name, bad requests refused."""

from __future__ import annotations

import pytest

from kclient.core.fetch import (
    FetchSettings,
    PartitionFetch,
    fetch,
    fetch_body,
    grow_oversized,
    may_grow,
    needs_reset,
    next_fetches,
    read_response,
)
from kclient.core.steps import Request
from kclient.errors import MessageSizeTooLargeError, UnknownTopicOrPartitionError
from kclient.protocol.apis import FETCH, PRODUCE
from kclient.protocol.records import build_batch

VALUES = [b"v%03d" % i for i in range(60)]


def produce_body(topic, partition, values):
    """A Produce request (acks -1) writing ``values`` as one v2 batch."""
    return {
        "acks": -1,
        "timeout_ms": 10000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [{"index": partition, "records": build_batch(values)}],
            }
        ],
    }


def produce(topic, partition, values):
    """A conversation step writing ``values`` as one v2 batch; returns the base offset."""
    resp = yield Request(PRODUCE, produce_body(topic, partition, values))
    part = resp.responses[0].partition_responses[0]
    assert part.error_code == 0, part
    return part.base_offset


@pytest.fixture
def topic(mini_broker):
    mini_broker.create_topic("fetched", 2)
    return "fetched"


def produce_then_fetch(
    topic,
    partitions,
    settings,
    batches=((0, VALUES[:30]), (1, VALUES[30:])),
    version=None,
    sent=None,
):
    for p, values in batches:
        yield from produce(topic, p, values)
    conversation = fetch(partitions, settings, version=version)
    answer = None
    try:
        while True:  # pass the fetch's steps through, counting them
            step = conversation.send(answer)
            if sent is not None:
                sent.append(step)
            answer = yield step
    except StopIteration as done:
        return done.value


def test_partitions_come_back_decoded_in_request_order(drive, topic):
    asked = [PartitionFetch(topic, 1, 5), PartitionFetch(topic, 0, 28)]
    sets = drive(lambda: produce_then_fetch(topic, asked, FetchSettings(max_wait_ms=0)))
    assert [(s.partition, s.fetch_offset, s.high_watermark, s.error) for s in sets] == [
        (1, 5, 30, None),
        (0, 28, 30, None),
    ]
    assert [m.value for m in sets[0]] == VALUES[35:]
    assert [(m.offset, m.value) for m in sets[1]] == [(28, VALUES[28]), (29, VALUES[29])]
    assert [s.next_offset for s in sets] == [30, 30]


def produce_then_answer(topic, partitions, settings, batches, version=None):
    """The raw Fetch answer to ``partitions`` after ``batches`` were written, and its sets."""
    for p, values in batches:
        yield from produce(topic, p, values)
    resp = yield Request(FETCH, fetch_body(partitions, settings), version)
    return resp, read_response(resp, partitions, settings)


def test_the_next_fetch_is_read_off_the_headers_only_while_every_partition_has_more(drive, topic):
    small = 200  # bytes per partition: the answer stops well short of the end
    asked = [PartitionFetch(topic, 0, 0, small), PartitionFetch(topic, 1, 0, small)]
    batches = [(p, VALUES[i : i + 5]) for p in (0, 1) for i in range(0, 30, 5)]  # 6 each
    settings = FetchSettings(max_wait_ms=0)
    resp, sets = drive(lambda: produce_then_answer(topic, asked, settings, batches))
    nxt = next_fetches(asked, resp, 0)
    assert nxt is not None  # from the headers: where decoding ends
    assert [(r.partition, r.offset, r.max_bytes) for r in nxt] == [
        (p, s.next_offset, small) for p, s in zip((0, 1), sets)
    ]
    assert all(0 < r.offset < 30 for r in nxt)
    caught_up = [PartitionFetch(topic, 0, 0, small), PartitionFetch(topic, 1, 29)]
    resp, sets = drive(lambda: produce_then_answer(topic, caught_up, settings, ()))
    assert sets[1].next_offset == 30 and next_fetches(caught_up, resp, 0) is None
    # a partition with an error, or no complete entry, makes the next request unpredictable
    gone = [PartitionFetch(topic, 0, 0, small), PartitionFetch("nosuch", 0, 0)]
    resp, sets = drive(lambda: produce_then_answer(topic, gone, settings, ()))
    assert sets[1].error is not None and next_fetches(gone, resp, 0) is None
    tiny = [PartitionFetch(topic, 0, 0, 20)]  # less than one entry (Fetch v2: none of it)
    resp, sets = drive(lambda: produce_then_answer(topic, tiny, settings, (), 2))
    assert not sets[0].entries and next_fetches(tiny, resp, 0) is None


def test_an_oversized_first_entry_is_fetched_again_larger(drive, topic):
    # Fetch v2 (before KIP-74) sends nothing of an entry larger than the partition's size
    big = [b"x" * 3000]
    asked = [PartitionFetch(topic, 0, 0, 100)]
    sent: list[Request] = []
    sets = drive(
        lambda: produce_then_fetch(
            topic, asked, FetchSettings(max_wait_ms=0), ((0, big),), version=2, sent=sent
        )
    )
    assert [m.value for m in sets[0]] == big
    sizes = [s.body["topics"][0]["partitions"][0]["partition_max_bytes"] for s in sent]
    assert sizes[0] == 100 and len(sizes) >= 2 and sizes[-1] >= 3000


def test_past_max_buffer_size_the_partition_fails_naming_the_size(drive, topic):
    asked = [PartitionFetch(topic, 0, 0, 100), PartitionFetch(topic, 1, 0)]
    settings = FetchSettings(max_wait_ms=0, max_buffer_size=1000)
    sets = drive(
        lambda: produce_then_fetch(topic, asked, settings, ((0, [b"x" * 3000]), (1, VALUES[:3])))
    )
    err = sets[0].error
    assert isinstance(err, MessageSizeTooLargeError)
    assert (err.topic, err.partition, err.offset) == (topic, 0, 0)
    assert "max_buffer_size=1000" in str(err)
    assert [m.value for m in sets[1]] == VALUES[:3]  # the other partition is unharmed


def answered(topic, asked, settings, version=None):
    """Values written to partitions 0 (one 3000-byte entry) and 1 (five small ones), then one
    Fetch's message sets as they arrive (before any growth)."""
    yield from produce(topic, 0, [b"x" * 3000])
    yield from produce(topic, 1, VALUES[:5])
    return (yield from fetched(asked, settings, version))


def fetched(asked, settings, version=None):
    """One Fetch's message sets (no growth)."""
    resp = yield Request(FETCH, fetch_body(asked, settings), version)
    return read_response(resp, asked, settings)


@pytest.mark.parametrize(
    ("asked", "bound", "version", "grows"),
    [
        ([PartitionFetch("fetched", 0, 0), PartitionFetch("fetched", 1, 0)], 1 << 20, None, False),
        ([PartitionFetch("fetched", 1, 0), PartitionFetch("fetched", 0, 0, 100)], 1 << 20, 2, True),
        ([PartitionFetch("fetched", 0, 0, 100)], 1000, None, True),  # over the bound, whole
        ([PartitionFetch("fetched", 0, 99), PartitionFetch("fetched", 9, 0)], 1 << 20, None, False),
    ],
    ids=["whole-entries", "v2-cut-entry", "past-bound", "errors"],
)
def test_may_grow_is_true_exactly_when_grow_oversized_acts(
    drive, topic, asked, bound, version, grows
):
    settings = FetchSettings(max_wait_ms=0, max_buffer_size=bound)
    results = drive(lambda: answered(topic, asked, settings, version))
    grown = list(results)
    retry = grow_oversized(asked, grown, {i: r.max_bytes for i, r in enumerate(asked)}, settings)
    acts = bool(retry) or any(a is not b for a, b in zip(grown, results))
    assert acts is grows
    assert may_grow(asked, results, settings) is grows


def test_may_grow_is_false_at_the_end_of_the_log(drive, topic):
    settings = FetchSettings(max_wait_ms=0)
    end = drive(lambda: answered(topic, [PartitionFetch(topic, 1, 0)], settings))[0].high_watermark
    asked = [PartitionFetch(topic, 1, end)]
    results = drive(lambda: fetched(asked, settings))
    assert not results[0].entries and results[0].error is None
    assert grow_oversized(asked, list(results), {0: asked[0].max_bytes}, settings) == []
    assert may_grow(asked, results, settings) is False


def test_out_of_range_and_unknown_partitions_name_themselves(drive, topic):
    asked = [PartitionFetch(topic, 0, 500), PartitionFetch(topic, 7, 0)]
    sets = drive(lambda: produce_then_fetch(topic, asked, FetchSettings(max_wait_ms=0)))
    out, unknown = sets[0].error, sets[1].error
    assert needs_reset(out) and f"{topic}-0 at offset 500" in str(out)
    assert (out.topic, out.partition, out.offset) == (topic, 0, 500)
    assert isinstance(unknown, UnknownTopicOrPartitionError) and not needs_reset(unknown)
    assert f"{topic}-7" in str(unknown)


def test_bad_requests_are_refused_before_anything_is_sent():
    with pytest.raises(ValueError, match="t-0 is listed twice"):
        next(fetch([("t", 0, 0), ("t", 0, 5)], FetchSettings()))
    with pytest.raises(ValueError, match="fetch size 0 for t-1 is not positive"):
        next(fetch([("t", 1, 0, 0)], FetchSettings()))


def test_the_request_carries_the_memory_bounds_and_isolation():
    body = fetch_body(
        [
            PartitionFetch("a", 0, 3, 1000),
            PartitionFetch("a", 1, 4, 2000),
            PartitionFetch("b", 0, 5, 500),
        ],
        FetchSettings(max_wait_ms=250, min_bytes=10, isolation_level=1),
    )
    assert (body["max_wait_ms"], body["min_bytes"], body["isolation_level"]) == (250, 10, 1)
    assert body["max_bytes"] == 3500  # no fetch.max.bytes: the sum of the partitions'
    assert [
        (
            t["topic"],
            [
                (p["partition"], p["fetch_offset"], p["partition_max_bytes"])
                for p in t["partitions"]
            ],
        )
        for t in body["topics"]
    ] == [("a", [(0, 3, 1000), (1, 4, 2000)]), ("b", [(0, 5, 500)])]
    bounded = fetch_body([PartitionFetch("a", 0, 3, 1000)], FetchSettings(max_bytes=600))
    assert bounded["max_bytes"] == 600
