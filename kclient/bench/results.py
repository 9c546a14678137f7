"""The results file ``kclient bench producer|consumer|stream|broker --json PATH`` writes.

One format for every benchmark, read by :mod:`kclient.bench.charts`: the benchmark's name, the
command line, which entry is kclient's (``kclient``: the client, or for ``broker`` the
mini-broker, that the peers are compared with) and one row per (broker, case, client) with the
best rate in records per second.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def row(broker: str, case: str, client: str, rate: float) -> dict[str, Any]:
    """One result: ``client``'s best rate (records/s) for ``case`` on ``broker``."""
    return {"broker": broker, "case": case, "client": client, "rate": round(float(rate), 1)}


def write_results(
    path: str | os.PathLike[str],
    benchmark: str,
    kclient: str,
    rows: Iterable[dict[str, Any]],
    argv: list[str] | None = None,
) -> Path:
    """Write the results file (JSON) of one run (``argv``: the benchmark's options)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "benchmark": benchmark,
        "kclient": kclient,
        "command": " ".join(
            ["kclient", "bench", benchmark, *(sys.argv[1:] if argv is None else argv)]
        ),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs",
        "results": list(rows),
    }
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return out


def read_results(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a results file, checking the fields the charts need."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    for key in ("benchmark", "kclient", "results"):
        if key not in doc:
            raise ValueError(f"{path}: not a kclient bench results file (no {key!r})")
    return doc


__all__ = ["row", "write_results", "read_results"]
