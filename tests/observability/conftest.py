"""Tracer providers with the SDK's in-memory exporter, given to clients through the
``tracer.provider`` key (the global provider stays unset, so other tests are not traced)."""

from __future__ import annotations

import pytest

from tests.needs import need_module


class Traces:
    """A provider and what it exported (and the API's SpanKind / StatusCode)."""

    def __init__(self) -> None:
        sdk = need_module("opentelemetry.sdk.trace")
        export = need_module("opentelemetry.sdk.trace.export")
        memory = need_module("opentelemetry.sdk.trace.export.in_memory_span_exporter")
        api = need_module("opentelemetry.trace")
        self.SpanKind, self.StatusCode = api.SpanKind, api.StatusCode
        self.exporter = memory.InMemorySpanExporter()
        self.provider = sdk.TracerProvider()
        self.provider.add_span_processor(export.SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("test")

    def spans(self, name_prefix: str = "") -> list:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(name_prefix)]


@pytest.fixture
def traces():
    t = Traces()
    yield t
    t.provider.shutdown()
