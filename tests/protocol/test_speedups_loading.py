"""kclient.protocol.speedups: a C build older than its .pyx source is not loaded (its Python twin
runs, with a warning), so tests and benchmarks never run C code that is not the checkout's."""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from pathlib import Path

import pytest

from kclient.protocol.records import v2_walk
from kclient.protocol.speedups import load_speedup, stale_source
from tests.needs import c_twin


def _touch(path: Path, mtime: float) -> None:
    path.touch()
    os.utime(path, (mtime, mtime))


def test_stale_source_compares_the_build_with_the_pyx_beside_it(tmp_path):
    built = tmp_path / "_walk.cpython-311-x86_64-linux-gnu.so"
    _touch(built, 2_000_000)
    assert stale_source(built) is None  # no source beside it: an installed wheel
    _touch(tmp_path / "_walk.pyx", 1_000_000)
    assert stale_source(built) is None  # built after the source
    _touch(tmp_path / "_walk.pyx", 3_000_000)
    assert stale_source(built) == tmp_path / "_walk.pyx"


@c_twin(v2_walk._walk, "the C record walker")
def test_a_build_older_than_its_source_is_refused_with_a_warning(tmp_path, monkeypatch):
    built = Path(v2_walk._walk.__file__)
    package = tmp_path / "probe_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    copy = package / built.name
    shutil.copy(built, copy)
    _touch(copy, 2_000_000)
    _touch(package / "_walk.pyx", 1_000_000)
    monkeypatch.syspath_prepend(str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_speedup("probe_pkg._walk") is not None  # up to date: loaded quietly
    sys.modules.pop("probe_pkg._walk", None)
    _touch(package / "_walk.pyx", 3_000_000)
    with pytest.warns(RuntimeWarning, match=r"older than .*_walk\.pyx.*build_ext --inplace"):
        assert load_speedup("probe_pkg._walk") is None
