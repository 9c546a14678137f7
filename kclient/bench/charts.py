"""Bar charts (PNG) of ``kclient bench ... --json PATH`` results: kclient against each peer.

One PNG per benchmark and broker, ``<out>/bench-<benchmark>-<broker>.png``: a group of bars
per case, one bar per client (kclient's in blue, the peers in grey), each labelled with its
rate, and every peer's bar also with kclient's ratio to it (``kclient 2.1x``), kclient's entry
being the one the results file names.  Needs matplotlib (``pip install kclient[docs]``).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kclient.bench.results import read_results

KCLIENT_COLOURS = ("#1f5fa8", "#4f8fd0", "#8fbbe8", "#bcd6f2", "#dbe9f8")
PEER_COLOURS = ("#6b6b6b", "#9a9a9a", "#c4c4c4", "#555555", "#dddddd")


def _is_kclient(client: str, kclient: str) -> bool:
    """kclient's own entries: the named one and its variants (``kclient-list``...)."""
    return client == kclient or client.startswith("kclient")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _rate(value: float) -> str:
    """Rates as 12.3k / 1.2M."""
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    return f"{value / 1e3:.1f}k" if value >= 1e3 else f"{value:.0f}"


def render(doc: dict[str, Any], broker: str, path: Path) -> Path:
    """Draw one benchmark's results on one broker into ``path`` (PNG, under 100 KB)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in doc["results"] if r["broker"] == broker]
    cases = list(dict.fromkeys(r["case"] for r in rows))
    ours = list(
        dict.fromkeys(r["client"] for r in rows if _is_kclient(r["client"], doc["kclient"]))
    )
    peers = list(dict.fromkeys(r["client"] for r in rows if r["client"] not in ours))
    clients = ours + peers
    rate = {(r["case"], r["client"]): r["rate"] for r in rows}
    width = 0.8 / len(clients)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.0 + 0.55 * len(clients) * len(cases)), 3.6))
    top = max(rate.values())
    for k, client in enumerate(clients):
        colour = KCLIENT_COLOURS[k % 5] if client in ours else PEER_COLOURS[(k - len(ours)) % 5]
        xs = [
            i + (k - (len(clients) - 1) / 2) * width
            for i, c in enumerate(cases)
            if (c, client) in rate
        ]
        ys = [rate[(c, client)] for c in cases if (c, client) in rate]
        bars = ax.bar(xs, ys, width * 0.92, label=client, color=colour)
        for bar, case in zip(bars, [c for c in cases if (c, client) in rate]):
            label = _rate(rate[(case, client)])
            base = rate.get((case, doc["kclient"]))
            if client in peers and base:
                label += f"\nkclient is\n{base / rate[(case, client)]:.2f}x"
            ax.annotate(
                label,
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=6.5,
                xytext=(0, 1),
                textcoords="offset points",
            )
    ax.set_xticks(range(len(cases)), cases, fontsize=8)
    ax.set_ylim(0, top * 1.32)
    ax.set_ylabel("records/s (best run)", fontsize=8)
    ax.yaxis.set_major_formatter(lambda v, _: _rate(v))
    ax.tick_params(axis="y", labelsize=7)
    ax.set_title(f"kclient bench {doc['benchmark']} ({broker})", fontsize=10)
    ax.legend(fontsize=7, ncol=min(len(clients), 4), loc="upper left", frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.text(0.01, 0.01, doc.get("command", ""), fontsize=5.5, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90, metadata={"Software": None})
    plt.close(fig)
    return path


def render_all(files: Sequence[str | Path], out: Path) -> list[Path]:
    """Render every (benchmark, broker) of every results file; the PNGs written."""
    written = []
    for file in files:
        doc = read_results(file)
        brokers = list(dict.fromkeys(r["broker"] for r in doc["results"]))
        for broker in brokers:
            name = f"bench-{doc['benchmark']}" + (
                f"-{_slug(broker)}.png" if len(brokers) > 1 else ".png"
            )
            written.append(render(doc, broker, out / name))
    return written


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, render, print the files written; 1 without matplotlib."""
    ap = argparse.ArgumentParser(
        prog="kclient bench charts",
        description=__doc__.split("\n\n")[0],
        epilog="example: kclient bench charts docs/img/results/*.json "
        "--out docs/img (scripts/charts reruns the benchmarks)",
    )
    ap.add_argument("results", nargs="+", help="results files of kclient bench ... --json PATH")
    ap.add_argument("--out", default="docs/img", help="directory for the PNGs (docs/img)")
    args = ap.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("kclient bench charts needs matplotlib: pip install 'kclient[docs]'", file=sys.stderr)
        return 1
    for path in render_all(args.results, Path(args.out)):
        print(f"{path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
