"""SimpleConsumer.metrics() against known traffic (issue 15)."""

from __future__ import annotations

import json
import time

from kclient import Producer, ProducerData
from kclient.simple import FetchRequest, SimpleConsumer


def test_fetch_counts_and_lag(mini_broker):
    mini_broker.create_topic("sm", partitions=1)
    with Producer({"metadata.broker.list": mini_broker.bootstrap}) as p:
        p.send([ProducerData("sm", b"v%02d" % i) for i in range(30)])
    host, port = mini_broker.bootstrap.rsplit(":", 1)
    got: list = []
    with SimpleConsumer(
        host,
        int(port),
        client_id="sm-test",
        prefetch=False,
        stats_cb=got.append,
        statistics_interval_ms=20,
    ) as c:
        ms = c.fetch(FetchRequest("sm", 0, 10, 1 << 20))
        assert [m.offset for m in ms][:1] == [10]
        c.multifetch([FetchRequest("sm", 0, 25, 1 << 20), FetchRequest("nope", 0, 0, 1024)])
        m = c.metrics()
        deadline = time.monotonic() + 5
        while not got and time.monotonic() < deadline:
            time.sleep(0.01)
    (broker,) = m["brokers"].values()
    assert broker["requests_by_api"]["Fetch"] == 2
    assert broker["requests"] == broker["responses"] == sum(broker["requests_by_api"].values())
    assert broker["bytes_in"] > 20 * 3 and broker["state"] == "UP"
    assert c.metrics()["brokers"][mini_broker.bootstrap]["state"] == "DOWN"  # closed
    assert m["partitions"]["sm/0"] == {
        "topic": "sm",
        "partition": 0,
        "fetch_offset": 25,
        "high_watermark": 30,
        "lag": 5,
    }
    assert m["errors_by_code"] == {"UNKNOWN_TOPIC_OR_PARTITION": 1}
    assert m["client_id"] == "sm-test" and m["type"] == "simple_consumer"
    assert got and json.loads(got[0])["type"] == "simple_consumer"
