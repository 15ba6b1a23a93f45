"""Tracing setup for worker processes (process pools, Dask workers): a
tracer provider whose exporter appends each finished span to a file as one
JSON line, so that a test reads back the spans made in other processes."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class FileExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            row = {
                "name": span.name,
                "trace_id": span.context.trace_id if span.context else 0,
                "parent": span.parent.span_id if span.parent else None,
                "pid": os.getpid(),
            }
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (json.dumps(row) + "\n").encode())
            finally:
                os.close(fd)
        return SpanExportResult.SUCCESS


def install(path: str) -> None:
    """Initializer of a worker process: its spans go to `path`."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(path)))
    trace.set_tracer_provider(provider)


def spans_in(path: str) -> list[dict[str, Any]]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def square(x: int) -> int:
    """An item function the workers load by reference."""
    return x * x
