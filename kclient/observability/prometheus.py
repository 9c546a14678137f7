"""Prometheus exposition of the metric families of :mod:`.export`, with ``prometheus_client``.

Why prometheus_client: it is the Prometheus project's own Python client, maintained with the
exposition formats (text 0.0.4 and OpenMetrics), dependency-free, and what Python services
already run; a custom Collector reads kclient's registry only when scraped.  (OpenTelemetry's
Prometheus exporter is a pre-release package built on prometheus_client itself, and would
need the OpenTelemetry SDK just to serve a scrape.)

Names follow OpenTelemetry's Prometheus mapping: dots become underscores, ``s`` adds
``_seconds``, ``By`` ``_bytes``, counters end in ``_total``; attributes become labels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .export import Family, Histogram, families

__all__ = ["KclientCollector", "serve", "prometheus_name"]

_UNIT_SUFFIX = {"s": "seconds", "By": "bytes"}


def prometheus_name(family: Family) -> str:
    """``messaging.client.operation.duration`` (s) -> ``messaging_client_operation_duration_seconds``."""
    name = family.name.replace(".", "_")
    suffix = _UNIT_SUFFIX.get(family.unit)
    if suffix and not name.endswith("_" + suffix):
        name += "_" + suffix
    return name


def _label(attr: str) -> str:
    return attr.replace(".", "_")


class KclientCollector:
    """A prometheus_client collector of every family ``source()``'s snapshots give."""

    def __init__(self, source: Callable[[], Iterable[dict[str, Any]]]) -> None:
        self.source = source

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        kinds = {
            "counter": CounterMetricFamily,
            "gauge": GaugeMetricFamily,
            "histogram": HistogramMetricFamily,
        }
        for fam in families(self.source()):
            if not fam.samples:
                continue
            labels = sorted({k for key in fam.samples for k, _ in key})
            out = kinds[fam.kind](
                prometheus_name(fam), fam.help, labels=[_label(k) for k in labels]
            )
            for key, value in fam.samples.items():
                given = dict(key)
                values = [given.get(k, "") for k in labels]
                if isinstance(value, Histogram):
                    out.add_metric(
                        values, [(_le(le), n) for le, n in value.cumulative()], value.sum
                    )
                else:
                    out.add_metric(values, value)
            yield out

    def describe(self) -> list[Any]:
        return []  # unknown until scraped: no registration-time check


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(float(bound))


def serve(
    source: Callable[[], Iterable[dict[str, Any]]],
    port: int = 0,
    addr: str = "127.0.0.1",
    registry: Any = None,
) -> Any:
    """Serve ``source``'s families at ``http://addr:port/metrics`` (a daemon thread); the
    server is returned (``server_port``, ``shutdown()``).  ``registry``: a prometheus_client
    CollectorRegistry to add kclient's collector to (default: a registry of its own)."""
    try:
        from prometheus_client import CollectorRegistry, start_http_server
    except ImportError as exc:
        raise ImportError(
            "serve_prometheus needs prometheus_client: pip install "
            "'kclient[otel]' (or prometheus_client)"
        ) from exc
    if registry is None:
        registry = CollectorRegistry(auto_describe=False)
    registry.register(KclientCollector(source))
    server, _thread = start_http_server(port, addr=addr, registry=registry)
    return server
