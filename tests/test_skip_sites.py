"""Every skip in tests/ and integration/ goes through tests/needs.py, so KCLIENT_REQUIRE_ALL=1
turns each one caused by a missing component into a failure (issue 25)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: pytest's own ways to skip; tests/needs.py is the one module allowed to call them.
BARE = re.compile(
    r"pytest\.skip\(|importorskip\(|mark\.skip\b|skipif\(|pytest\.xfail\(|mark\.xfail\b"
)


def test_no_test_skips_around_tests_needs():
    found = []
    for tree in ("tests", "integration"):
        for path in sorted((ROOT / tree).rglob("*.py")):
            if path.name == "needs.py" or path == Path(__file__).resolve():
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if BARE.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, (
        "skip through tests/needs.py (missing / need / not_applicable):\n" + "\n".join(found)
    )


def test_the_scan_sees_a_bare_skip():
    assert BARE.search('    pytest.skip("x")') and BARE.search('m = pytest.importorskip("m")')
    assert not BARE.search('    missing("x")')


def _run_missing(tmp_path, require_all: str):
    import os
    import subprocess
    import sys

    (tmp_path / "test_gone.py").write_text(
        "from tests.needs import missing, need_docker, need_module\n"
        "def test_server():\n    missing('no such server')\n"
        "def test_module():\n    need_module('kclient_no_such_module')\n"
        "def test_docker():\n    need_docker('no Docker engine answers')\n"
    )
    env = dict(os.environ, KCLIENT_REQUIRE_ALL=require_all, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_gone.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_missing_component_skips_saying_why(tmp_path):
    run = _run_missing(tmp_path, "0")
    assert run.returncode == 0 and "3 skipped" in run.stdout, run.stdout


def test_a_missing_component_fails_under_require_all(tmp_path):
    run = _run_missing(tmp_path, "1")
    # the Docker engine is exempt (tests/needs.py): its test skips in this mode too
    assert run.returncode == 1 and "2 failed, 1 skipped" in run.stdout, run.stdout
    assert "KCLIENT_REQUIRE_ALL=1 and missing component: no such server" in run.stdout
    assert "kclient_no_such_module cannot be imported" in run.stdout
