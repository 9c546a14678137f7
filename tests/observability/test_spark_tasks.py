"""A span per Spark task (issue 30): the sink's task (send_arrow, what each write task runs)
and the source's (read_range), on an executor whose global tracer provider is set: run in a
subprocess, since OpenTelemetry's global provider can be set once per process."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.needs import need_module

SCRIPT = r"""
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
import pyarrow as pa
from kclient.spark.offsets import OffsetRange
from kclient.spark.options import parse_read_options, parse_write_options
from kclient.spark.reader import read_range
from kclient.spark.writer import send_arrow
boot, topic = sys.argv[1:3]
w = parse_write_options({"kafka.bootstrap.servers": boot, "topic": topic})
batch = pa.record_batch([pa.array([b"a", b"b", b"c"], pa.binary())], names=["value"])
sent = send_arrow([batch], w)
r = parse_read_options({"kafka.bootstrap.servers": boot, "subscribe": topic}, streaming=False)
rows = sum(b.num_rows for b in read_range(OffsetRange(topic, 0, 0, 3), r))
print(json.dumps({"sent": sent, "rows": rows, "spans": [
    {"name": s.name, "kind": s.kind.name, "id": s.context.span_id, "trace": s.context.trace_id,
     "parent": s.parent.span_id if s.parent else None, "attrs": dict(s.attributes)}
    for s in exporter.get_finished_spans()]}))
"""


def test_sink_and_source_tasks_have_spans(mini_broker):
    need_module("pyspark")
    need_module("opentelemetry.sdk")
    mini_broker.create_topic("spk", partitions=1)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, mini_broker.bootstrap, "spk"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["sent"] == 3 and got["rows"] == 3
    spans = got["spans"]
    (task,) = [s for s in spans if s["name"] == "send spk" and s["parent"] is None]
    assert task["kind"] == "PRODUCER" and task["attrs"]["messaging.batch.message_count"] == 3
    messages = [s for s in spans if s["parent"] == task["id"]]
    assert len(messages) == 3, "each record's send span is a child of its task's"
    (read,) = [s for s in spans if s["name"] == "receive spk"]
    assert read["kind"] == "CONSUMER"
    assert read["attrs"]["messaging.batch.message_count"] == 3
    assert read["attrs"]["messaging.destination.partition.id"] == "0"
    assert read["attrs"]["messaging.kafka.offset"] == 0
