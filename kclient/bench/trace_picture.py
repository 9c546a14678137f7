"""docs/img/trace.png: one real trace from an HTTP handler through kclient's producer to the
consumer's processing, captured with the OpenTelemetry SDK and drawn as a waterfall.

Run: ``python -m kclient.bench.trace_picture [--out docs/img/trace.png]``

A mini-broker in this process; a ``POST /orders`` span sends two records with
``Producer.produce`` (``send`` spans, ended at their delivery reports); a kclient.Consumer in
a group iterates them (``process`` spans, children of the ``send`` spans through the
``traceparent`` header) and a ``charge card`` span runs inside each.  The ``poll`` span that
fetched them belongs to its own trace and links to the ``send`` spans: it is drawn below the
trace, with its links.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

COLORS = {
    "SERVER": "#8c8c8c",
    "INTERNAL": "#b07aa1",
    "PRODUCER": "#4e79a7",
    "CONSUMER": "#59a14f",
    "CLIENT": "#f28e2b",
}


def capture() -> list[Any]:
    """The finished spans of one produce-and-consume round trip."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from kclient import Consumer, Producer
    from kclient.broker import MiniBroker

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("shop")
    with MiniBroker(config={"group.initial.rebalance.delay.ms": "0"}) as broker:
        broker.create_topic("orders", partitions=1)
        with Producer(
            bootstrap_servers=broker.bootstrap,
            producer_type="async",
            client_id="orders-api",
            tracer_provider=provider,
        ) as p:
            with tracer.start_as_current_span("POST /orders", kind=SpanKind.SERVER):
                futures = [
                    p.produce("orders", f"order-{i}".encode(), key=f"user-{i}".encode())
                    for i in (1, 2)
                ]
                for f in futures:
                    f.result(10)
        with Consumer(
            "orders",
            bootstrap_servers=broker.bootstrap,
            group_id="billing",
            client_id="billing-1",
            auto_offset_reset="earliest",
            consumer_timeout_ms=10000,
            tracer_provider=provider,
        ) as c:
            seen = 0
            for _ in c:
                with tracer.start_as_current_span("charge card"):
                    time.sleep(0.004)
                seen += 1
                if seen == 2:
                    break
    provider.shutdown()
    return list(exporter.get_finished_spans())


#: attributes shown beside a span, by a short name
SHORT = {
    "messaging.destination.partition.id": "partition",
    "messaging.kafka.offset": "offset",
    "messaging.kafka.message.key": "key",
    "messaging.consumer.group.name": "group",
    "messaging.batch.message_count": "messages",
}


def _label(s: Any) -> str:
    a = s.attributes or {}
    extra = [f"{short}={a[k]}" for k, short in SHORT.items() if k in a]
    return s.name + (f"  ({', '.join(extra)})" if extra else "")


def draw(spans: list[Any], out: Path) -> None:
    """The waterfall of the trace that holds the request span, and the linked poll span."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    root = next(s for s in spans if s.name == "POST /orders")
    trace_spans = [s for s in spans if s.context.trace_id == root.context.trace_id]
    others = [s for s in spans if s.context.trace_id != root.context.trace_id]
    by_id = {s.context.span_id: s for s in trace_spans}

    def depth(s: Any) -> int:
        d = 0
        while s.parent is not None and s.parent.span_id in by_id:
            s, d = by_id[s.parent.span_id], d + 1
        return d

    def order(s: Any) -> list[int]:
        chain = [s.start_time]
        while s.parent is not None and s.parent.span_id in by_id:
            s = by_id[s.parent.span_id]
            chain.insert(0, s.start_time)
        return chain

    rows = sorted(trace_spans, key=order) + sorted(others, key=lambda s: s.start_time)
    t0 = min(s.start_time for s in rows)
    fig, ax = plt.subplots(figsize=(11, 0.42 * len(rows) + 1.2))
    ypos = {}
    for i, s in enumerate(rows):
        y = len(rows) - 1 - i
        ypos[s.context.span_id] = y
        start, width = (s.start_time - t0) / 1e6, max((s.end_time - s.start_time) / 1e6, 0.05)
        ax.barh(y, width, left=start, height=0.6, color=COLORS.get(s.kind.name, "#999"))
        indent = depth(s) if s in trace_spans else 0
        ax.text(start + width + 0.3, y, ("  " * indent) + _label(s), va="center", fontsize=8)
    for s in others:
        for link in s.links:
            target = ypos.get(link.context.span_id)
            if target is not None:
                x = (s.start_time - t0) / 1e6
                ax.annotate(
                    "",
                    xy=(x, target - 0.3),
                    xytext=(x, ypos[s.context.span_id] + 0.3),
                    arrowprops={
                        "arrowstyle": "->",
                        "linestyle": "dashed",
                        "color": COLORS["CLIENT"],
                    },
                )
    ax.set_yticks([])
    ax.set_xlabel("ms since the request began")
    trace_id = f"{root.context.trace_id:032x}"
    ax.set_title(
        f"trace {trace_id[:8]}..: an HTTP request's messages, sent by kclient.Producer "
        "and processed by kclient.Consumer\n(below: the poll span, in its own trace, "
        "with its links to the send spans)",
        fontsize=9,
    )
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
    ax.legend(handles, list(COLORS), loc="lower right", fontsize=7, ncol=5)
    end = max((s.end_time - t0) / 1e6 for s in rows)
    ax.set_xlim(0, end * 1.9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kclient.bench.trace_picture", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, default=Path("docs/img/trace.png"))
    args = parser.parse_args(argv)
    spans = capture()
    draw(spans, args.out)
    print(f"{len(spans)} spans drawn to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
