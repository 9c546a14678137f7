"""Topic filters for wildcard subscriptions: ``Whitelist`` and ``Blacklist``.

As Kafka 0.8.2's ``kafka.consumer.TopicFilter``: the raw text is trimmed, ``,`` becomes ``|``,
spaces are removed and quotes around the whole text (from property files) are dropped; the
result must be a valid regex and is matched against the *whole* topic name (Java's
``String.matches``).  Internal topics (``__consumer_offsets``) are left out unless
``exclude_internal_topics`` is false.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["TopicFilter", "Whitelist", "Blacklist", "INTERNAL_TOPICS", "filter_for_pattern"]

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class TopicFilter:
    """Base class: a regex over topic names; subclasses decide what a match means."""

    #: the ``pattern`` written to the consumer's ZooKeeper registration
    pattern = ""

    def __init__(self, raw_regex: str) -> None:
        """Normalize ``raw_regex`` as Kafka does; ValueError if it is not a valid regex."""
        regex = raw_regex.strip().replace(",", "|").replace(" ", "")
        regex = re.sub(r"""^["']+""", "", regex)
        regex = re.sub(r"""["']+$""", "", regex)
        try:
            self._compiled = re.compile(regex)
        except re.error as exc:
            raise ValueError(f"{regex} is an invalid regex: {exc}") from None
        self.regex = regex

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.regex!r})"

    def __str__(self) -> str:
        return self.regex

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.regex == other.regex

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.regex))

    def matches(self, topic: str) -> bool:
        """Whether the regex matches the whole topic name."""
        return self._compiled.fullmatch(topic) is not None

    def is_topic_allowed(self, topic: str, exclude_internal_topics: bool = True) -> bool:
        """Whether a consumer with this filter reads ``topic``."""
        raise NotImplementedError

    def filter(self, topics: Iterable[str], exclude_internal_topics: bool = True) -> list[str]:
        """The allowed topics among ``topics``, sorted."""
        return sorted(t for t in topics if self.is_topic_allowed(t, exclude_internal_topics))


class Whitelist(TopicFilter):
    """Topics whose whole name matches the regex."""

    pattern = "white_list"

    def is_topic_allowed(self, topic: str, exclude_internal_topics: bool = True) -> bool:
        if exclude_internal_topics and topic in INTERNAL_TOPICS:
            return False
        return self.matches(topic)


class Blacklist(TopicFilter):
    """Topics whose whole name does not match the regex."""

    pattern = "black_list"

    def is_topic_allowed(self, topic: str, exclude_internal_topics: bool = True) -> bool:
        if exclude_internal_topics and topic in INTERNAL_TOPICS:
            return False
        return not self.matches(topic)


def filter_for_pattern(pattern: str, regex: str) -> TopicFilter:
    """The filter a registration's ``pattern`` ("white_list"/"black_list") and regex describe."""
    if pattern == Whitelist.pattern:
        return Whitelist(regex)
    if pattern == Blacklist.pattern:
        return Blacklist(regex)
    raise ValueError(f"not a wildcard pattern: {pattern!r}")
