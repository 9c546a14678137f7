"""SteadyFetch (a caught-up reader's prepared Fetch v12 frame) against request_frame: after any
number of stamps, the frame is byte for byte the one written for the body with those values."""

from __future__ import annotations

import copy
import random

import pytest

from kclient.protocol.fetch_one import client_header, request_frame
from kclient.protocol.fetch_steady import SteadyFetch


def _body(rng: random.Random) -> tuple[dict, list[tuple[str, int]]]:
    topics, order = [], []
    for t in range(rng.randint(1, 3)):
        name = f"topic-{t}-" + "x" * rng.randint(0, 200)
        parts = []
        for p in rng.sample(range(40), rng.randint(1, 4)):
            parts.append({"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20})
            order.append((name, p))
        topics.append({"topic": name, "partitions": parts})
    rng.shuffle(order)  # the caller's order need not be the body's grouping
    body = {
        "replica_id": -1,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 52428800,
        "isolation_level": rng.randint(0, 1),
        "session_id": rng.randrange(1 << 31),
        "session_epoch": 1,
        "topics": topics,
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return body, order


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("client_id", ["kclient", None, "ü" * 40])
def test_stamp_writes_what_request_frame_writes(seed: int, client_id: str | None) -> None:
    rng = random.Random(seed)
    body, order = _body(rng)
    header = client_header(client_id)
    steady = SteadyFetch("key", header, body, order)
    for _ in range(5):
        corr, wait, epoch = rng.randrange(1 << 31), rng.randrange(1 << 31), rng.randrange(1 << 31)
        offsets = [rng.randrange(1 << 62) for _ in order]
        expected = copy.deepcopy(body)
        expected.update(max_wait_ms=wait, session_epoch=epoch)
        at = dict(zip(order, offsets))
        for t in expected["topics"]:
            for p in t["partitions"]:
                p["fetch_offset"] = at[(t["topic"], p["partition"])]
        assert steady.stamp(corr, wait, epoch, offsets) == request_frame(corr, header, expected)


def test_an_order_naming_other_partitions_is_refused() -> None:
    body, order = _body(random.Random(1))
    with pytest.raises(ValueError, match="other partitions"):
        SteadyFetch("key", client_header("c"), body, order[:-1] + [("nowhere", 0)])
