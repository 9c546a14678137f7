"""``sasl.jaas.config`` read as the Java client reads it (``javax.security.auth.login``'s
``ConfigFile`` grammar): ``<LoginModule class> <flag> key=value ... ;`` where a value is a bare
word or a double-quoted string with backslash escapes.  Only the module and its options matter
here: ``username`` and ``password`` for PLAIN and SCRAM."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kclient.errors import InvalidConfigError

__all__ = ["JaasEntry", "parse_jaas"]

_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(
    r'\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<semi>;)|(?P<eq>=)|'
    r'(?P<word>[^\s=;"]+))',
    re.S,
)


@dataclass(frozen=True)
class JaasEntry:
    """One login module: its class name, control flag and options."""

    module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens; a stray character is an error naming where it is."""
    out, pos = [], 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise InvalidConfigError(
                f"sasl.jaas.config: cannot parse at character {pos} "
                "(the text is not shown: it may hold a secret)",
                "sasl.jaas.config",
            )
        kind = m.lastgroup or ""
        value = m.group(kind)
        if kind == "quoted":
            value = re.sub(r"\\(.)", r"\1", value[1:-1], flags=re.S)
        out.append((kind, value))
        pos = m.end()
    return out


def parse_jaas(text: str) -> JaasEntry:
    """The single login module of a client's ``sasl.jaas.config`` (Java allows only one)."""
    tokens = _tokens(text)
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][1].lower() not in _FLAGS:
        raise InvalidConfigError(
            "sasl.jaas.config: expected '<LoginModule> required key=\"value\" ...;', e.g. "
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            'username="alice" password="secret";',
            "sasl.jaas.config",
        )
    module, flag = tokens[0][1], tokens[1][1].lower()
    options: dict[str, str] = {}
    rest = tokens[2:]
    while rest and rest[0][0] != "semi":
        if (
            len(rest) < 3
            or rest[0][0] != "word"
            or rest[1][0] != "eq"
            or rest[2][0] not in ("word", "quoted")
        ):
            after = f" after option {list(options)[-1]!r}" if options else ""
            raise InvalidConfigError(
                f"sasl.jaas.config: expected key=value{after} in the "
                f"options of {module} (values are not shown: they may hold "
                "secrets)",
                "sasl.jaas.config",
            )
        options[rest[0][1]] = rest[2][1]
        rest = rest[3:]
    if not rest:
        raise InvalidConfigError("sasl.jaas.config must end with ';'", "sasl.jaas.config")
    if len(rest) > 1:
        raise InvalidConfigError(
            "sasl.jaas.config: a client takes one login module only", "sasl.jaas.config"
        )
    return JaasEntry(module, flag, options)
