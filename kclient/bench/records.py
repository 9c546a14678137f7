"""Record encode/decode microbenchmark: kclient vs kafka-python 3.x, same run, same data.

Run: ``python -m kclient.bench.records [--records N] [--value-size B] [--repeat R]``

Encode = build one v2 batch of N records (no compression, 100-byte values, null keys or short
keys) into bytes.  Decode = iterate all records of that batch touching offset, key and value.
kafka-python (``kafka.record.default_records``) is imported only here, as the reference.
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

from kclient.protocol.records import RecordsReader, build_batch

TIMESTAMP = 1_700_000_000_000


def _best_rates(fns: dict, n: int, repeat: int) -> dict:
    """Records per second of the fastest of ``repeat`` runs of each function.

    The functions run interleaved (one run of each per round, after a warm-up round) so that
    load from other processes hits both libraries alike.
    """
    best = {name: float("inf") for name in fns}
    for round_no in range(repeat + 1):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            if round_no:
                best[name] = min(best[name], time.perf_counter() - t0)
    return {name: n / t for name, t in best.items()}


def kclient_encode(values: list[bytes], keys: list[bytes] | None) -> bytes:
    """One v2 batch via kclient's columnar builder."""
    return build_batch(values, keys, timestamp=TIMESTAMP)


def kclient_decode(data: bytes) -> int:
    """Iterate every record, touching offset, key and value."""
    n = 0
    for rec in RecordsReader(data):
        _ = rec.offset, rec.key, rec.value
        n += 1
    return n


def kafka_python_encode(values: list[bytes], keys: list[bytes] | None) -> bytes:
    """One v2 batch via kafka-python's DefaultRecordBatchBuilder."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    given: list[bytes | None] = list(keys) if keys else [None] * len(values)
    for i, (k, v) in enumerate(zip(given, values)):
        builder.append(i, timestamp=TIMESTAMP, key=k, value=v, headers=[])
    return bytes(builder.build())


def kafka_python_decode(data: bytes) -> int:
    """Iterate every record of kafka-python's DefaultRecordBatch, touching the same fields."""
    from kafka.record.default_records import DefaultRecordBatch

    n = 0
    for rec in DefaultRecordBatch(data):
        _ = rec.offset, rec.key, rec.value
        n += 1
    return n


def run(n: int = 10_000, value_size: int = 100, repeat: int = 9) -> list[dict]:
    """Measure both libraries for null keys and short keys; return one row per case."""
    values = [bytes([i % 251]) * value_size for i in range(n)]
    rows = []
    for label, keys in (("null keys", None), ("short keys", [b"k%05d" % i for i in range(n)])):
        ours = kclient_encode(values, keys)
        theirs = kafka_python_encode(values, keys)
        assert kclient_decode(theirs) == n and kafka_python_decode(ours) == n
        gc.collect()
        row: dict[str, Any] = {"case": label}
        row.update(
            _best_rates(
                {
                    "kclient_encode": lambda keys=keys: kclient_encode(values, keys),
                    "kafka_python_encode": lambda keys=keys: kafka_python_encode(values, keys),
                    "kclient_decode": lambda ours=ours: kclient_decode(ours),
                    "kafka_python_decode": lambda theirs=theirs: kafka_python_decode(theirs),
                },
                n,
                repeat,
            )
        )
        row["encode_ratio"] = row["kclient_encode"] / row["kafka_python_encode"]
        row["decode_ratio"] = row["kclient_decode"] / row["kafka_python_decode"]
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    """Print records/s and ratios as a small table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args(argv)
    print(
        f"v2 batch, {args.records} records, {args.value_size}-byte values, no compression; "
        f"best of {args.repeat} interleaved runs, records/s"
    )
    print(f"{'case':<11} {'op':<7} {'kclient':>12} {'kafka-python':>13} {'ratio':>7}")
    for row in run(args.records, args.value_size, args.repeat):
        for op in ("encode", "decode"):
            print(
                f"{row['case']:<11} {op:<7} {row['kclient_' + op]:>12,.0f} "
                f"{row['kafka_python_' + op]:>13,.0f} {row[op + '_ratio']:>6.2f}x"
            )


if __name__ == "__main__":
    main()
