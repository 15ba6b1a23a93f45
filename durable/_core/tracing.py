"""OpenTelemetry, a consumer of the event stream (the `otel` extra):
a span `durable.run <workflow>` per run and a child span
`durable.step <name>` per operation, executed or replayed, with the
attributes `durable.run_id`, `durable.position`, `durable.replayed`,
`durable.attempt`, `durable.fingerprint`; failures recorded on them.

Active only when the application has set a tracer provider (so
`opentelemetry` is imported already): durable never imports it, nor
configures it. Operation spans are made when the operation ends, from its
event (start time = end - duration). `loop_over` items carry the run
span's context to their workers (threads, processes, Dask), where each item
runs in a span `durable.item <block>` of the run's trace."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from . import events

_NS = 1_000_000_000


def _trace() -> Any:
    """The `opentelemetry.trace` module when a tracer provider is set, else None."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    return None if isinstance(provider, trace.ProxyTracerProvider) else trace


def active() -> bool:
    return _trace() is not None


class Spans:
    """The run spans open now, by run id."""

    def __init__(self) -> None:
        self.runs: dict[str, Any] = {}

    def consume(self, event: events.Event) -> None:
        trace = _trace()
        if trace is None:
            return
        tracer = trace.get_tracer("durable")
        if isinstance(event, events.RunStarted):
            self._start(trace, tracer, event)
        elif isinstance(event, events.OperationEvent):
            self._operation(trace, tracer, event)
        elif isinstance(event, events.ENDS):
            self._end(trace, tracer, event)

    def _start(self, trace: Any, tracer: Any, event: events.RunStarted) -> None:
        parent = self.runs.get(event.parent or "")
        context = trace.set_span_in_context(parent) if parent is not None else None
        span = tracer.start_span(
            f"durable.run {event.workflow}",
            context=context,
            start_time=int((event.started or event.time) * _NS),
            attributes={
                "durable.run_id": event.run_id,
                "durable.workflow": event.workflow,
                "durable.resumed": event.resumed,
                "durable.replayed": event.replayed,
            },
        )
        if event.resume_position is not None:
            span.set_attribute("durable.resume_position", event.resume_position)
        self.runs[event.run_id] = span

    def _operation(self, trace: Any, tracer: Any, event: events.OperationEvent) -> None:
        run = self.runs.get(event.run_id)
        context = trace.set_span_in_context(run) if run is not None else None
        end = int(event.time * _NS)
        span = tracer.start_span(
            f"durable.step {event.name}",
            context=context,
            start_time=end - int(event.duration * _NS),
            attributes={
                "durable.run_id": event.run_id,
                "durable.position": event.position,
                "durable.replayed": isinstance(event, events.StepReplayed),
                "durable.attempt": event.attempt,
                "durable.fingerprint": event.fingerprint,
                "durable.kind": event.kind,
            },
        )
        if isinstance(event, (events.StepFailed, events.StepRetried)):
            _failed(trace, span, event.exception, event.error)
            span.set_attribute("durable.retried", isinstance(event, events.StepRetried))
        span.end(end_time=end)

    def _end(self, trace: Any, tracer: Any, event: events.Event) -> None:
        span = self.runs.pop(event.run_id, None)
        if span is None:  # a completed run answered from its record: nothing ran
            span = tracer.start_span(
                f"durable.run {event.workflow}",
                attributes={"durable.run_id": event.run_id, "durable.recorded": True},
            )
        if isinstance(event, events.RunFailed):
            _failed(trace, span, event.exception, event.error)
        elif isinstance(event, events.RunInterrupted):
            _failed(trace, span, event.exception, event.error)
        elif isinstance(event, events.RunSuspended):
            span.set_attribute("durable.suspended", event.reason)
        elif isinstance(event, events.RunCancelled):
            span.set_attribute("durable.cancelled", True)
        elif isinstance(event, events.RunCompleted):
            span.set_attribute("durable.executed", event.executed)
        span.end(end_time=int(event.time * _NS))


def _failed(trace: Any, span: Any, exc: BaseException | None, text: str) -> None:
    if exc is not None:
        span.record_exception(exc)
    span.set_status(trace.Status(trace.StatusCode.ERROR, text))


spans = Spans()


def carrier(run_id: str) -> dict[str, str] | None:
    """The run span's context as W3C trace headers, for the workers of a
    `loop_over` block; None when no span is open for the run."""
    span = spans.runs.get(run_id)
    trace = _trace()
    if span is None or trace is None:
        return None
    from opentelemetry import propagate
    headers: dict[str, str] = {}
    propagate.inject(headers, context=trace.set_span_in_context(span))
    return headers


@contextlib.contextmanager
def item_span(headers: dict[str, str] | None, label: str) -> Iterator[None]:
    """In a worker: run one item in a span of the run's trace. Without
    headers, or where opentelemetry is not installed, nothing."""
    if not headers:
        yield
        return
    try:
        from opentelemetry import propagate, trace
    except ImportError:  # a worker without the otel extra: the item still runs
        yield
        return
    parent = propagate.extract(headers)
    tracer = trace.get_tracer("durable")
    with tracer.start_as_current_span(f"durable.item {label}", context=parent):
        yield


events.subscribe(spans.consume, gate=active)
