"""Avro serdes microbenchmark: kclient's AvroSerializer / AvroDeserializer beside
confluent-kafka's, same run, same registry (the mini-broker's), same records.

Run: ``python -m kclient.bench.serdes [--records N] [--repeat R]`` (or ``kclient bench
serdes``).  Serialize = one call per record, schema id cached after the first (the steady state
of a producer); deserialize = one call per record of the bytes confluent-kafka wrote.  Both
sides' bytes are checked equal first.  Prints records/s and the ratio kclient / confluent.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from kclient.bench.records import _best_rates

SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "bench",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "customer", "type": "string"},
            {"name": "amount", "type": "double"},
            {"name": "currency", "type": "string"},
            {"name": "paid", "type": "boolean"},
            {"name": "address", "type": "string"},
            {"name": "note", "type": ["null", "string"], "default": None},
            {"name": "items", "type": {"type": "array", "items": "string"}},
        ],
    }
)


def records(n: int) -> list[dict[str, Any]]:
    """``n`` records of about 100 bytes encoded."""
    return [
        {
            "id": i,
            "customer": f"customer-{i % 997:05d}@example.org",
            "amount": i * 0.25,
            "currency": "EUR",
            "paid": i % 2 == 0,
            "address": f"Storgata {i % 90 + 1}, {i % 9000 + 1000:04d} Oslo",
            "note": None if i % 3 else "gift wrap",
            "items": [f"sku-{i % 50:04d}", f"sku-{(i * 7) % 50:04d}"],
        }
        for i in range(n)
    ]


def run(url: str, n: int, repeat: int) -> dict[str, float]:
    """Records/s of each side's serialize and deserialize, and the ratios."""
    from confluent_kafka.schema_registry import SchemaRegistryClient as CClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer as CDe
    from confluent_kafka.schema_registry.avro import AvroSerializer as CSer
    from confluent_kafka.serialization import MessageField
    from confluent_kafka.serialization import SerializationContext as CCtx

    from kclient.schema_registry import SchemaRegistryClient, SerializationContext
    from kclient.schema_registry.avro import AvroDeserializer, AvroSerializer

    rows = records(n)
    ours, theirs = SchemaRegistryClient(url), CClient({"url": url})
    ser, cser = AvroSerializer(ours, SCHEMA), CSer(theirs, SCHEMA)
    de, cde = AvroDeserializer(ours), CDe(theirs)
    ctx, cctx = SerializationContext("orders"), CCtx("orders", MessageField.VALUE)
    written = [cser(r, cctx) for r in rows]
    if [ser(r, ctx) for r in rows] != written:
        raise AssertionError("kclient and confluent-kafka wrote different bytes")
    if [de(b, ctx) for b in written] != rows or [cde(b, cctx) for b in written] != rows:
        raise AssertionError("a deserializer did not read back the records")
    rates = _best_rates(
        {
            "kclient_serialize": lambda: [ser(r, ctx) for r in rows],
            "confluent_serialize": lambda: [cser(r, cctx) for r in rows],
            "kclient_deserialize": lambda: [de(b, ctx) for b in written],
            "confluent_deserialize": lambda: [cde(b, cctx) for b in written],
        },
        n,
        repeat,
    )
    rates["serialize_ratio"] = rates["kclient_serialize"] / rates["confluent_serialize"]
    rates["deserialize_ratio"] = rates["kclient_deserialize"] / rates["confluent_deserialize"]
    rates["bytes"] = sum(map(len, written)) / n
    ours.close()
    return rates


def main(argv: list[str] | None = None) -> None:
    """Start a mini-broker with its registry, measure, print a small table."""
    from kclient.broker import MiniBroker

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--registry", metavar="URL", help="use this registry instead of a mini-broker's"
    )
    args = ap.parse_args(argv)
    if args.registry:
        rates = run(args.registry, args.records, args.repeat)
    else:
        with MiniBroker(schema_registry=True) as broker:
            rates = run(broker.schema_registry_url, args.records, args.repeat)
    print(
        f"Avro, {args.records} records of {rates['bytes']:.0f} bytes, best of {args.repeat} "
        "interleaved runs, records/s"
    )
    print(f"{'op':<12} {'kclient':>12} {'confluent':>12} {'ratio':>7}")
    for op in ("serialize", "deserialize"):
        print(
            f"{op:<12} {rates['kclient_' + op]:>12,.0f} {rates['confluent_' + op]:>12,.0f} "
            f"{rates[op + '_ratio']:>6.2f}x"
        )


if __name__ == "__main__":
    main()
