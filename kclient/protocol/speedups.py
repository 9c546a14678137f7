"""Where kclient's optional C speed-ups are loaded: one switch, ``KCLIENT_PURE_PYTHON=1``, makes
every one of them (the producer's ``_speedups``, the v2 record walker ``_walk``) fall back to
its Python twin, so CI can run the same tests over the Python references."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["pure_python", "load_speedup"]


def pure_python() -> bool:
    """True when ``KCLIENT_PURE_PYTHON=1`` asks for the Python twins of the C speed-ups."""
    return os.environ.get("KCLIENT_PURE_PYTHON") == "1"


def load_speedup(name: str) -> ModuleType | None:
    """The built C extension module ``name``, or None (not built, or KCLIENT_PURE_PYTHON=1)."""
    if pure_python():
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
