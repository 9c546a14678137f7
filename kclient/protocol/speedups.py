"""Where kclient's optional C speed-ups are loaded: one switch, ``KCLIENT_PURE_PYTHON=1``, makes
every one of them (the producer's ``_speedups``, the v2 record walker ``_walk``) fall back to
its Python twin, so CI can run the same tests over the Python references.

A build older than its ``.pyx`` source beside it (a checkout changed since the last
``python setup.py build_ext --inplace``) is not loaded: its Python twin runs instead, with a
warning, so tests and benchmarks never measure C code that is not the source's."""

from __future__ import annotations

import importlib
import os
import warnings
from pathlib import Path
from types import ModuleType

__all__ = ["pure_python", "load_speedup", "stale_source"]


def pure_python() -> bool:
    """True when ``KCLIENT_PURE_PYTHON=1`` asks for the Python twins of the C speed-ups."""
    return os.environ.get("KCLIENT_PURE_PYTHON") == "1"


def stale_source(built: str | os.PathLike[str]) -> Path | None:
    """The ``.pyx`` beside the extension ``built`` when it was changed after the build, else
    None (no source beside it: an installed wheel)."""
    path = Path(built)
    source = path.with_name(path.name.split(".", 1)[0] + ".pyx")
    try:
        return source if source.stat().st_mtime > path.stat().st_mtime else None
    except OSError:
        return None


def load_speedup(name: str) -> ModuleType | None:
    """The built C extension module ``name``, or None (not built, built before its source last
    changed, or KCLIENT_PURE_PYTHON=1)."""
    if pure_python():
        return None
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    built = getattr(module, "__file__", None)
    source = stale_source(built) if built else None
    if source is not None:
        warnings.warn(
            f"{built} is older than {source}: its Python twin runs instead; rebuild with "
            "`python setup.py build_ext --inplace`",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return module
