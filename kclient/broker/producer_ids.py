"""Producer ids for InitProducerId, unique across a cluster and never reused after a restart.

As Kafka's ProducerIdManager, a broker claims ids in blocks and records each claimed block on
disk before handing out its ids; block ``b`` of node ``n`` is ``[(b * MAX_NODES + n) * BLOCK,
... + BLOCK)``, so brokers of one cluster never overlap without talking to each other.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["ProducerIdManager", "BLOCK", "MAX_NODES"]

BLOCK = 1000
MAX_NODES = 1024


class ProducerIdManager:
    """Hands out producer ids of ``node_id``, persisting the next block number in ``path``."""

    def __init__(self, path: Path, node_id: int):
        self.path = Path(path)
        self.node_id = node_id % MAX_NODES
        self._lock = threading.Lock()
        self._next_block = self._load()
        self._next = self._end = 0

    def _load(self) -> int:
        try:
            return int(self.path.read_text().strip() or 0)
        except (OSError, ValueError):
            return 0

    def _claim(self) -> None:
        """Record the next block as used (atomic rename), then serve its ids."""
        block = self._next_block
        self._next_block = block + 1
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(f"{self._next_block}\n")
        os.replace(tmp, self.path)
        self._next = (block * MAX_NODES + self.node_id) * BLOCK
        self._end = self._next + BLOCK

    def next_id(self) -> int:
        """A fresh producer id."""
        with self._lock:
            if self._next >= self._end:
                self._claim()
            pid = self._next
            self._next += 1
            return pid
