"""Observability built in: OpenTelemetry tracing, metrics and a Prometheus endpoint.

Every client asks :func:`tracing_for` once, at construction, whether to trace.  The answer is
None - and the client keeps its untraced code paths, paying nothing per record - unless
``opentelemetry-api`` is installed and a real tracer provider is set (the ``tracer.provider``
config key, else OpenTelemetry's global one).  A client made before the global provider was
set stays untraced.  docs/observability.md has the set-up.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tracing import Tracing

__all__ = ["tracing_for", "provider_from", "task_tracing", "processing"]


def provider_from(given: Any) -> Any:
    """The tracer provider to use: ``given``, else the global one if it is a real one, else
    None (opentelemetry-api absent, or no provider set)."""
    if given is not None:
        return given
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return provider


def tracing_for(
    config: Mapping[str, Any], group: str | None = None, metrics: Any = None
) -> Tracing | None:
    """The client's :class:`~kclient.observability.tracing.Tracing`, or None when it must not
    trace (see the module docstring).  ``config`` is the client's loaded Config; ``metrics``
    its ClientMetrics (a consumer's: process durations are counted there)."""
    provider = provider_from(config.get("tracer.provider"))
    if provider is None:
        return None
    from opentelemetry import trace

    if isinstance(provider, trace.NoOpTracerProvider):
        return None  # given explicitly to switch tracing off
    from .semconv import names
    from .tracing import Tracing

    return Tracing(
        provider,
        names(),
        config.get("client.id"),
        config.get("metadata.broker.list") or (),
        group,
        metrics,
    )


def task_tracing(bootstrap: str, client_id: str | None = None) -> Tracing | None:
    """Tracing for a Spark task (sink or source) on an executor: the global provider's, or
    None when there is none (an executor traces only when it was set up to)."""
    provider = provider_from(None)
    if provider is None:
        return None
    from .semconv import names
    from .tracing import Tracing

    servers = []
    for hp in bootstrap.split(","):
        host, _, port = hp.strip().rpartition(":")
        servers.append((host, int(port) if port.isdigit() else 0))
    return Tracing(provider, names(), client_id, servers)


@contextmanager
def processing(consumer: Any, record: Any) -> Iterator[Any]:
    """``with processing(consumer, record):`` the record's ``process`` span around a block,
    for a ``poll()`` loop (iteration makes these spans by itself); yields the span, or None
    when the consumer does not trace (then it costs one attribute lookup)."""
    tracing = getattr(consumer, "_tracing", None)
    if tracing is None:
        yield None
        return
    with tracing.process(record) as span:
        yield span
