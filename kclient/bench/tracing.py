"""Tracing overhead: Producer ``send()`` and ``kclient.Consumer`` throughput with tracing off
(opentelemetry absent), installed without a provider, and on with the SDK and a no-op
exporter, beside a baseline build (the code without the observability hooks).

Run: ``python -m kclient.bench.tracing --baseline DIR [--records N] [--repeat R]``

``DIR`` is a kclient source tree to compare with (e.g. a ``git worktree`` of the commit before,
with its C speed-ups built); without it only this tree is measured.  A mini-broker process
(this tree's) serves one single-partition topic, preloaded with ``N`` 100-byte records.  Each
figure is the best of ``R`` runs, each run a fresh subprocess whose current directory is the
tree measured (so ``import kclient`` imports that tree); the builds alternate run by run so a
drift of the machine's load hits both.  "absent" blocks opentelemetry with a ``sys.modules``
entry of None (an ImportError, as when it is not installed); "sdk" sets a global
TracerProvider with a BatchSpanProcessor over an exporter that drops the spans.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kclient.testing import MiniBrokerProcess

MODES = ("absent", "no-provider", "sdk")

#: one measurement in a fresh interpreter: argv = mode, kind, bootstrap, topic, records
WORKER = r"""
import json, sys, time
mode, kind, boot, topic, n = sys.argv[1:6]
n = int(n)
if mode == "absent":
    sys.modules["opentelemetry"] = None
elif mode == "sdk":
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    trace.set_tracer_provider(provider)
import kclient
from kclient import Consumer, Producer, ProducerData, TopicPartition
if kind == "send":
    p = Producer(bootstrap_servers=boot, producer_type="async")
    items = [ProducerData(topic, b"x" * 100) for _ in range(n)]
    send = p.send
    t0, c0 = time.perf_counter(), time.process_time()
    for d in items:
        send(d)
    p.flush()
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    p.close()
else:
    c = Consumer(bootstrap_servers=boot, auto_offset_reset="earliest", consumer_timeout_ms=10000)
    c.assign([TopicPartition(topic, 0)])
    got = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for r in c:
        got += 1
        if got == n:
            break
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    c.close()
    assert got == n, got
print(json.dumps({"rate": n / secs, "cpu_rate": n / cpu, "kclient": kclient.__file__}))
"""


def run_one(
    tree: Path, mode: str, kind: str, bootstrap: str, topic: str, n: int
) -> tuple[float, float]:
    """Records per second (wall, and per second of the process's CPU time) of one
    measurement in a fresh interpreter rooted at ``tree``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", WORKER, mode, kind, bootstrap, topic, str(n)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode:
        raise SystemExit(f"{tree} {mode} {kind} failed:\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not result["kclient"].startswith(str(tree)):
        raise SystemExit(f"{tree}: imported {result['kclient']} instead")
    return float(result["rate"]), float(result["cpu_rate"])


def preload(bootstrap: str, topic: str, n: int) -> None:
    from kclient import Producer

    with Producer(bootstrap_servers=bootstrap, producer_type="async") as p:
        p.send_values(topic, [b"x" * 100] * n)
        p.flush()


def measure(trees: dict[str, Path], n: int, repeat: int) -> dict[str, dict[str, float]]:
    """``{"kind build mode": best rate}`` for every build, mode and kind."""
    best: dict[str, float] = {}
    with MiniBrokerProcess({"num.partitions": "1"}) as broker:
        preload(broker.bootstrap, "bench-consume", n)
        for r in range(repeat):
            for build, tree in trees.items() if r % 2 == 0 else reversed(trees.items()):
                for mode in MODES if build == "current" else ("absent", "no-provider"):
                    for kind in ("send", "consume"):
                        topic = (
                            f"bench-send-{build}-{mode}-{r}" if kind == "send" else "bench-consume"
                        )
                        # (the SDK's spans cost ~100x more: a tenth of the records is enough)
                        count = n // 10 if mode == "sdk" else n
                        rate, cpu_rate = run_one(tree, mode, kind, broker.bootstrap, topic, count)
                        key = f"{kind} {build} {mode}"
                        best[key] = max(best.get(key, 0.0), rate)
                        best["cpu " + key] = max(best.get("cpu " + key, 0.0), cpu_rate)
                        print(
                            f"  run {r + 1}: {key}: {rate:,.0f}/s, {cpu_rate:,.0f}/cpu-s",
                            file=sys.stderr,
                        )
    return {"best": best}


def report(best: dict[str, float], has_baseline: bool) -> str:
    """A Markdown table: rates per kind and mode (wall clock and per CPU second of the
    client's process), and their ratios to the baseline's (the SDK's: to its no-provider)."""
    rows = [
        "| | mode | records/s | vs baseline | records/CPU-s | vs baseline |",
        "|---|---|---|---|---|---|",
    ]
    for kind in ("send", "consume"):
        for mode in MODES:
            cells = []
            for prefix in ("", "cpu "):
                rate = best[f"{prefix}{kind} current {mode}"]
                base = best.get(
                    f"{prefix}{kind} baseline {mode}",
                    best.get(f"{prefix}{kind} baseline no-provider"),
                )
                cells += [f"{rate:,.0f}", f"{rate / base:.3f}" if has_baseline and base else "-"]
            name = "Producer.send()" if kind == "send" else "Consumer iteration"
            rows.append(f"| {name} | {mode} | " + " | ".join(cells) + " |")
        if has_baseline:
            for mode in ("absent", "no-provider"):
                rows.append(
                    f"| baseline {kind} | {mode} | "
                    f"{best[f'{kind} baseline {mode}']:,.0f} | 1 | "
                    f"{best[f'cpu {kind} baseline {mode}']:,.0f} | 1 |"
                )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kclient.bench.tracing", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--baseline", type=Path, default=None, help="a kclient tree without the observability hooks"
    )
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parents[2]
    trees: dict[str, Path] = {"current": here}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    result: dict[str, Any] = measure(trees, args.records, args.repeat)
    print(report(result["best"], args.baseline is not None))
    print(f"load average before/after: {os.getloadavg()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
