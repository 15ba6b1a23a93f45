"""OpenTelemetry spans from the event stream, caught by the SDK's in-memory
exporter: a run span with a child span per operation (executed, replayed,
retried, failed), and `loop_over` items in spans of the run's trace in a
thread pool, a process pool and on a Dask LocalCluster (whose spans come
back through a file exporter installed in the worker processes)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core import tracing

trace = pytest.importorskip("opentelemetry.trace")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
export = pytest.importorskip("opentelemetry.sdk.trace.export")
memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")

from tests.otel_work import install, spans_in, square  # noqa: E402


@pytest.fixture
def spans() -> Iterator[Any]:
    """A tracer provider for one test: the global is put back afterwards,
    so that the other tests run without tracing."""
    exporter = memory.InMemorySpanExporter()
    tracer_provider = sdk_trace.TracerProvider()
    tracer_provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    old, once = trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE._done
    trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE._done = tracer_provider, True
    yield exporter
    trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE._done = old, once


def _by_name(finished: Any, prefix: str) -> list[Any]:
    return [s for s in finished if s.name.startswith(prefix)]


def test_a_run_span_with_executed_failed_retried_and_replayed_steps(
    store: durable.Store, spans: Any
) -> None:
    calls: list[str] = []

    @durable.step(name="fetch")
    def fetch(n: int) -> int:
        calls.append("fetch")
        return n + 1

    @durable.step(name="flaky", retries=1, retry_delay=0)
    def flaky(n: int) -> int:
        calls.append("flaky")
        if calls.count("flaky") in (1, 2):  # the whole first call, then the first try again
            raise ConnectionError(f"try {calls.count('flaky')}")
        return n * 2

    @durable.workflow(store=store, name="traced")
    def flow(n: int) -> int:
        return flaky(fetch(n))

    with pytest.raises(ConnectionError):
        flow(1)
    first = spans.get_finished_spans()
    (run1,) = _by_name(first, "durable.run ")
    assert run1.name == "durable.run traced"
    assert run1.status.status_code == trace.StatusCode.ERROR
    assert [e.name for e in run1.events] == ["exception"]
    steps1 = _by_name(first, "durable.step ")
    assert [(s.name, s.attributes["durable.attempt"]) for s in steps1] == [
        ("durable.step fetch", 0),
        ("durable.step flaky", 0),  # retried
        ("durable.step flaky", 1),  # failed: no try left
    ]
    assert all(s.parent.span_id == run1.context.span_id for s in steps1)
    assert steps1[1].attributes["durable.retried"] is True
    assert steps1[2].attributes["durable.retried"] is False
    assert steps1[2].events[0].attributes["exception.type"] == "ConnectionError"
    spans.clear()

    assert flow(1) == 4
    second = spans.get_finished_spans()
    (run2,) = _by_name(second, "durable.run ")
    assert run2.status.status_code != trace.StatusCode.ERROR
    assert run2.attributes["durable.replayed"] == 1 and run2.attributes["durable.resumed"]
    steps2 = _by_name(second, "durable.step ")
    rows = [
        (s.name, s.attributes["durable.position"], s.attributes["durable.replayed"]) for s in steps2
    ]
    assert rows == [("durable.step fetch", "0", True), ("durable.step flaky", "1", False)]
    assert steps2[1].attributes["durable.attempt"] == 2  # the third try of the run
    assert steps2[0].attributes["durable.fingerprint"] == fetch.fingerprint
    assert {s.attributes["durable.run_id"] for s in steps2} == {run2.attributes["durable.run_id"]}
    assert all(s.context.trace_id == run2.context.trace_id for s in steps2)
    assert calls == ["fetch", "flaky", "flaky", "flaky"]


def _items_flow(store: durable.Store, executor: Any, name: str) -> Any:
    @durable.workflow(store=store, name=name)
    def fan(n: int) -> list[int]:
        return durable.loop_over(square, list(range(n)), executor=executor)

    return fan


def test_thread_pool_items_join_the_run_trace(store: durable.Store, spans: Any) -> None:
    with ThreadPoolExecutor(2) as pool:
        assert _items_flow(store, pool, "threads")(4) == [0, 1, 4, 9]
    finished = spans.get_finished_spans()
    (run,) = _by_name(finished, "durable.run ")
    items = _by_name(finished, "durable.item ")
    assert len(items) == 4
    assert {s.context.trace_id for s in items} == {run.context.trace_id}
    assert {s.parent.span_id for s in items} == {run.context.span_id}
    (block,) = _by_name(finished, "durable.step ")
    assert (
        block.attributes["durable.position"] == "0" and block.attributes["durable.kind"] == "loop"
    )


def test_process_pool_items_join_the_run_trace(
    store: durable.Store, spans: Any, tmp_path: Path
) -> None:
    out = str(tmp_path / "worker-spans.jsonl")
    context = multiprocessing.get_context("spawn")  # a fresh interpreter sets its own provider
    with ProcessPoolExecutor(2, mp_context=context, initializer=install, initargs=(out,)) as pool:
        assert _items_flow(store, pool, "processes")(5) == [0, 1, 4, 9, 16]
    (run,) = _by_name(spans.get_finished_spans(), "durable.run ")
    items = spans_in(out)
    assert len(items) == 5
    assert {s["name"] for s in items} == {"durable.item loop_over(square)"}
    assert {s["trace_id"] for s in items} == {run.context.trace_id}
    assert {s["parent"] for s in items} == {run.context.span_id}


@pytest.mark.slow
def test_dask_items_join_the_run_trace(store: durable.Store, spans: Any, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    out = str(tmp_path / "dask-spans.jsonl")
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.run(install, out)
        assert _items_flow(store, client, "dask")(6) == [0, 1, 4, 9, 16, 25]
    (run,) = _by_name(spans.get_finished_spans(), "durable.run ")
    items = spans_in(out)
    assert len(items) == 6
    assert {s["trace_id"] for s in items} == {run.context.trace_id}
    assert {s["parent"] for s in items} == {run.context.span_id}
    assert len({s["pid"] for s in items}) >= 1


def test_without_a_tracer_provider_nothing_is_traced() -> None:
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert not tracing.active()


def test_a_cancelled_run_ends_its_span(
    store: durable.Store, spans: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    entered, go = threading.Event(), threading.Event()

    @durable.step(name="blocks")
    def blocks() -> int:
        entered.set()
        assert go.wait(60)
        return 1

    @durable.workflow(store=store, run_id="cancelled", name="cancels")
    def flow() -> int:
        return blocks() + blocks()

    outcome: list[BaseException] = []
    worker = threading.Thread(target=lambda: outcome.extend(_raised(flow)))
    worker.start()
    assert entered.wait(60)
    flow.cancel("cancelled")
    go.set()
    worker.join()
    assert isinstance(outcome[0], durable.Cancelled)
    (run,) = _by_name(spans.get_finished_spans(), "durable.run")
    assert run.attributes["durable.cancelled"] is True
    assert "cancelled" not in tracing.spans.runs


def _raised(fn: Any) -> list[BaseException]:
    try:
        fn()
    except BaseException as e:
        return [e]
    return []
