"""Tracer providers with the SDK's in-memory exporter, given to clients through the
``tracer.provider`` key (the global provider stays unset, so other tests are not traced)."""
from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (opentelemetry-sdk) is needed")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)


class Traces:
    """A provider and what it exported."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("test")

    def spans(self, name_prefix: str = "") -> list:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(name_prefix)]


@pytest.fixture
def traces():
    t = Traces()
    yield t
    t.provider.shutdown()
