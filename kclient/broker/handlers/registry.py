"""Handler registration: each handler module declares the API definition it answers and the
versions it serves (as franz-go's kfake ``regKey``); HANDLERS and ApiVersions derive from that.

``@handles(METADATA, "0-10")`` on a module's ``handle`` function records it in :data:`HANDLERS`,
keyed by the :class:`~kclient.protocol.schema.Api` definition.  Nothing else lists API keys or
version ranges, so a new handler module is served (and advertised) once it is imported by
``kclient.broker.handlers``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from kclient.protocol.schema import Api, parse_versions

if TYPE_CHECKING:
    from kclient.protocol.framing import Request

    from ..interface import Broker

__all__ = ["HANDLERS", "Handler", "Registration", "handles", "served_versions"]

#: A handler answers a decoded request with a body, None (no response) or a Future of a body.
Handler = Callable[["Broker", "Request"], Any]
H = TypeVar("H", bound=Handler)


@dataclass(frozen=True)
class Registration:
    """One served API: its definition, the version range this broker serves, the handler."""

    api: Api[Any, Any]
    min_version: int
    max_version: int
    handle: Handler

    def serves(self, version: int) -> bool:
        """Whether ``version`` is in the served range."""
        return self.min_version <= version <= self.max_version


#: Api definition -> its registration, for every imported handler module.
HANDLERS: dict[Api[Any, Any], Registration] = {}


def handles(api: Api[Any, Any], versions: str) -> Callable[[H], H]:
    """Register the decorated function as the handler of ``api`` for ``versions`` ("0-9")."""
    lo, hi = parse_versions(versions)
    if not api.min_version <= lo <= hi <= api.max_version:
        raise ValueError(
            f"{api.name}: served versions {versions} are outside the definition's "
            f"v{api.min_version}-v{api.max_version}"
        )

    def register(fn: H) -> H:
        """Record the handler (a module imported again replaces its own registration)."""
        old = HANDLERS.get(api)
        if old is not None and old.handle.__module__ != fn.__module__:
            raise ValueError(f"{api.name} already has a handler in {old.handle.__module__}")
        HANDLERS[api] = Registration(api, lo, hi, fn)
        return fn

    return register


def served_versions() -> dict[Api[Any, Any], tuple[int, int]]:
    """Api definition -> (min, max) served version, ordered by API key."""
    return {
        r.api: (r.min_version, r.max_version)
        for r in sorted(HANDLERS.values(), key=lambda r: r.api.key)
    }
