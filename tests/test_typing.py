"""kclient ships py.typed (PEP 561): a user's script type-checks against the public API under
mypy --strict, and a wrong call is caught before it runs (issue 15)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.needs import need_module

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = Path(__file__).with_name("typing") / "user_script.py"


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """mypy --strict on ``source`` as a user script, kclient seen as an installed package (its
    own findings silenced, as mypy treats site-packages)."""
    need_module("mypy")
    (tmp_path / "mypy.ini").write_text(
        "[mypy]\nstrict = True\n[mypy-kclient.*]\nfollow_imports = silent\n"
    )
    (tmp_path / "user.py").write_text(source)
    env = {"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            "mypy.ini",
            "--cache-dir",
            str(ROOT / ".mypy_cache" / "user"),
            "user.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_py_typed_is_shipped():
    assert (ROOT / "kclient" / "py.typed").exists()
    assert 'kclient = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()


def test_a_typed_user_script_passes_mypy_strict(tmp_path):
    out = _mypy(tmp_path, EXAMPLE.read_text())
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_wrong_send_call_fails_mypy(tmp_path):
    bad = EXAMPLE.read_text().replace(
        'p.send(ProducerData("events", {"n": 1}, key=b"k"))', 'p.send("events", b"v")'
    )
    out = _mypy(tmp_path, bad)
    assert out.returncode == 1
    assert 'Too many arguments for "send" of "Producer"' in out.stdout, out.stdout
    assert "_Py" not in out.stdout, "messages name the public class"


def test_a_misspelt_request_body_key_fails_mypy(tmp_path):
    # the generated typed request bodies (kclient.protocol.messages.*_bodies) catch before run
    # time what the encoder refuses at run time
    source = (
        "from kclient.protocol.messages import JoinGroupRequestBody\n"
        "ok: JoinGroupRequestBody = {'group_id': 'g', 'group_instance_id': None}\n"
        "bad: JoinGroupRequestBody = {'group_id': 'g', 'group_instace_id': 'x'}\n"
    )
    out = _mypy(tmp_path, source)
    assert out.returncode == 1
    assert 'user.py:3: error: Extra key "group_instace_id" for TypedDict' in out.stdout, out.stdout
    assert "user.py:2" not in out.stdout, out.stdout
