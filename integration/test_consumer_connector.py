"""ConsumerConnector against real Kafka: ZooKeeper-coordinated on a 3.x cluster registered in
ZooKeeper (offsets to ZooKeeper and to Kafka), broker-coordinated on 4.x in one group with Kafka's
Java console consumer."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
from kazoo.client import KazooClient

from kclient import Producer, ProducerData, consumer
from kclient.errors import ConsumerTimeoutError
from kclient.simple import SimpleConsumer
from tests.consumer.helpers import wait_for

from .helpers import leader_address, new_topic


def produce(server, topic: str, values: list[bytes]) -> None:
    with Producer({"metadata.broker.list": server.bootstrap, "producer.type": "sync"}) as p:
        p.send([ProducerData(topic, v, key=v) for v in values])


def drain(streams, done, timeout: float = 30.0) -> list[list]:
    """Iterate every stream on its own thread until ``done(total so far)`` or ``timeout``;
    the MessageAndMetadata each stream gave. ``done`` may be a count."""
    if isinstance(done, int):
        count = done
        done = lambda n: n >= count  # noqa: E731
    seen: list[list] = [[] for _ in streams]
    lock = threading.Lock()
    finished = threading.Event()
    deadline = time.monotonic() + timeout

    def run(i, stream):
        while time.monotonic() < deadline and not finished.is_set():
            try:
                for m in stream:
                    with lock:
                        seen[i].append(m)
                        if done(sum(map(len, seen))):
                            finished.set()
                    if finished.is_set():
                        return
            except ConsumerTimeoutError:
                if done(sum(map(len, seen))):
                    finished.set()

    threads = [
        threading.Thread(target=run, args=(i, s), daemon=True) for i, s in enumerate(streams)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 5)
    return seen


def zk_conf(server, group: str, **extra) -> dict:
    return {
        "zookeeper.connect": server.zookeeper_connect,
        "group.id": group,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 500,
        "auto.commit.enable": False,
        **extra,
    }


@pytest.mark.parametrize("storage", ["zookeeper", "kafka"])
def test_zookeeper_connector_on_kafka3(kafka3_cluster, storage):
    topic = new_topic(kafka3_cluster, partitions=4)
    values = [b"m%04d" % i for i in range(400)]
    produce(kafka3_cluster, topic, values)
    group = f"g-{topic}"
    offsets = {"offsets.storage": storage, "dual.commit.enabled": False}
    zk = KazooClient(hosts=kafka3_cluster.zookeeper_connect)
    zk.start()
    try:
        assert sorted(zk.get_children("/brokers/ids")) == ["1", "2"]  # Kafka's registrations
        leaders = {
            json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])["leader"]
            for p in range(4)
        }
        assert leaders == {1, 2}
        with (
            consumer.create(zk_conf(kafka3_cluster, group, **offsets)) as a,
            consumer.create(zk_conf(kafka3_cluster, group, **offsets)) as b,
        ):
            sa = a.create_message_streams({topic: 2})[topic]
            sb = b.create_message_streams({topic: 2})[topic]
            _wait_owned(zk, group, topic, 4)
            per_stream = drain(sa + sb, 400)
            got_a, got_b = sum(per_stream[:2], []), sum(per_stream[2:], [])
            a.commit_offsets()
            b.commit_offsets()
            owners = {
                p: zk.get(f"/consumers/{group}/owners/{topic}/{p}")[0].decode()
                for p in zk.get_children(f"/consumers/{group}/owners/{topic}")
            }
        parts_a = {m.partition for m in got_a}
        parts_b = {m.partition for m in got_b}
        assert parts_a and parts_b and not parts_a & parts_b
        assert sorted(m.message for m in got_a + got_b) == values
        assert sorted(owners) == ["0", "1", "2", "3"]
        assert {o.rsplit("-", 1)[0] for o in owners.values()} == {a.consumer_id, b.consumer_id}
        ends = _end_offsets(kafka3_cluster, topic, 4)
        if storage == "zookeeper":
            committed = {
                p: int(zk.get(f"/consumers/{group}/offsets/{topic}/{p}")[0]) for p in range(4)
            }
        else:
            host, port = leader_address(kafka3_cluster, topic, 0)
            with SimpleConsumer(host, port) as c:
                got = c.fetch_offsets(group, [(topic, p) for p in range(4)])
            committed = {p: got[(topic, p)].offset for p in range(4)}
            assert not zk.exists(f"/consumers/{group}/offsets/{topic}/0")
        assert committed == ends
    finally:
        zk.stop()
        zk.close()
    # a new member of the group starts where the group stopped
    produce(kafka3_cluster, topic, [b"late"])
    with consumer.create(zk_conf(kafka3_cluster, group, **offsets)) as c:
        (rest,) = drain(c.create_message_streams({topic: 1})[topic], 1, timeout=15)
    assert [m.message for m in rest] == [b"late"]


def _wait_owned(zk, group: str, topic: str, partitions: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    path = f"/consumers/{group}/owners/{topic}"
    while time.monotonic() < deadline:
        if zk.exists(path) and len(zk.get_children(path)) == partitions:
            ids = zk.get_children(f"/consumers/{group}/ids")
            owners = {
                zk.get(f"{path}/{p}")[0].decode().rsplit("-", 1)[0] for p in zk.get_children(path)
            }
            if len(ids) == 2 and len(owners) == 2:
                return
        time.sleep(0.1)
    raise TimeoutError(f"{group}: the two consumers do not share {topic}'s partitions")


def _end_offsets(server, topic: str, partitions: int) -> dict[int, int]:
    from kclient.simple import OffsetRequest

    out = {}
    for p in range(partitions):
        host, port = leader_address(server, topic, p)
        with SimpleConsumer(host, port) as c:
            out[p] = c.get_offsets_before(topic, p, OffsetRequest.LATEST_TIME, 1)[0]
    return out


def test_zookeeper_connector_dual_commit_on_kafka3(kafka3_cluster):
    topic = new_topic(kafka3_cluster, partitions=2)
    produce(kafka3_cluster, topic, [b"a", b"b", b"c", b"d"])
    group = f"dual-{topic}"
    conf = zk_conf(
        kafka3_cluster, group, **{"offsets.storage": "kafka", "dual.commit.enabled": True}
    )
    with consumer.create(conf) as c:
        (got,) = drain(c.create_message_streams({topic: 1})[topic], 4, timeout=15)
        assert len(got) == 4
        c.commit_offsets()
    ends = _end_offsets(kafka3_cluster, topic, 2)
    zk = KazooClient(hosts=kafka3_cluster.zookeeper_connect)
    zk.start()
    try:
        in_zk = {p: int(zk.get(f"/consumers/{group}/offsets/{topic}/{p}")[0]) for p in range(2)}
    finally:
        zk.stop()
        zk.close()
    host, port = leader_address(kafka3_cluster, topic, 0)
    with SimpleConsumer(host, port) as s:
        in_kafka = {
            p: o.offset for (_, p), o in s.fetch_offsets(group, [(topic, 0), (topic, 1)]).items()
        }
    assert in_zk == in_kafka == ends


# -- broker-coordinated, with the Java consumer --------------------------------------------------
def _describe(server, group: str, *what: str) -> str:
    return server.run_tool(
        "consumer-groups",
        "--bootstrap-server",
        server.bootstrap,
        "--describe",
        "--group",
        group,
        *what,
    ).stdout.decode()


def _wait_members(server, group: str, n: int, timeout: float = 60) -> None:
    """Until ``kafka-consumer-groups --describe --state`` shows the group Stable with n members."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = _describe(server, group, "--state")
        rows = [line.split() for line in state.splitlines() if line.startswith(group + " ")]
        if rows and rows[0][-2:] == ["Stable", str(n)]:
            return
        time.sleep(0.5)
    raise TimeoutError(f"group {group} never had {n} stable members:\n{state}")


class JavaConsoleConsumer:
    """Kafka's console consumer in ``group``, its "Partition:P\tkey\tvalue" lines collected by
    a thread as they come."""

    def __init__(self, server, topic: str, group: str):
        self.proc = server.start_tool(
            "console-consumer",
            "--bootstrap-server",
            server.bootstrap,
            "--topic",
            topic,
            "--group",
            group,
            "--consumer-property",
            "auto.offset.reset=earliest",
            "--formatter-property",
            "print.partition=true",
            "--formatter-property",
            "print.key=true",
            "--consumer-property",
            "heartbeat.interval.ms=500",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: list[list[str]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            text = line.decode().rstrip("\n")
            if text.startswith("Partition:"):
                self.lines.append(text.split("\t"))

    def stop(self) -> str:
        """Stop it (SIGTERM: it leaves the group and commits); its stderr."""
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        self.reader.join(5)
        return err.decode(errors="replace")

    @property
    def partitions(self) -> set[int]:
        return {int(p.split(":")[1]) for p, _, _ in self.lines}

    @property
    def values(self) -> list[bytes]:
        return [v.encode() for _, _, v in self.lines]


@pytest.mark.parametrize("first", ["java", "kclient"])
def test_group_connector_shares_a_group_with_the_java_consumer(kafka4, first):
    """Whoever joins first leads the group and assigns (Java's RangeAssignor or kclient's)."""
    topic = new_topic(kafka4, partitions=6)
    group = f"mixed-{topic}"
    conf = {
        "metadata.broker.list": kafka4.bootstrap,
        "group.id": group,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 300,
        "heartbeat.interval.ms": 500,
    }
    java = None
    try:
        if first == "java":
            java = JavaConsoleConsumer(kafka4, topic, group)
            _wait_members(kafka4, group, 1)
        with consumer.create(conf) as conn:
            streams = conn.create_message_streams({topic: 2})[topic]
            if java is None:
                _wait_members(kafka4, group, 1)
                java = JavaConsoleConsumer(kafka4, topic, group)
            _wait_members(kafka4, group, 2)
            values = [b"v%04d" % i for i in range(600)]
            produce(kafka4, topic, values)
            ours = sum(drain(streams, lambda n: n + len(java.lines) >= 600, timeout=40), [])
            described = _describe(kafka4, group)
            err = java.stop()
    finally:
        if java is not None and java.proc.poll() is None:
            java.stop()
    our_parts = {m.partition for m in ours}
    assert our_parts and java.partitions, (our_parts, java.partitions, err[-2000:])
    assert not our_parts & java.partitions
    assert our_parts | java.partitions == set(range(6))
    assert sorted([m.message for m in ours] + java.values) == values
    # Kafka's own tool describes the group: 2 members, each partition owned by one of them,
    # the Java member's partitions being the ones it printed, every offset committed
    owner = {}
    for line in described.splitlines():
        cols = line.split()
        if len(cols) >= 7 and cols[0] == group and cols[1] == topic:
            owner[int(cols[2])] = (cols[6], cols[3])
    assert sorted(owner) == list(range(6)), described
    assert len({cid for cid, _ in owner.values()}) == 2
    java_owned = {p for p, (cid, _) in owner.items() if cid.startswith("console-consumer")}
    assert java_owned == java.partitions


def test_filter_consumer_picks_up_new_topics_on_kafka4(kafka4):
    """A Whitelist connector sees topics created after it started; Kafka's internal
    __consumer_offsets never matches, even for ".*"-like filters."""
    prefix = f"flt{time.time_ns() % 10**9}"
    first = new_topic(kafka4, 2, prefix=prefix)
    produce(kafka4, first, [b"a1", b"a2"])
    conf = {
        "metadata.broker.list": kafka4.bootstrap,
        "group.id": f"g-{prefix}",
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 300,
        "heartbeat.interval.ms": 300,
    }
    with consumer.create(conf) as conn:
        streams = conn.create_message_streams_by_filter(consumer.Whitelist(f"{prefix}-.*|__.*"), 1)
        (got,) = drain(streams, 2, timeout=20)
        second = new_topic(kafka4, 1, prefix=prefix)
        produce(kafka4, second, [b"b1"])
        (more,) = drain(streams, 1, timeout=30)
    assert sorted(m.message for m in got) == [b"a1", b"a2"]
    assert [(m.topic, m.message) for m in more] == [(second, b"b1")]


def test_zookeeper_filter_connector_sees_topics_kafka3_creates(kafka3_cluster):
    """A Whitelist connector in ZooKeeper mode watches /brokers/topics, where Kafka 3.9's
    controller registers new topics."""
    prefix = f"zflt{time.time_ns() % 10**9}"
    first = new_topic(kafka3_cluster, 2, prefix=prefix)
    produce(kafka3_cluster, first, [b"a1", b"a2"])
    with consumer.create(zk_conf(kafka3_cluster, f"g-{prefix}")) as conn:
        streams = conn.create_message_streams_by_filter(consumer.Whitelist(f"{prefix}-.*"), 1)
        (got,) = drain(streams, 2, timeout=20)
        conn.commit_offsets()  # auto-commit is off: else the rebalance re-delivers
        second = new_topic(kafka3_cluster, 3, prefix=prefix)
        produce(kafka3_cluster, second, [b"b1", b"b2", b"b3"])
        (more,) = drain(streams, 3, timeout=30)
    assert sorted(m.message for m in got) == [b"a1", b"a2"]
    assert sorted((m.topic, m.message) for m in more) == [
        (second, b"b1"),
        (second, b"b2"),
        (second, b"b3"),
    ]


def test_group_members_hand_over_on_kafka4(kafka4):
    """Two kclient members split a topic; when one leaves (committing first), the other takes
    over its partitions from the committed offsets: nothing lost, nothing read twice."""
    topic = new_topic(kafka4, partitions=4)
    conf = {
        "metadata.broker.list": kafka4.bootstrap,
        "group.id": f"hand-{topic}",
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 300,
        "heartbeat.interval.ms": 300,
        "auto.commit.enable": False,
    }
    first = [b"a%03d" % i for i in range(200)]
    second = [b"b%03d" % i for i in range(200)]
    b = consumer.create(conf)
    try:
        sb = b.create_message_streams({topic: 1})[topic]
        with consumer.create(conf) as a:
            sa = a.create_message_streams({topic: 1})[topic]
            wait_for(
                lambda: len(a.registry) == 2 and len(b.registry) == 2, 30, message="a 2/2 split"
            )
            produce(kafka4, topic, first)
            got_a, got_b = drain(sa + sb, 200)
            a.commit_offsets()
            b.commit_offsets()
        wait_for(lambda: len(b.registry) == 4, 30, message="the survivor owning all 4 partitions")
        produce(kafka4, topic, second)
        (rest,) = drain(sb, 200)
    finally:
        b.shutdown()
    assert {m.partition for m in got_a}.isdisjoint({m.partition for m in got_b})
    assert sorted(m.message for m in got_a + got_b) == first
    assert sorted(m.message for m in rest) == second
