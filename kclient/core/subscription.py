"""What a group consumer subscribes to, and when that calls for a rejoin, sans-IO.

:class:`Subscription` holds the topics (or the regex) given to ``subscribe()``, the topics the
last join subscribed to, and the partition counts seen since.  A consumer asks it which topics
of a Metadata answer it wants (:meth:`Subscription.matching`), whether a topic check is due
(every second with a pattern, else every 5 s, as the classic connector checks), and whether
what the check saw means a rejoin (:meth:`Subscription.changed`: other matching topics, or a
subscribed topic whose partition count changed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["Subscription"]


class Subscription:
    """One consumer's subscription (see the module docstring)."""

    def __init__(self) -> None:
        self.topics: list[str] = []
        self.pattern: re.Pattern[str] | None = None
        #: the topics the last join subscribed to
        self.joined_topics: list[str] = []
        self._counts: dict[str, int] | None = None
        self._next_check = 0.0

    def subscribe(self, topics: Iterable[str] | str | None, pattern: str | None) -> None:
        """``subscribe(topics=...)`` or ``subscribe(pattern=...)``: exactly one of them."""
        if (topics is None) == (pattern is None):
            raise TypeError("subscribe() takes topics or pattern, not both or neither")
        if isinstance(topics, str):
            topics = [topics]
        self.topics = sorted(set(topics or ()))
        self.pattern = re.compile(pattern) if pattern is not None else None

    def clear(self) -> None:
        """No subscription (unsubscribe(), assign())."""
        self.topics, self.pattern = [], None

    @property
    def active(self) -> bool:
        """Whether there is a subscription (topics or a pattern)."""
        return bool(self.topics or self.pattern)

    def subscription(self) -> set[str]:
        """The topics subscribed to (a pattern's: those it matched at the last join)."""
        return set(self.joined_topics if self.pattern else self.topics)

    def matching(self, topics: Mapping[str, Any], exclude_internal: bool) -> list[str]:
        """The pattern's topics among a Metadata answer's ``{name: TopicInfo}`` (without
        error; internal ones only when not excluded)."""
        assert self.pattern is not None
        return sorted(
            t
            for t, i in topics.items()
            if not i.error_code
            and not (i.is_internal and exclude_internal)
            and self.pattern.fullmatch(t)
        )

    @property
    def interval(self) -> float:
        return 1.0 if self.pattern is not None else 5.0

    def joined(self, topics: list[str]) -> None:
        """A join subscribed to ``topics``: the next check compares against them."""
        self.joined_topics = topics

    def assigned(self, now: float) -> None:
        """An assignment arrived: partition counts start over, the next check is an interval
        away."""
        self._counts = None
        self._next_check = now + self.interval

    @property
    def next_check(self) -> float:
        """When the next topic check is due (a monotonic time)."""
        return self._next_check

    def due(self, now: float) -> bool:
        """Whether a topic check is due; if so, the next one is an interval away."""
        if now < self._next_check:
            return False
        self._next_check = now + self.interval
        return True

    def changed(self, topics: list[str], counts: Mapping[str, int]) -> bool:
        """Whether the topics wanted now and their partition counts call for a rejoin."""
        before, self._counts = self._counts, dict(counts)
        return topics != self.joined_topics or (before is not None and before != counts)
