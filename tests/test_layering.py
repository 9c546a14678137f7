"""The layering rules hold: protocol imports nothing else of kclient, the broker only protocol,
and partitioner / encoders stand alone."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "kclient"


def kclient_imports(path: Path) -> set[str]:
    """Every kclient module a file imports, with relative imports made absolute."""
    package = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    if path.name == "__init__.py":
        package = ".".join(path.relative_to(ROOT.parent).parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "kclient"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] == "kclient":
                found.add(name)
    return found


def files(sub: str):
    target = ROOT / sub
    return [target] if target.suffix == ".py" else sorted(target.rglob("*.py"))


RULES = [
    ("protocol", ("kclient.protocol",)),
    ("broker", ("kclient.protocol", "kclient.broker")),
    ("partitioner.py", ()),
    ("encoders.py", ()),
]


@pytest.mark.parametrize("sub,allowed", RULES, ids=[r[0] for r in RULES])
def test_layer_imports_only_what_it_may(sub, allowed):
    checked = files(sub)
    if sub == "protocol":
        assert checked, "kclient/protocol has no modules"
    for path in checked:
        bad = {m for m in kclient_imports(path)
               if not any(m == a or m.startswith(a + ".") for a in allowed)}
        assert not bad, f"{path.relative_to(ROOT.parent)} imports {sorted(bad)}"


def test_the_checker_sees_relative_imports(tmp_path):
    # a relative import climbing out of protocol must be caught (the checker itself can fail)
    probe = ROOT / "protocol" / "_layering_probe.py"
    probe.write_text("from ..connection import BrokerConnection\n")
    try:
        assert "kclient.connection" in kclient_imports(probe)
    finally:
        probe.unlink()
