"""``Producer.send_values`` with ``bytearray`` values (Spark's BinaryType), outside Spark.

Run: ``python -m kclient.bench.send_values [--rows N] [--size B] [--repeat R]``

Sends N values of B bytes, held as ``bytearray`` objects before the clock starts, in lists of
10,000 (the Spark sink's chunk), to a mini-broker in its own process, async producer, acks=1,
and flushes.  Two ways, alternating, ``--repeat`` rounds each:

* ``copy``: the caller converts each chunk with ``list(map(bytes, values))`` first (what the
  Spark sink did before the producer took bytearray);
* ``direct``: the bytearray lists go to ``send_values`` as they are.

Printed per way: the best rows/s and the least CPU per row of the sending process (user +
system, all threads) and of the broker process; the broker's log is checked for N records.
"""

from __future__ import annotations

import argparse
import os
import time

from kclient.bench import mini_broker_process

CHUNK = 10_000


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid``."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _self_cpu() -> float:
    t = os.times()
    return t.user + t.system


def run(
    bootstrap: str, broker_pid: int, topic: str, chunks: list[list[bytearray]], way: str
) -> tuple[float, float, float]:
    """One round: (rows/s, sender CPU us/row, broker CPU us/row)."""
    from kclient import Producer

    rows = sum(map(len, chunks))
    with Producer({"metadata.broker.list": bootstrap, "producer.type": "async"}) as p:
        p.send_values(topic, [b"warm-up"])
        p.flush()
        b0, c0, t0 = _proc_cpu(broker_pid), _self_cpu(), time.perf_counter()
        if way == "copy":
            for values in chunks:
                p.send_values(topic, list(map(bytes, values)))
        else:
            for values in chunks:
                p.send_values(topic, values)
        p.flush()
        wall = time.perf_counter() - t0
        cpu, bcpu = _self_cpu() - c0, _proc_cpu(broker_pid) - b0
    return rows / wall, cpu / rows * 1e6, bcpu / rows * 1e6


def main() -> None:
    """Parse arguments, start the broker, alternate the two ways, print the best of each."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ways", default="copy,direct")
    args = ap.parse_args()
    chunks = [
        [
            bytearray(b"%010d" % (i + j)).ljust(args.size, b"x")
            for j in range(min(CHUNK, args.rows - i))
        ]
        for i in range(0, args.rows, CHUNK)
    ]
    ways = args.ways.split(",")
    best: dict[str, list[float]] = {}
    from kclient.admin import AdminClient, OffsetSpec
    from kclient.structs import TopicPartition

    with mini_broker_process() as broker, AdminClient(broker.bootstrap) as admin:
        for r in range(args.repeat):
            for way in ways:
                topic = f"sv-{way}-{r}"
                admin.create_topic(topic, 1)
                got = run(broker.bootstrap, broker.pid, topic, chunks, way)
                end = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.LATEST})
                if next(iter(end.values())).offset != args.rows + 1:  # (+ the warm-up)
                    raise SystemExit(f"{topic}: {end} records, expected {args.rows + 1}")
                print(
                    f"{way:7s} round {r}: {got[0] / 1e6:.2f}M rows/s, sender "
                    f"{got[1]:.2f} us/row, broker {got[2]:.2f} us/row",
                    flush=True,
                )
                b = best.setdefault(way, [0.0, float("inf"), float("inf")])
                best[way] = [max(b[0], got[0]), min(b[1], got[1]), min(b[2], got[2])]
    print(f"load average {os.getloadavg()[0]:.1f}")
    for way, (rate, cpu, bcpu) in best.items():
        print(
            f"best {way:7s}: {rate / 1e6:.2f}M rows/s, sender {cpu:.2f} us/row CPU, "
            f"broker {bcpu:.2f} us/row CPU"
        )


if __name__ == "__main__":
    main()
