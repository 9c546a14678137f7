"""Issue 24, row 15: the README's front door is Producer.produce and kclient.Consumer (then the
asyncio twins, the classic API, ZooKeeper last), and its first example runs as written."""

from __future__ import annotations

import contextlib
import io
import pathlib
import re

README = pathlib.Path(__file__).parent.parent / "README.md"


def _blocks() -> list[str]:
    text = README.read_text().split("## Using it", 1)[1]
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_front_door_comes_first_and_zookeeper_last():
    blocks = _blocks()
    first = blocks[0]
    assert "p.produce(" in first and "with Consumer(" in first
    assert "AIOProducer" in blocks[1] and "AIOConsumer" in blocks[1]
    zk = [i for i, b in enumerate(blocks) if "zookeeper.connect" in b]
    classic = [i for i, b in enumerate(blocks) if "ProducerData" in b or "SimpleConsumer" in b]
    assert zk and classic and max(classic) < min(zk) == len(blocks) - 2  # then the mini-broker
    text = README.read_text()
    assert "Which to use:" in text and text.index("Which to use:") < text.index("zookeeper.connect")


def test_the_first_example_runs_as_written(mini_broker):
    mini_broker.create_topic("events", partitions=1)
    source = _blocks()[0].replace("127.0.0.1:9092", mini_broker.bootstrap)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines == ["RecordMetadata('events', 0, 0)", "events 0 0 b'user-1' b'hello'"]
