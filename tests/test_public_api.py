import pytest

import durable

EXPECTED = {
    "ArtifactMissingError",
    "AsyncWorkflow",
    "Cache",
    "CacheInfo",
    "Cancellation",
    "Cancelled",
    "ConfigurationError",
    "ControlFlow",
    "CorruptRecordError",
    "DefinitionChangedError",
    "DurableError",
    "IntegrityError",
    "KeyStore",
    "LeaseLostError",
    "NondeterminismError",
    "Progress",
    "Redacted",
    "Run",
    "RunContext",
    "RunInfo",
    "RunKilledError",
    "RunLockedError",
    "RunNotFoundError",
    "SerializationError",
    "Step",
    "StepInfo",
    "Stopped",
    "StorageError",
    "Store",
    "Suspended",
    "ValidationError",
    "Workflow",
    "artifact",
    "asleep",
    "cache_info",
    "clear_stop",
    "configure",
    "current_run",
    "gc",
    "load",
    "loop_over",
    "on_event",
    "open_store",
    "redact",
    "request_stop",
    "sleep",
    "step",
    "stop_on_signals",
    "stop_requested",
    "suspend",
    "wait_for",
    "workflow",
}


def test_all_is_sorted_and_exactly_the_public_api() -> None:
    assert durable.__all__ == sorted(durable.__all__)
    assert set(durable.__all__) == EXPECTED
    public = {n for n in dir(durable) if not n.startswith("_")} - {"testing", "errors", "events"}
    assert public == EXPECTED


def test_errors_share_one_base() -> None:
    for name in durable.__all__:
        obj = getattr(durable, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, durable.DurableError), name


def test_every_exception_of_the_errors_module_is_exported() -> None:
    from durable import errors

    defined = {
        name
        for name, obj in vars(errors).items()
        if isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__ == errors.__name__
    }
    assert defined <= set(durable.__all__), defined - set(durable.__all__)
    assert {"LeaseLostError", "IntegrityError", "ArtifactMissingError", "Stopped"} <= defined


def test_control_flow_is_told_apart_from_failures() -> None:
    suspended = durable.Suspended("r", "waiting for approval")
    stopped = durable.Stopped(15)
    assert isinstance(suspended, durable.ControlFlow) and isinstance(stopped, durable.ControlFlow)
    # Compatibility: a suspend is still a DurableError (and so an Exception) ...
    assert isinstance(suspended, durable.DurableError) and isinstance(suspended, Exception)
    # ... a graceful stop exits like SystemExit, and no user error is control flow.
    assert isinstance(stopped, SystemExit) and stopped.code == 143
    assert not issubclass(durable.ControlFlow, Exception)
    for name in durable.__all__:
        obj = getattr(durable, name)
        if isinstance(obj, type) and issubclass(obj, durable.DurableError):
            ended_on_purpose = obj in (durable.Suspended, durable.Cancelled)
            assert issubclass(obj, durable.ControlFlow) == ended_on_purpose, name


def test_a_suspend_inside_a_retried_step_is_not_retried(store: durable.Store) -> None:
    tries: list[int] = []

    @durable.step(retries=3, retry_delay=0)
    def ask() -> None:
        tries.append(1)
        durable.suspend("needs a person")

    @durable.workflow(store=store, run_id="s")
    def flow() -> None:
        ask()

    with pytest.raises(durable.Suspended):
        flow()
    assert tries == [1]
    assert [r.status for r in flow.runs()] == ["suspended"]


def test_current_run_is_a_read_only_view(store: durable.Store) -> None:
    seen: list[tuple[str, str, int, object, int, str]] = []
    failures = [1]

    @durable.step(name="flaky", retries=1, retry_delay=0)
    def flaky() -> None:
        ctx = durable.current_run()
        assert ctx is not None
        seen.append(
            (ctx.run_id, ctx.workflow, ctx.position, ctx.step_index, ctx.attempt,
             ctx.idempotency_key())
        )  # fmt: skip
        for attr in ("records", "store", "lease", "policy", "refusal"):
            assert not hasattr(ctx, attr), attr
        with pytest.raises(AttributeError):
            ctx.run_id = "other"  # type: ignore[misc]
        if failures:
            failures.pop()
            raise ConnectionError("once")

    @durable.workflow(name="view", store=store, run_id="v1")
    def flow() -> str:
        ctx = durable.current_run()
        assert isinstance(ctx, durable.RunContext) and ctx.step_index is None
        flaky()
        return repr(ctx)

    assert flow() == "<durable run 'v1' of 'view'>"
    key = seen[0][5]
    assert key.startswith("v1:0/") and len(key) == len("v1:0/") + 16
    assert seen == [("v1", "view", 1, 0, 0, key), ("v1", "view", 1, 0, 1, key)]
    assert durable.current_run() is None


def test_the_public_modules_are_reached_from_the_package_alone() -> None:
    """`import durable` then `durable.events.StepExecuted` (as the docs name
    events), in a process where nothing imported `durable.events` first."""
    import subprocess
    import sys

    code = (
        "import sys, durable\n"
        "assert 'durable.events' not in sys.modules\n"
        "print(durable.events.StepExecuted.__name__, durable.testing.FakeClock.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["StepExecuted", "FakeClock"], done.stderr
