"""``ssl.principal.mapping.rules``: Kafka's ``SslPrincipalMapper``, which turns the subject DN of a
client certificate into the name ACLs use (``User:<name>``).

Rules are tried in order: ``RULE:pattern/replacement/`` (optionally ``L`` or ``U`` after the last
slash to lower- or upper-case the result) applies when ``pattern`` matches the whole DN, with
``$1``-style groups in ``replacement``; ``DEFAULT`` keeps the DN as it is.  A DN no rule matches
is refused (the connection gets no principal), as Kafka's ``NoMatchingRule``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PrincipalMapper", "NoMatchingRule"]

_RULE = re.compile(r"\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|\n|$)")


class NoMatchingRule(ValueError):
    """No ``ssl.principal.mapping.rules`` rule matched a certificate's DN."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        """The mapped name, or None when this rule does not match."""
        if self.pattern is None:
            return dn
        if not self.pattern.fullmatch(dn):
            return None
        name = self.pattern.sub(self.replacement, dn)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


class PrincipalMapper:
    """The parsed rules; ``name(dn)`` maps one DN."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules = _parse(rules or "DEFAULT")

    def name(self, dn: str) -> str:
        """The principal name of a DN (NoMatchingRule when no rule applies)."""
        for rule in self.rules:
            mapped = rule.apply(dn)
            if mapped is not None:
                return mapped
        raise NoMatchingRule(f"no ssl.principal.mapping.rules rule matches {dn!r}")


def _parse(text: str) -> list[_Rule]:
    """Kafka's rule grammar; ValueError naming what could not be read."""
    rules, pos = [], 0
    text = text.strip()
    while pos < len(text):
        match = _RULE.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"ssl.principal.mapping.rules: cannot parse {text[pos:]!r}")
        if match.group(1) == "DEFAULT":
            rules.append(_Rule(None))
        else:
            replacement = re.sub(r"\$(\d+)", r"\\g<\1>", match.group(3))
            rules.append(_Rule(re.compile(match.group(2)), replacement, match.group(4)))
        pos = match.end()
    return rules
