"""The typed protocol surface: generated views of every API, kept current, seen by mypy."""

from __future__ import annotations

import importlib
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kclient.protocol import apis as apis_package
from kclient.protocol import messages
from kclient.protocol.apis import ALL_APIS, METADATA
from kclient.protocol.codegen import MESSAGES_DIR, class_names, family, render_modules
from tests.needs import missing

ROOT = Path(__file__).resolve().parents[2]


def test_generated_messages_package_is_current():
    modules = render_modules()
    assert sorted(p.name for p in MESSAGES_DIR.glob("*.py")) == sorted(modules), (
        "stale: run python -m kclient.protocol.codegen"
    )
    for name, text in modules.items():
        assert (MESSAGES_DIR / name).read_text(encoding="utf-8") == text, (
            f"{name} is stale: run python -m kclient.protocol.codegen"
        )


def test_family_modules_stay_small_and_each_view_is_in_its_apis_family():
    for path in MESSAGES_DIR.glob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) < 600, path.name
    for api in ALL_APIS:
        module = importlib.import_module(f"{messages.__name__}.{family(api)}")
        for view in class_names(api):
            assert getattr(messages, view) is getattr(module, view)


def _api_modules():
    for info in pkgutil.iter_modules(apis_package.__path__):
        yield importlib.import_module(f"{apis_package.__name__}.{info.name}")


def test_every_api_is_declared_with_its_typed_views():
    declared = {}
    for module in _api_modules():
        for var, annotation in vars(module).get("__annotations__", {}).items():
            declared[id(getattr(module, var))] = annotation
    for api in ALL_APIS:
        req, resp = class_names(api)
        assert declared.get(id(api)) == f"Api[{req}, {resp}]", (
            f"declare {api.name} as `NAME: Api[{req}, {resp}] = Api(...)` (importing the views "
            "from ..messages under TYPE_CHECKING) and run python -m kclient.protocol.codegen"
        )
        assert {req, resp} <= set(messages.__all__)


@pytest.mark.parametrize("api", ALL_APIS, ids=[a.name for a in ALL_APIS])
def test_views_name_every_field_a_decoded_message_has(api):
    req, resp = class_names(api)
    for view, codec in ((req, api.request_codec), (resp, api.response_codec)):
        fields = list(getattr(messages, view).__annotations__)
        for version in (api.min_version, api.max_version):
            c = codec(version)
            decoded, _ = c.read(b"".join(_encode_defaults(c)), 0)
            assert list(decoded.__dict__) == [n for n, _ in c._codecs] + [n for n, _ in c._absent]
            assert sorted(decoded.__dict__) == sorted(fields)


def _encode_defaults(codec):
    out = []
    codec.write({}, out)
    return out


def test_py_typed_ships():
    assert (ROOT / "kclient" / "py.typed").is_file()
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = config.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    assert 'kclient = ["py.typed"]' in section


def test_decoded_messages_stay_structs():
    """The views are for type checkers only: decoding returns the same Struct as before."""
    from kclient.protocol.schema import Struct

    body = b"".join(METADATA.encode_response(1, {"brokers": [], "topics": []}))
    decoded = METADATA.decode_response(1, body)
    assert type(decoded) is Struct and decoded.controller_id == -1


def _mypy(tmp_path, *args):
    if shutil.which("mypy", path=str(Path(sys.executable).parent)) is None:
        missing("mypy not installed (pip install -e '.[test]')")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            "--follow-imports=silent",
            "--no-error-summary",
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    return proc.returncode, proc.stdout


SNIPPET = """
from kclient.protocol.apis import FETCH, METADATA
from kclient.protocol.framing import ClientProtocol

meta = METADATA.decode_response(9, b"")
reveal_type(meta)
reveal_type(meta.brokers[0].port)
reveal_type(meta.topics[0].partitions[0].leader_epoch)
reveal_type(FETCH.decode_request(4, b"").topics[0].partitions)
meta.no_such_field
ClientProtocol().send_request(METADATA, 9, {"topics": None})
"""


def test_mypy_types_decoded_messages(tmp_path):
    script = tmp_path / "typed_use.py"
    script.write_text(SNIPPET, encoding="utf-8")
    _, out = _mypy(tmp_path, str(script))
    revealed = [
        line.split("Revealed type is ")[1].replace("builtins.", "")
        for line in out.splitlines()
        if "Revealed type is" in line
    ]
    assert revealed == [
        '"kclient.protocol.messages.core.MetadataResponse"',
        '"int"',
        '"int"',
        '"list[kclient.protocol.messages.core.FetchRequestPartition]"',
    ]
    assert '"MetadataResponse" has no attribute "no_such_field"' in out
    assert out.count("error:") == 1, out
