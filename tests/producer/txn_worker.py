"""Consume-transform-produce worker for the exactly-once test (run as a subprocess and killed).

``python -m tests.producer.txn_worker BOOTSTRAP HOST PORT SOURCE SINK GROUP TID BATCH PAUSE``:
reads SOURCE partition 0 from the group's committed offset, writes each value upper-cased to SINK
and commits the source offsets in the same transaction, BATCH messages per transaction, until
SOURCE's end.  Prints "ready" once it holds the transactional id, "done" at the end.  Each
transaction waits PAUSE seconds between its flushed sends and its commit, so that most kills
land while written data is not yet committed.
"""

from __future__ import annotations

import sys
import time

from kclient import Producer, ProducerData
from kclient.simple import FetchRequest, SimpleConsumer


def main(
    bootstrap: str,
    host: str,
    port: str,
    source: str,
    sink: str,
    group: str,
    tid: str,
    batch: int,
    pause: float,
) -> None:
    producer = Producer(
        {
            "metadata.broker.list": bootstrap,
            "producer.type": "async",
            "transactional.id": tid,
            "request.required.acks": -1,
        }
    )
    producer.init_transactions()  # fences the killed run, aborts its transaction
    print("ready", flush=True)
    with SimpleConsumer(host, int(port), so_timeout=15000) as c:
        offset = max(c.fetch_offsets(group, [(source, 0)])[(source, 0)].offset, 0)
        end = c.get_offsets_before(source, 0, -1)[0]
        while offset < end:
            ms = c.fetch(FetchRequest(source, 0, offset, 1 << 20))
            taken = list(ms)[:batch]
            producer.begin_transaction()
            producer.send([ProducerData(sink, m.message.value.upper(), partition=0) for m in taken])
            offset = taken[-1].offset + 1
            producer.send_offsets_to_transaction({(source, 0): offset}, group)
            producer.flush()
            time.sleep(pause)
            producer.commit_transaction()
    producer.close()
    print("done", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:8], int(sys.argv[8]), float(sys.argv[9]))
