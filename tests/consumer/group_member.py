"""A consumer group member run as its own process by test_group_processes.py.

    python -m tests.consumer.group_member ZK_CONNECT GROUP TOPIC OUT_DIR NAME NUM_STREAMS

Every consumed message is appended to OUT_DIR/NAME.log as "partition offset value"; the
member's state (consumer id, ZooKeeper session, owned partitions) is rewritten to
OUT_DIR/NAME.status every 100 ms.  SIGTERM means leave cleanly (shutdown, then NAME.done).
"""

import json
import os
import signal
import sys
import threading

from kclient import consumer
from kclient.errors import ConsumerRebalanceFailedError, ConsumerTimeoutError


def main(zk_connect, group, topic, out_dir, name, num_streams):
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    conn = consumer.create(
        {
            "zookeeper.connect": zk_connect,
            "group.id": group,
            "consumer.timeout.ms": 200,
            "auto.offset.reset": "smallest",
            "auto.commit.enable": True,
            "auto.commit.interval.ms": 300,
            "zookeeper.session.timeout.ms": 3000,
            "zookeeper.connection.timeout.ms": 20000,
            "rebalance.backoff.ms": 300,
            "rebalance.max.retries": 30,
            "refresh.leader.backoff.ms": 50,
        }
    )
    streams = conn.create_message_streams({topic: int(num_streams)})[topic]
    log = open(os.path.join(out_dir, f"{name}.log"), "a", buffering=1)
    lock = threading.Lock()

    def read(stream):
        while True:
            try:
                for m in stream:
                    with lock:
                        log.write(f"{m.partition} {m.offset} {m.message.decode()}\n")
            except ConsumerTimeoutError:
                continue
            except ConsumerRebalanceFailedError:
                continue
            return

    readers = [threading.Thread(target=read, args=(s,)) for s in streams]
    for r in readers:
        r.start()
    status_path = os.path.join(out_dir, f"{name}.status")
    while not stop.wait(0.1):
        sid, passwd = conn.zk.client_id or (0, b"")
        state = {
            "pid": os.getpid(),
            "consumer_id": conn.consumer_id,
            "session": sid,
            "passwd": passwd.hex(),
            "error": repr(conn.rebalance_error),
            "owned": [[t, p, th] for (t, p), th in conn.owned_partitions().items()],
        }
        with open(status_path + ".tmp", "w") as f:
            json.dump(state, f)
        os.replace(status_path + ".tmp", status_path)
    conn.shutdown()
    for r in readers:
        r.join(10)
    log.close()
    open(os.path.join(out_dir, f"{name}.done"), "w").close()


if __name__ == "__main__":
    main(*sys.argv[1:])
