"""OpenTelemetry metrics from kclient's registry: observable instruments read the live clients'
snapshots when the SDK collects, and the two duration histograms are recorded as requests are
answered (per request, never per message) once :func:`instrument` ran.

The conversion is :mod:`.export`'s, the one the Prometheus endpoint uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .export import OPERATION_NAMES, Family, Histogram, families

__all__ = ["instrument"]

Source = Callable[[], Iterable[dict[str, Any]]]


def instrument(
    provider: Any, source: Source, buckets: Iterable[float]
) -> tuple[Callable[[str, str, float], None], Callable[[str, float], None]]:
    """Register kclient's instruments with ``provider``'s meter; returns the request sink
    (``(api, "host:port", seconds)``, messaging.client.operation.duration) and the process
    sink (``(topic, seconds)``, messaging.process.duration), with bucket bounds ``buckets``."""
    meter = provider.get_meter("kclient")
    kinds = {"counter": meter.create_observable_counter, "gauge": meter.create_observable_gauge}
    for fam in families(()):
        if fam.kind in kinds:
            kinds[fam.kind](
                fam.name,
                callbacks=[_callback(fam.name, source)],
                unit=fam.unit,
                description=fam.help,
            )
    hist = meter.create_histogram(
        "messaging.client.operation.duration",
        unit="s",
        description="Duration of each request a client made to a broker",
        explicit_bucket_boundaries_advisory=list(buckets),
    )
    process = meter.create_histogram(
        "messaging.process.duration",
        unit="s",
        description="Time the application spent on a record (process spans)",
        explicit_bucket_boundaries_advisory=list(buckets),
    )

    def processed(topic: str, secs: float) -> None:
        process.record(secs, {"messaging.system": "kafka", "messaging.destination.name": topic})

    def sink(api: str, address: str, secs: float) -> None:
        host, _, port = address.rpartition(":")
        hist.record(
            secs,
            {
                "messaging.system": "kafka",
                "server.address": host,
                "server.port": int(port) if port.isdigit() else port,
                "messaging.operation.name": OPERATION_NAMES.get(api, api),
            },
        )

    return sink, processed


def _callback(name: str, source: Source) -> Callable[[Any], list[Any]]:
    from opentelemetry.metrics import Observation

    def observe(_options: Any) -> list[Any]:
        fam: Family = next(f for f in families(source()) if f.name == name)
        return [
            Observation(v, dict(k)) for k, v in fam.samples.items() if not isinstance(v, Histogram)
        ]

    return observe
