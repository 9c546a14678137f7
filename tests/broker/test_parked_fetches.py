"""A long-poll fetch parked on the broker lets go of everything when its connection closes.

Before, 10,000 abandoned long polls stayed parked until their ``max_wait_ms`` (RSS 36 -> 117
MB) and every append to the partition called all of them (produce latency 0.4 -> 18 ms)."""

from kclient.broker import MiniBroker
from kclient.protocol.apis import FETCH
from kclient.protocol.framing import ClientProtocol

from .limits_support import connect, wait_until
from .test_server import produce


def _long_poll(bootstrap: str, topic: str):
    """A connection with a Fetch parked for ten minutes on an empty partition."""
    proto = ClientProtocol("long-poll")
    body = {
        "replica_id": -1,
        "max_wait_ms": 600000,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
    }
    _, frame = proto.send_request(FETCH, 4, body)
    sock = connect(bootstrap)
    sock.sendall(frame)
    return sock


def test_abandoned_long_polls_release_watchers_and_timers(mini_broker, raw_client):
    broker: MiniBroker = mini_broker
    broker.create_topic("quiet")
    timers = broker.scheduler.pending()
    for _ in range(4):
        socks = [_long_poll(broker.bootstrap, "quiet") for _ in range(500)]
        assert wait_until(lambda: broker.watchers.count() == 500, 20), broker.watchers.count()
        assert broker.scheduler.pending() == timers + 500
        for s in socks:
            s.close()
        assert wait_until(lambda: broker.watchers.count() == 0, 10), broker.watchers.count()
    assert broker.scheduler.pending() == timers
    # a live long poll still completes on append
    client = raw_client(broker.bootstrap)
    live = _long_poll(broker.bootstrap, "quiet")
    assert wait_until(lambda: broker.watchers.count() == 1, 10)
    assert produce(client, "quiet", [b"wake"]).error_code == 0
    assert wait_until(lambda: broker.watchers.count() == 0, 10)
    live.settimeout(10)
    assert live.recv(65536)
    live.close()
