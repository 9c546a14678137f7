"""ZookeeperConsumerConnector against a real ZooKeeper and a 3-broker MiniCluster in it."""

import json
import re
import socket
import threading
import time

import pytest

from kclient import consumer
from kclient.errors import ConsumerRebalanceFailedError, ConsumerTimeoutError
from kclient.zkutils import registration_json

from ..waiting import LOAD_SLACK
from .conftest import zk_config
from .helpers import drain, owners, produce, produce_spread, wait_for, znode

pytestmark = pytest.mark.zookeeper


def test_consumer_id_format(zookeeper, zk_cluster, unique, connectors):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=1)
    c = connectors(zk_config(zookeeper, g))
    host = re.escape(socket.gethostname())
    assert re.fullmatch(rf"{g}_{host}-\d{{13}}-[0-9a-f]{{8}}", c.consumer_id)
    c2 = connectors(zk_config(zookeeper, g, **{"consumer.id": "fixed"}))
    assert c2.consumer_id == f"{g}_fixed"


def test_registration_owners_and_offsets_byte_for_byte(
    zookeeper, zk_cluster, zk, unique, connectors
):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=3)
    values = produce_spread(zk_cluster.bootstrap, t, 3, 4)
    c = connectors(zk_config(zookeeper, g, **{"consumer.id": "c1"}))
    streams = c.create_message_streams({t: 2})
    reg = znode(zk, f"/consumers/{g}/ids/{g}_c1")
    assert re.fullmatch(
        rf'\{{"version":1,"subscription":\{{"{t}":2\}},"pattern":"static",'
        r'"timestamp":"\d{13}"\}',
        reg,
    ), reg
    stat = zk.exists(f"/consumers/{g}/ids/{g}_c1")
    assert stat.ephemeralOwner != 0
    # range: 3 partitions over threads c1-0, c1-1 -> 0,1 to -0 and 2 to -1
    assert owners(zk, g) == {(t, 0): f"{g}_c1-0", (t, 1): f"{g}_c1-0", (t, 2): f"{g}_c1-1"}
    assert zk.exists(f"/consumers/{g}/owners/{t}/0").ephemeralOwner != 0
    got = drain(streams[t][0], 8) + drain(streams[t][1], 4)
    assert {m.message.decode() for m in got} == values
    c.commit_offsets()
    for p in range(3):
        assert znode(zk, f"/consumers/{g}/offsets/{t}/{p}") == "4"
        assert zk.exists(f"/consumers/{g}/offsets/{t}/{p}").ephemeralOwner == 0  # persistent
    # the broker registry the consumer read: Kafka 3.x's layout, which 0.8 readers take too
    assert json.loads(znode(zk, "/brokers/ids/0"))["host"] == "127.0.0.1"
    assert json.loads(znode(zk, f"/brokers/topics/{t}"))["partitions"] == {
        "0": [0],
        "1": [1],
        "2": [2],
    }
    c.shutdown()
    assert owners(zk, g) == {}
    assert zk.get_children(f"/consumers/{g}/ids") == []
    assert [znode(zk, f"/consumers/{g}/offsets/{t}/{p}") for p in range(3)] == ["4"] * 3


def test_golden_tables_as_members_join_and_leave(zookeeper, zk_cluster, zk, unique, connectors):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=5)
    a = connectors(zk_config(zookeeper, g, **{"consumer.id": "a"}))
    a.create_message_streams({t: 2})
    assert owners(zk, g) == {
        (t, 0): f"{g}_a-0",
        (t, 1): f"{g}_a-0",
        (t, 2): f"{g}_a-0",
        (t, 3): f"{g}_a-1",
        (t, 4): f"{g}_a-1",
    }
    b = connectors(zk_config(zookeeper, g, **{"consumer.id": "b"}))
    b.create_message_streams({t: 1})
    # 5 partitions, threads a-0, a-1, b-0: 2, 2, 1
    expected = {
        (t, 0): f"{g}_a-0",
        (t, 1): f"{g}_a-0",
        (t, 2): f"{g}_a-1",
        (t, 3): f"{g}_a-1",
        (t, 4): f"{g}_b-0",
    }
    wait_for(lambda: owners(zk, g) == expected, message="owners after b joined")
    wait_for(lambda: a.owned_partitions() == {k: v for k, v in expected.items() if "_a-" in v})
    assert b.owned_partitions() == {(t, 4): f"{g}_b-0"}
    b.shutdown()
    wait_for(
        lambda: (
            owners(zk, g)
            == {
                (t, 0): f"{g}_a-0",
                (t, 1): f"{g}_a-0",
                (t, 2): f"{g}_a-0",
                (t, 3): f"{g}_a-1",
                (t, 4): f"{g}_a-1",
            }
        ),
        message="owners after b left",
    )
    assert zk.get_children(f"/consumers/{g}/ids") == [f"{g}_a"]


def test_thread_ids_sort_as_strings_in_zookeeper(zookeeper, zk_cluster, zk, unique, connectors):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=12)
    x = connectors(zk_config(zookeeper, g, **{"consumer.id": "x"}))
    x.create_message_streams({t: 11})
    y = connectors(zk_config(zookeeper, g, **{"consumer.id": "y"}))
    y.create_message_streams({t: 1})
    order = [f"{g}_x-{i}" for i in (0, 1, 10, 2, 3, 4, 5, 6, 7, 8, 9)] + [f"{g}_y-0"]
    expected = {(t, p): order[p] for p in range(12)}
    wait_for(lambda: owners(zk, g) == expected, message="string-sorted thread ids")
    assert owners(zk, g)[(t, 2)] == f"{g}_x-10"


def test_roundrobin_in_zookeeper(zookeeper, zk_cluster, zk, unique, connectors):
    g, t1, t2 = unique("g"), unique("rr"), unique("rr")
    zk_cluster.create_topic(t1, partitions=3)
    zk_cluster.create_topic(t2, partitions=3)
    conf = {"partition.assignment.strategy": "roundrobin"}
    a = connectors(zk_config(zookeeper, g, **conf, **{"consumer.id": "a"}))
    a.create_message_streams({t1: 1, t2: 1})
    b = connectors(zk_config(zookeeper, g, **conf, **{"consumer.id": "b"}))
    b.create_message_streams({t1: 1, t2: 1})
    expected = consumer.roundrobin_assign(
        {t1: [f"{g}_a-0", f"{g}_b-0"], t2: [f"{g}_a-0", f"{g}_b-0"]}, {t1: [0, 1, 2], t2: [0, 1, 2]}
    )
    wait_for(lambda: owners(zk, g) == expected, message="round-robin owners")
    assert set(expected.values()) == {f"{g}_a-0", f"{g}_b-0"}


def test_consumer_timeout_is_resumable(zookeeper, zk_cluster, unique, connectors):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=1)
    c = connectors(zk_config(zookeeper, g, **{"consumer.timeout.ms": 200}))
    s = c.create_message_streams({t: 1})[t][0]
    start = time.monotonic()
    with pytest.raises(ConsumerTimeoutError):
        next(s)
    assert 0.15 < time.monotonic() - start < 0.2 + LOAD_SLACK
    produce(zk_cluster.bootstrap, t, [b"after-timeout"])
    m = wait_for(lambda: _try_next(s), message="message after a timeout")
    assert m.message == b"after-timeout" and m.offset == 0 and m.partition == 0


def _try_next(s):
    try:
        return next(s)
    except ConsumerTimeoutError:
        return None


def test_shutdown_ends_every_stream_iteration(zookeeper, zk_cluster, unique, connectors):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=2)
    c = connectors(zk_config(zookeeper, g, **{"consumer.timeout.ms": -1}))
    streams = c.create_message_streams({t: 3})[t]
    ended = []
    threads = [threading.Thread(target=lambda s=s: ended.append(len(list(s)))) for s in streams]
    for th in threads:
        th.start()
    wait_for(
        lambda: all(th.is_alive() for th in threads) and len(c.fetcher.owned()) == 2,
        message="three readers blocked while both partitions are fetched",
    )
    c.shutdown()
    for th in threads:
        th.join(10)
    assert len(ended) == 3 and not any(th.is_alive() for th in threads)
    with pytest.raises(StopIteration):
        next(streams[0])


def test_reset_policies_and_decoders(zookeeper, zk_cluster, unique, connectors):
    t = unique("t")
    zk_cluster.create_topic(t, partitions=1)
    produce(zk_cluster.bootstrap, t, [b"old-1", b"old-2"], key=b"k")
    latest = connectors(zk_config(zookeeper, unique("g"), **{"auto.offset.reset": "largest"}))
    s_latest = latest.create_message_streams({t: 1})[t][0]
    smallest = connectors(
        zk_config(
            zookeeper,
            unique("g"),
            **{
                "auto.offset.reset": "smallest",
                "value.decoder.class": "string",
                "key.decoder.class": "string",
            },
        )
    )
    s_small = smallest.create_message_streams({t: 1})[t][0]
    wait_for(lambda: latest.fetcher.owned() == [(t, 0)])
    wait_for(
        lambda: latest.registry[(t, 0)].fetched_offset == 2,
        message="the latest-reset consumer has looked up its offset",
    )
    produce(zk_cluster.bootstrap, t, [b"new-1"], key=b"k")
    assert [m.message for m in drain(s_latest, 1)] == [b"new-1"]
    got = drain(s_small, 3)
    assert [(m.key, m.message, m.offset) for m in got] == [
        ("k", "old-1", 0),
        ("k", "old-2", 1),
        ("k", "new-1", 2),
    ]
    assert got[0].topic == t and got[0].timestamp > 0 and got[0].headers == []


def test_auto_commit_on_an_interval(zookeeper, zk_cluster, zk, unique, connectors):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=2)
    produce_spread(zk_cluster.bootstrap, t, 2, 3)
    c = connectors(
        zk_config(zookeeper, g, **{"auto.commit.enable": True, "auto.commit.interval.ms": 200})
    )
    s = c.create_message_streams({t: 1})[t][0]
    assert len(drain(s, 6)) == 6
    wait_for(
        lambda: [znode(zk, f"/consumers/{g}/offsets/{t}/{p}") for p in (0, 1)] == ["3", "3"],
        message="auto-committed offsets",
    )


@pytest.mark.parametrize("storage", ["kafka", "dual"])
def test_offsets_in_kafka_and_dual(zookeeper, zk_cluster, zk, unique, connectors, storage):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=2)
    produce_spread(zk_cluster.bootstrap, t, 2, 5)
    conf = {"offsets.storage": "kafka", "dual.commit.enabled": storage == "dual"}
    c = connectors(zk_config(zookeeper, g, **conf))
    s = c.create_message_streams({t: 1})[t][0]
    got = drain(s, 6)
    assert len(got) == 6
    c.commit_offsets()
    committed = {}
    for m in got:
        committed[m.partition] = m.offset + 1
    c.shutdown()
    zk_offsets = {p: znode(zk, f"/consumers/{g}/offsets/{t}/{p}") for p in (0, 1)}
    if storage == "dual":
        assert zk_offsets == {
            p: str(committed.get(p, 0)) if p in committed else None for p in (0, 1)
        }
    else:
        assert zk_offsets == {0: None, 1: None}
    # a new member of the group resumes from the offsets kept by the coordinator
    c2 = connectors(
        zk_config(zookeeper, g, **{"offsets.storage": "kafka", "dual.commit.enabled": False})
    )
    rest = drain(c2.create_message_streams({t: 1})[t][0], 4)
    assert len(rest) == 4
    assert {(m.partition, m.offset) for m in rest}.isdisjoint(
        {(m.partition, m.offset) for m in got}
    )


def test_dual_fetch_takes_the_larger_offset(zookeeper, zk_cluster, zk, unique, connectors):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=1)
    produce(zk_cluster.bootstrap, t, [f"v{i}".encode() for i in range(6)])
    zk.create(f"/consumers/{g}/offsets/{t}/0", b"4", makepath=True)  # migrated from ZooKeeper
    c = connectors(
        zk_config(zookeeper, g, **{"offsets.storage": "kafka", "dual.commit.enabled": True})
    )
    got = drain(c.create_message_streams({t: 1})[t][0], 2)
    assert [m.offset for m in got] == [4, 5]


def test_whitelist_sees_a_topic_created_while_running(
    zookeeper, zk_cluster, zk, unique, connectors
):
    g, prefix = unique("g"), unique("wl")
    zk_cluster.create_topic(f"{prefix}-a", partitions=2)
    zk_cluster.create_topic(unique("other"), partitions=1)
    c = connectors(zk_config(zookeeper, g, **{"consumer.id": "w"}))
    streams = c.create_message_streams_by_filter(consumer.Whitelist(f"{prefix}-.*"), 2)
    reg = znode(zk, f"/consumers/{g}/ids/{g}_w")
    assert re.fullmatch(
        rf'\{{"version":1,"subscription":\{{"{prefix}-\.\*":2\}},"pattern":"white_list",'
        r'"timestamp":"\d+"\}',
        reg,
    ), reg
    assert owners(zk, g) == {(f"{prefix}-a", 0): f"{g}_w-0", (f"{prefix}-a", 1): f"{g}_w-1"}
    zk_cluster.create_topic(f"{prefix}-b", partitions=1)
    wait_for(lambda: (f"{prefix}-b", 0) in owners(zk, g), 60, message="owner of the new topic")
    produce(zk_cluster.bootstrap, f"{prefix}-b", [b"fresh"])
    got = drain(streams[0], 1)
    assert [(m.topic, m.message) for m in got] == [(f"{prefix}-b", b"fresh")]


def test_blacklist(zookeeper, zk_cluster, zk, unique, connectors):
    g, keep, skip = unique("g"), unique("bk"), unique("bs")
    zk_cluster.create_topic(keep, partitions=1)
    zk_cluster.create_topic(skip, partitions=1)
    c = connectors(zk_config(zookeeper, g, **{"consumer.id": "b"}))
    c.create_message_streams_by_filter(consumer.Blacklist(f"{skip},__.*"), 1)
    own = owners(zk, g)
    assert (keep, 0) in own and (skip, 0) not in own
    assert json.loads(znode(zk, f"/consumers/{g}/ids/{g}_b"))["pattern"] == "black_list"


def test_node_exists_retries_then_succeeds(zookeeper, zk_cluster, zk, unique, connectors):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=2)
    # a previous owner that has not let go yet
    zk.create(f"/consumers/{g}/owners/{t}/1", b"someone-else-0", makepath=True, ephemeral=True)
    threading.Timer(1.0, lambda: zk.delete(f"/consumers/{g}/owners/{t}/1")).start()
    c = connectors(zk_config(zookeeper, g, **{"consumer.id": "c"}))
    c.create_message_streams({t: 1})
    assert owners(zk, g) == {(t, 0): f"{g}_c-0", (t, 1): f"{g}_c-0"}


def test_failed_rebalance_is_surfaced_and_cleaned_up(zookeeper, zk_cluster, zk, unique, connectors):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=2)
    zk.create(f"/consumers/{g}/owners/{t}/1", b"someone-else-0", makepath=True, ephemeral=True)
    c = connectors(
        zk_config(
            zookeeper,
            g,
            **{"consumer.id": "c", "rebalance.max.retries": 2, "rebalance.backoff.ms": 100},
        )
    )
    with pytest.raises(ConsumerRebalanceFailedError, match="can't rebalance after 2 retries"):
        c.create_message_streams({t: 1})
    # the failed attempts left no owner node behind (partition 0 was claimed, then deleted)
    assert owners(zk, g) == {(t, 1): "someone-else-0"}


def test_failure_while_running_reaches_the_stream_then_heals(
    zookeeper, zk_cluster, zk, unique, connectors
):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=2)
    c = connectors(
        zk_config(
            zookeeper,
            g,
            **{"consumer.id": "c", "rebalance.max.retries": 2, "rebalance.backoff.ms": 100},
        )
    )
    s = c.create_message_streams({t: 1})[t][0]
    failures = []
    c.on_rebalance_failure = failures.append
    # block partition 1 and trigger a rebalance by a (fake) member joining with no streams here
    zk.delete(f"/consumers/{g}/owners/{t}/1")
    zk.create(f"/consumers/{g}/owners/{t}/1", b"someone-else-0", ephemeral=True)
    zk.create(
        f"/consumers/{g}/ids/{g}_other",
        registration_json({"unrelated": 1}, "static", 1).encode(),
        ephemeral=True,
    )
    with pytest.raises(ConsumerRebalanceFailedError):
        wait_for(lambda: _try_next(s), message="the surfaced failure")
    assert failures and c.rebalance_error is failures[0]
    zk.delete(f"/consumers/{g}/owners/{t}/1")  # the cause goes away: the group heals
    wait_for(
        lambda: owners(zk, g) == {(t, 0): f"{g}_c-0", (t, 1): f"{g}_c-0"},
        timeout=30,
        message="ownership after healing",
    )
    wait_for(lambda: c.rebalance_error is None)


def test_surfaced_failure_survives_the_retry_that_clears_queues(
    zookeeper, zk_cluster, unique, connectors
):
    """The executor retries a failed rebalance about a second later, clearing the queues: the
    failure surfaced before must still reach a stream that was not polling meanwhile."""
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=1)
    c = connectors(zk_config(zookeeper, g, **{"consumer.id": "c"}))
    s = c.create_message_streams({t: 1})[t][0]
    c._surface(ConsumerRebalanceFailedError("first"))
    c._surface(ConsumerRebalanceFailedError("second"))
    c._close_fetchers(commit=False)  # what the retry does first
    with pytest.raises(ConsumerRebalanceFailedError, match="second"):
        next(s)
    assert _try_next(s) is None  # reported once, then the stream goes on


def test_session_expiry_reregisters_and_reowns(zookeeper, zk_cluster, zk, unique, connectors):
    from kazoo.client import KazooClient

    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=3)
    c = connectors(
        zk_config(zookeeper, g, **{"consumer.id": "c", "zookeeper.session.timeout.ms": 2000})
    )
    s = c.create_message_streams({t: 1})[t][0]
    old_session = c.zk.client_id[0]
    # expire the session: another client attaches to it and closes it
    ghost = KazooClient(hosts=zookeeper.connect, client_id=c.zk.client_id)
    ghost.start()
    ghost.stop()
    ghost.close()
    wait_for(
        lambda: c.zk.client_id and c.zk.client_id[0] != old_session,
        timeout=20,
        message="a new session",
    )
    wait_for(
        lambda: owners(zk, g) == {(t, p): f"{g}_c-0" for p in range(3)},
        timeout=20,
        message="owners after session expiry",
    )
    assert zk.exists(f"/consumers/{g}/ids/{g}_c").ephemeralOwner == c.zk.client_id[0]
    produce(zk_cluster.bootstrap, t, [b"after-expiry"], partition=2)
    assert [m.message for m in drain(s, 1)] == [b"after-expiry"]


def test_no_implicit_commit_on_rebalance_with_auto_commit_off(
    zookeeper, zk_cluster, zk, unique, connectors
):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=2)
    produce_spread(zk_cluster.bootstrap, t, 2, 3)
    a = connectors(zk_config(zookeeper, g, **{"consumer.id": "a", "auto.commit.enable": False}))
    assert len(drain(a.create_message_streams({t: 1})[t][0], 6)) == 6
    b = connectors(zk_config(zookeeper, g, **{"consumer.id": "b", "auto.commit.enable": False}))
    b.create_message_streams({t: 1})
    wait_for(lambda: owners(zk, g) == {(t, 0): f"{g}_a-0", (t, 1): f"{g}_b-0"})
    assert zk.exists(f"/consumers/{g}/offsets") is None


def test_commit_before_release_with_auto_commit_on(zookeeper, zk_cluster, zk, unique, connectors):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=2)
    produce_spread(zk_cluster.bootstrap, t, 2, 3)
    a = connectors(
        zk_config(
            zookeeper,
            g,
            **{"consumer.id": "a", "auto.commit.enable": True, "auto.commit.interval.ms": 600000},
        )
    )
    assert len(drain(a.create_message_streams({t: 1})[t][0], 6)) == 6
    b = connectors(zk_config(zookeeper, g, **{"consumer.id": "b"}))
    sb = b.create_message_streams({t: 1})[t][0]
    wait_for(lambda: owners(zk, g) == {(t, 0): f"{g}_a-0", (t, 1): f"{g}_b-0"})
    # a committed before it released partition 1, so b starts after what a consumed
    assert znode(zk, f"/consumers/{g}/offsets/{t}/1") == "3"
    produce(zk_cluster.bootstrap, t, [b"only-new"], partition=1)
    assert [m.message for m in drain(sb, 1)] == [b"only-new"]


@pytest.mark.parametrize("form", ["listener object", "plain callable"])
def test_rebalance_listener_hears_before_release(
    form, zookeeper, zk_cluster, zk, unique, connectors
):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=2)
    a = connectors(zk_config(zookeeper, g, **{"consumer.id": "a"}))
    heard = []

    def hear(ownership):
        heard.append((ownership, sorted(owners(zk, g))))  # still owned while we are told

    class Listener:
        def before_releasing_partitions(self, ownership):
            hear(ownership)

    a.set_consumer_rebalance_listener(Listener() if form == "listener object" else hear)
    a.create_message_streams({t: 1})
    assert heard == []  # nothing owned before the first one
    b = connectors(zk_config(zookeeper, g, **{"consumer.id": "b"}))
    b.create_message_streams({t: 1})
    wait_for(lambda: heard, message="listener call")
    assert heard[0] == ({t: {0, 1}}, [(t, 0), (t, 1)])


def test_chroot_connect_string(zookeeper, zk_cluster, zk, unique, connectors):
    from kclient.zkutils import register_broker, register_topic

    root, g, t = "/" + unique("chroot"), unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=2)
    leaders = zk_cluster.leaders(t)
    zk.ensure_path(root)
    chrooted = zk.__class__(hosts=zookeeper.connect + root)
    chrooted.start()
    try:
        for b in zk_cluster.brokers:
            host, port = b.bootstrap.rsplit(":", 1)
            register_broker(chrooted, b.node_id, host, int(port), ephemeral=True)
        register_topic(chrooted, t, {p: [leader] for p, leader in leaders.items()})
        produce(zk_cluster.bootstrap, t, [b"rooted"], partition=1)
        c = connectors(
            zk_config(
                zookeeper, g, **{"zookeeper.connect": zookeeper.connect + root, "consumer.id": "c"}
            )
        )
        s = c.create_message_streams({t: 1})[t][0]
        assert [m.message for m in drain(s, 1)] == [b"rooted"]
        assert znode(zk, f"{root}/consumers/{g}/owners/{t}/1") == f"{g}_c-0"
        assert zk.exists(f"/consumers/{g}") is None
    finally:
        chrooted.stop()
        chrooted.close()


def test_broker_and_topic_watchers_trigger_rebalances(
    zookeeper, zk_cluster, zk, unique, connectors
):
    g, t = unique("g"), unique("t")
    zk_cluster.create_topic(t, partitions=1)
    c = connectors(zk_config(zookeeper, g))
    c.create_message_streams({t: 1})
    before = c.executor.rebalances
    zk.create(
        "/brokers/ids/990",
        b'{"jmx_port":-1,"timestamp":"0","host":"127.0.0.1","version":1,"port":1}',
        ephemeral=True,
    )
    try:
        wait_for(lambda: c.executor.rebalances > before, message="rebalance on a broker change")
    finally:
        zk.delete("/brokers/ids/990")
    wait_for(lambda: c.executor.rebalances > before + 1, message="rebalance on broker leaving")
    before = c.executor.rebalances
    data = zk.get(f"/brokers/topics/{t}")[0]
    zk.set(f"/brokers/topics/{t}", data)  # partitions of a topic changed
    wait_for(lambda: c.executor.rebalances > before, message="rebalance on a topic change")
    assert owners(zk, g) == {(t, 0): f"{c.consumer_id}-0"}
