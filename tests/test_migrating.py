"""docs/migrating.md's "A program moved": the kafka-python and confluent-kafka programs run as
written with their library, then on kclient after the documented changes only (imports, and
lines marked ``# trap: NAME`` where NAME is a row of the traps table), with the same results."""

from __future__ import annotations

import itertools
import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).parent.parent / "docs" / "migrating.md"
_names = itertools.count()


def _section(title: str) -> tuple[str, list[tuple[str, str]]]:
    """The program block under ``### title`` and its diff as (old line, new lines) pairs."""
    text = DOC.read_text()
    part = text.split(f"### {title}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    program = re.search(r"```python\n(.*?)```", part, re.S).group(1)
    diff = re.search(r"```diff\n(.*?)```", part, re.S).group(1).splitlines()
    changes: list[tuple[str, str]] = []
    for line in diff:
        if line.startswith("-"):
            changes.append((line[1:], ""))
        else:
            assert line.startswith("+") and changes, line
            old, new = changes[-1]
            changes[-1] = (old, new + line[1:] + "\n")
    return program, changes


def _traps() -> str:
    return DOC.read_text().split("## The traps", 1)[1].split("\n## ", 1)[0]


def _moved(program: str, changes: list[tuple[str, str]]) -> str:
    traps = _traps()
    for old, new in changes:
        assert program.count(old + "\n") == 1, old
        is_import = old.lstrip().startswith(("from ", "import "))
        if not is_import:
            tag = re.search(r"# trap: (\w+)$", new.strip())
            assert tag, f"a changed line that is not an import names its trap: {new!r}"
            assert f"| `{tag.group(1)}" in traps, f"trap {tag.group(1)!r} is not in the table"
        program = program.replace(old + "\n", new)
    assert "kafka" not in program.replace("kclient", "").split("def run")[0].lower().replace(
        "kafkaconsumer", ""
    ).replace("kafkaproducer", "")
    return program


def _run(source: str, bootstrap: str, topic: str):
    namespace: dict = {}
    exec(compile(source, f"<migrating.md {topic}>", "exec"), namespace)
    return namespace["run"](bootstrap, topic)


@pytest.mark.parametrize("title", ["kafka-python", "confluent-kafka"])
def test_the_program_runs_on_both_libraries_with_the_same_results(mini_broker, title):
    program, changes = _section(title)
    original_topic, moved_topic = f"orig{next(_names)}", f"moved{next(_names)}"
    for topic in (original_topic, moved_topic):
        mini_broker.create_topic(topic, partitions=1)
    theirs = _run(program, mini_broker.bootstrap, original_topic)
    ours = _run(_moved(program, changes), mini_broker.bootstrap, moved_topic)
    assert ours == theirs
    assert len(ours[-1]) == 10  # all ten records were produced and read back
