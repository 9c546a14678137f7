"""The layering rules hold: protocol imports nothing else of kclient, the broker only protocol,
and partitioner / encoders stand alone; and no two kclient modules import each other, at module
level or inside a function (a function-level import that hides a cycle is a cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "kclient"


def module_name(path: Path, root: Path = ROOT) -> str:
    """``kclient/consumer/stream.py`` -> ``kclient.consumer.stream`` (a package: its name)."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def kclient_imports(
    path: Path, root: Path = ROOT, modules: frozenset[str] = frozenset()
) -> set[str]:
    """Every kclient module a file imports anywhere in it (function bodies too), relative
    imports made absolute; ``from pkg import sub`` names ``pkg.sub`` when that is a module."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "kclient"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "kclient":
                continue
            subs = {f"{target}.{a.name}" for a in node.names} & modules
            found |= subs or {target}
    return found


def files(sub: str):
    target = ROOT / sub
    return [target] if target.suffix == ".py" else sorted(target.rglob("*.py"))


RULES = [
    ("protocol", ("kclient.protocol",)),
    ("broker", ("kclient.protocol", "kclient.broker")),
    ("schema_registry", ("kclient.schema_registry", "kclient.core.steps")),
    # the sans-IO core: the wire, plain structures and errors, the sans-IO SASL mechanisms
    (
        "core",
        (
            "kclient.protocol",
            "kclient.core",
            "kclient.errors",
            "kclient.structs",
            "kclient.security.sasl",
        ),
    ),
    ("partitioner.py", ()),
    ("encoders.py", ()),
]


@pytest.mark.parametrize("sub,allowed", RULES, ids=[r[0] for r in RULES])
def test_layer_imports_only_what_it_may(sub, allowed):
    checked = files(sub)
    if sub == "protocol":
        assert checked, "kclient/protocol has no modules"
    for path in checked:
        bad = {
            m
            for m in kclient_imports(path)
            if not any(m == a or m.startswith(a + ".") for a in allowed)
        }
        assert not bad, f"{path.relative_to(ROOT.parent)} imports {sorted(bad)}"


def test_the_checker_sees_relative_imports(tmp_path):
    # a relative import climbing out of protocol must be caught (the checker itself can fail)
    root = tmp_path / "kclient"
    probe = root / "protocol" / "_layering_probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def f():\n    from ..connection import BrokerConnection\n")
    assert kclient_imports(probe, root) == {"kclient.connection"}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the kclient modules it imports (anywhere in the file), with the packages that
    importing them initialises first (its own enclosing packages are already initialised)."""
    paths = {module_name(p, root): p for p in root.rglob("*.py")}
    modules = frozenset(paths)
    graph = {}
    for m, p in paths.items():
        own = {m.rsplit(".", i)[0] for i in range(1, m.count(".") + 1)}
        targets = {
            t.rsplit(".", i)[0]
            for t in kclient_imports(p, root, modules)
            for i in range(t.count(".") + 1)
        }
        graph[m] = (targets & modules) - own - {m}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    cycles.append(sorted(comp))
    return cycles


#: Cycles being taken apart (none: list one here only when it cannot be avoided, saying why).
KNOWN_CYCLES: list[list[str]] = []


def test_no_import_cycles():
    cycles = [c for c in import_cycles(import_graph()) if c not in KNOWN_CYCLES]
    assert not cycles, f"modules importing each other (directly or through others): {cycles}"


def test_the_cycle_checker_finds_a_cycle_hidden_in_a_function(tmp_path):
    root = tmp_path / "kclient"
    (root / "a").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "a" / "__init__.py").write_text("from .b import B\n")
    (root / "a" / "b.py").write_text("class B:\n    pass\n")
    (root / "a" / "c.py").write_text("from kclient.a import b\n")
    (root / "a" / "d.py").write_text("def make():\n    from . import c\n")
    assert import_cycles(import_graph(root)) == []
    (root / "a" / "b.py").write_text("def f():\n    from .d import make\n")
    (root / "a" / "c.py").write_text("from kclient.a import d\n")
    (root / "a" / "d.py").write_text("def make():\n    from . import b\n")
    assert import_cycles(import_graph(root)) == [["kclient.a.b", "kclient.a.d"]]


def test_importing_a_submodule_initialises_its_package_first(tmp_path):
    root = tmp_path / "kclient"
    (root / "a").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "x.py").write_text("from kclient.a.b import B\n")
    (root / "a" / "__init__.py").write_text("from kclient.x import X\n")
    (root / "a" / "b.py").write_text("from . import c\n")
    (root / "a" / "c.py").write_text("")
    graph = import_graph(root)
    assert graph["kclient.x"] == {"kclient.a", "kclient.a.b"}
    assert graph["kclient.a.b"] == {"kclient.a.c"}  # its own package is no new import
    assert import_cycles(graph) == [["kclient.a", "kclient.x"]]


def test_no_module_imports_another_packages_private_names():
    """A leading underscore means 'this package's own': another package importing it couples
    to what may change without notice (issue 22). Dunder names (``__version__``) are public."""
    bad = []
    for path in ROOT.rglob("*.py"):
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "kclient":
                continue
            private = [
                a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")
            ]
            if private and target.split(".")[:2] != name.split(".")[:2]:
                bad.append(f"{path.relative_to(ROOT.parent)}: {target} {private}")
    assert not bad, bad
