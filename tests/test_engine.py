"""Record, replay and resume: every behaviour of DESIGN.md section 2, counted."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import math
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core.context import current_state
from durable.testing import FakeClock
from tests.conftest import rewrite_record


def make(store: durable.Store, counts: Counter[str], *, version: str = "1") -> Any:
    @durable.step(name="add", version=version)
    def add(x: int) -> int:
        counts["add"] += 1
        return x + 1

    @durable.step(name="double")
    def double(x: int) -> int:
        counts["double"] += 1
        return x * 2

    @durable.workflow(name="pipeline", store=store)
    def pipeline(x: int) -> int:
        return double(add(x))

    return pipeline


def test_first_call_executes_second_replays(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    wf = make(store, counts)
    first = wf.run(3)
    assert (first.value, first.status, first.steps_executed, first.steps_replayed) == (
        8,
        "completed",
        2,
        0,
    )
    assert first.resumed_from_step is None
    second = wf.run(3)
    assert second.value == 8 and counts == {"add": 1, "double": 1}
    assert second.run_id == first.run_id
    assert wf(4) == 10 and counts == {"add": 2, "double": 2}


def test_step_outside_workflow_is_a_plain_call() -> None:
    calls = []

    @durable.step
    def plain(x: int) -> int:
        calls.append(x)
        return x

    assert plain(1) == 1 and plain(1) == 1 and calls == [1, 1]
    assert plain.name == "test_step_outside_workflow_is_a_plain_call.plain"
    assert len(plain.fingerprint) == 12


def test_failed_body_resumes_at_the_failing_step(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    fail = {"on": True}

    @durable.step(name="one")
    def one() -> str:
        counts["one"] += 1
        return "a"

    @durable.step(name="two")
    def two(v: str) -> str:
        counts["two"] += 1
        if fail["on"]:
            raise ValueError("flaky upstream")
        return v + "b"

    @durable.workflow(name="wf", store=store, run_id="r1")
    def wf() -> str:
        return two(one())

    with pytest.raises(ValueError, match="flaky upstream"):
        wf()
    fail["on"] = False
    run = wf.run()
    assert run.value == "ab"
    assert counts == {"one": 1, "two": 2}
    assert (run.resumed_from_step, run.steps_replayed, run.steps_executed) == (1, 1, 1)


def test_body_error_outside_steps_marks_failed_and_replays(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    boom = {"on": True}

    @durable.step(name="s")
    def s() -> int:
        counts["s"] += 1
        return 1

    @durable.workflow(name="wf", store=store, run_id="r")
    def wf() -> int:
        v = s()
        if boom["on"]:
            raise RuntimeError("body broke")
        return v

    with pytest.raises(RuntimeError):
        wf()
    from durable._storage.manifest import read_manifest

    manifest = read_manifest(store, "wf", "r")
    assert manifest is not None and manifest.status == "failed"
    assert manifest.error is not None and manifest.error["message"] == "body broke"
    boom["on"] = False
    assert wf() == 1 and counts["s"] == 1


def test_completed_run_returns_recorded_value_without_running_body(store: durable.Store) -> None:
    body_runs = []

    @durable.workflow(name="wf", store=store, run_id="done")
    def wf() -> dict[str, int]:
        body_runs.append(1)
        return {"n": len(body_runs)}

    assert wf() == {"n": 1}
    assert wf() == {"n": 1}
    assert body_runs == [1]


def test_restart_discards_records(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    wf = make(store, counts)
    wf(1)
    assert wf.with_options(restart=True)(1) == 4
    assert counts == {"add": 2, "double": 2}


def test_with_options_run_id_and_callable_run_id(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    wf = make(store, counts)
    assert wf.with_options(run_id="nightly").run(1).run_id == "nightly"

    @durable.workflow(name="byarg", store=store, run_id=lambda day: f"day-{day}")
    def byarg(day: str) -> str:
        return day

    assert byarg.run("mon").run_id == "day-mon"


@pytest.mark.parametrize("bad", ["a/b", "..", "has space", "glob*", "q?", "br[ack", "", "tab\t"])
def test_bad_run_ids_are_refused(store: durable.Store, bad: str) -> None:
    counts: Counter[str] = Counter()
    wf = make(store, counts)
    with pytest.raises(durable.ConfigurationError, match="invalid run id"):
        wf.with_options(run_id=bad)(1)
    assert counts == {}


def test_argument_without_canonical_form_asks_for_run_id(store: durable.Store) -> None:
    @durable.workflow(name="w", store=store)
    def w(lock: Any) -> int:
        return 1

    with pytest.raises(durable.ConfigurationError, match="with_options\\(run_id="):
        w(threading.Lock())
    assert w.with_options(run_id="explicit")(threading.Lock()) == 1


def test_derived_run_id_is_stable_and_argument_sensitive(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    wf = make(store, counts)
    a, b, c = wf.run(1), wf.run(x=1), wf.run(2)
    assert a.run_id == b.run_id != c.run_id
    assert a.run_id.startswith("pipeline-") and len(a.run_id) == len("pipeline-") + 12


def test_nondeterminism_names_position_and_both_steps(store: durable.Store) -> None:
    flip = {"first": True}

    @durable.step(name="alpha")
    def alpha() -> int:
        return 1

    @durable.step(name="beta")
    def beta() -> int:
        return 2

    @durable.step(name="gamma")
    def gamma() -> int:
        raise ValueError("stop")

    @durable.workflow(name="nd", store=store, run_id="r")
    def nd() -> int:
        v = alpha() if flip["first"] else beta()
        return v + gamma()

    with pytest.raises(ValueError):
        nd()
    flip["first"] = False
    with pytest.raises(durable.NondeterminismError) as info:
        nd()
    err = info.value
    assert (err.position, err.recorded, err.called) == (0, "alpha", "beta")
    assert "position 0" in str(err) and "'alpha'" in str(err) and "'beta'" in str(err)


def test_changed_definition_is_refused_with_both_fingerprints(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    old = make(store, counts, version="1").with_options(run_id="r")
    old_fp = old.fingerprint
    old(1)
    new = make(store, counts, version="2").with_options(run_id="r")
    with pytest.raises(durable.DefinitionChangedError) as info:
        new(1)
    err = info.value
    assert err.old_fingerprint == old_fp and err.new_fingerprint == new.fingerprint != old_fp
    assert "add" in err.changed_steps and "version changed" in err.changed_steps["add"]
    for needle in (old_fp, new.fingerprint, "restart=True", "rebase=True", "on_change='rerun'"):
        assert needle in str(err)
    assert counts == {"add": 1, "double": 1}


def suspended_pipeline(store: durable.Store, counts: Counter[str], version: str) -> Any:
    @durable.step(name="add", version=version)
    def add(x: int) -> int:
        counts["add"] += 1
        return x + 1

    @durable.step(name="double")
    def double(x: int) -> int:
        counts["double"] += 1
        return x * 2

    @durable.workflow(name="pipeline", store=store, run_id="r")
    def pipeline(x: int, go: bool = False) -> int:
        y = double(add(x))
        if not go:
            durable.suspend("waiting for go")
        return double(y)

    return pipeline


def test_rebase_warns_and_replays(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    with pytest.raises(durable.Suspended):
        suspended_pipeline(store, counts, "1")(1)
    new = suspended_pipeline(store, counts, "2")
    with pytest.warns(UserWarning, match="rebase"):
        run = new.with_options(rebase=True).resume("r", go=True)
    assert run.value == 8
    assert counts == {"add": 1, "double": 2}


def test_rerun_policy_reexecutes_from_first_changed_position(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    with pytest.raises(durable.Suspended):
        suspended_pipeline(store, counts, "1")(1)
    new = suspended_pipeline(store, counts, "2").with_options(on_change="rerun")
    run = new.resume("r", go=True)
    assert run.value == 8
    assert counts == {"add": 2, "double": 3}
    assert run.resumed_from_step is None and run.steps_executed == 3


def test_resume_of_missing_run_fails_closed(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    wf = make(store, counts)
    with pytest.raises(durable.RunNotFoundError) as info:
        wf.resume("nope")
    assert info.value.run_id == "nope" and "'nope'" in str(info.value)
    assert counts == {}


def test_suspend_then_resume_with_override(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    wf = suspended_pipeline(store, counts, "1")
    with pytest.raises(durable.Suspended) as info:
        wf(5)
    assert (info.value.run_id, info.value.reason) == ("r", "waiting for go")
    from durable._storage.manifest import read_manifest

    manifest = read_manifest(store, "pipeline", "r")
    assert manifest is not None and manifest.status == "suspended"
    run = wf.resume("r", go=True)
    assert run.value == 24
    assert counts == {"add": 1, "double": 2}
    assert run.resumed_from_step == 2


def test_resume_arguments_merge_defaults_recorded_overrides(store: durable.Store) -> None:
    seen = []

    @durable.step(name="look")
    def look(a: int, b: int, c: int) -> int:
        seen.append((a, b, c))
        return a + b + c

    @durable.workflow(name="m", store=store, run_id="r")
    def m(a: int, b: int = 2, c: int = 3) -> int:
        if c == 3:
            durable.suspend("need c")
        return look(a, b, c)

    with pytest.raises(durable.Suspended):
        m(1, b=20)
    assert m.resume("r", c=300).value == 321
    assert seen == [(1, 20, 300)]
    with pytest.raises(durable.DurableError, match="no parameter"):
        m.resume("r", nope=1)


def test_retries_back_off_and_record_attempts(store: durable.Store, clock: FakeClock) -> None:
    attempts = []

    @durable.step(name="flaky", retries=3, retry_delay=1.0, backoff=2.0, max_delay=3.0)
    def flaky() -> str:
        attempts.append(durable.current_run().attempt)  # type: ignore[union-attr]
        if len(attempts) < 4:
            raise ConnectionError(f"try {len(attempts)}")
        return "ok"

    @durable.workflow(name="r", store=store, run_id="r")
    def wf() -> str:
        return flaky()

    assert wf() == "ok"
    assert attempts == [0, 1, 2, 3]
    assert clock.slept == [1.0, 2.0, 3.0]
    from durable._core.replay import load_context

    rec = load_context(store, "r", "r", "refuse").records[0]
    assert [a.message for a in rec.attempts] == ["try 1", "try 2", "try 3"]
    assert all(
        a.type == "ConnectionError" and "ConnectionError" in a.traceback for a in rec.attempts
    )


def test_exhausted_retries_fail_the_run_then_resume(store: durable.Store, clock: FakeClock) -> None:
    calls = Counter[str]()
    broken = {"on": True}

    @durable.step(name="first")
    def first() -> int:
        calls["first"] += 1
        return 1

    @durable.step(name="api", retries=1, retry_on=(ConnectionError,))
    def api() -> int:
        calls["api"] += 1
        if broken["on"]:
            raise ConnectionError("down")
        return 2

    @durable.workflow(name="x", store=store, run_id="r")
    def wf() -> int:
        return first() + api()

    with pytest.raises(ConnectionError, match="down"):
        wf()
    assert calls == {"first": 1, "api": 2} and clock.slept == [1.0]
    broken["on"] = False
    assert wf() == 3 and calls == {"first": 1, "api": 3}


def test_non_matching_exception_is_not_retried(store: durable.Store, clock: FakeClock) -> None:
    calls = []

    @durable.step(name="s", retries=5, retry_on=ConnectionError)
    def s() -> None:
        calls.append(1)
        raise KeyError("no")

    @durable.workflow(name="w", store=store, run_id="r")
    def w() -> None:
        s()

    with pytest.raises(KeyError):
        w()
    assert calls == [1] and clock.slept == []


def test_durable_sleep_sleeps_only_the_remainder(store: durable.Store, clock: FakeClock) -> None:
    @durable.step(name="after")
    def after() -> None:
        raise KeyboardInterrupt

    @durable.workflow(name="sl", store=store, run_id="r")
    def sl() -> str:
        durable.sleep(60)
        return "woke"

    from durable._storage.clock import clock as engine_clock

    assert engine_clock is clock

    # First attempt: the timer is recorded, then the process "dies" mid-sleep.
    def die(seconds: float) -> None:
        clock.now += 45
        raise KeyboardInterrupt

    clock.sleep = die  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        sl()
    del clock.sleep
    assert sl() == "woke"
    assert clock.slept == [15.0]
    assert sl() == "woke" and clock.slept == [15.0]


def _sleep_killed_midway(store: durable.Store, clock: FakeClock) -> durable.Workflow[[float], str]:
    """A workflow that sleeps `seconds`; its first attempt (60 s) dies 45 s in."""

    @durable.workflow(name="nap", store=store, run_id="r")
    def nap(seconds: float) -> str:
        durable.sleep(seconds)
        return "woke"

    def die(seconds: float) -> None:
        clock.now += 45
        raise KeyboardInterrupt

    clock.sleep = die  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        nap(60)
    del clock.sleep
    return nap


def test_a_sleep_of_another_duration_is_a_changed_call(
    store: durable.Store, clock: FakeClock
) -> None:
    nap = _sleep_killed_midway(store, clock)
    # refused: the timer kept for 60 s is not this sleep's
    with pytest.raises(durable.DefinitionChangedError, match=r"(?s)position 0.*duration changed"):
        nap.resume("r", seconds=600)
    assert clock.slept == []
    # rerun: a new timer, for the new duration
    assert nap.with_options(on_change="rerun").resume("r", seconds=600).value == "woke"
    assert clock.slept == [600.0]


def test_a_sleep_of_another_duration_keeps_its_timer_under_rebase(
    store: durable.Store, clock: FakeClock
) -> None:
    nap = _sleep_killed_midway(store, clock)
    assert nap.with_options(rebase=True).resume("r", seconds=600).value == "woke"
    assert clock.slept == [15.0]  # what was left of the recorded wake-up time
    assert nap.resume("r").value == "woke" and clock.slept == [15.0]


@pytest.mark.parametrize("seconds", [float("nan"), float("inf"), "5"])
def test_a_sleep_that_cannot_end_is_refused_before_it_is_recorded(
    store: durable.Store, clock: FakeClock, seconds: object
) -> None:
    """A NaN slept nothing and was recorded as done; an infinity recorded a
    wake-up time that failed every resume with an OverflowError."""

    @durable.workflow(store=store, run_id="r", name="odd-nap")
    def nap(seconds: object) -> str:
        durable.sleep(seconds)  # type: ignore[arg-type]
        return "woke"

    with pytest.raises(durable.ConfigurationError, match="finite, non-negative number"):
        nap(seconds)
    with pytest.raises(durable.ConfigurationError, match="finite, non-negative number"):
        asyncio.run(durable.asleep(seconds))  # type: ignore[arg-type]
    assert clock.slept == []
    assert [s.kind for s in nap.history("r")] == ["initial"]  # no timer, no sleep record


@pytest.mark.parametrize(
    "seconds",
    [1e308, 1e10, 2**63, pytest.param(10**400, id="10**400"), datetime.timedelta.max],
)
def test_a_sleep_past_the_longest_wait_is_refused_with_the_limit(
    store: durable.Store, seconds: object
) -> None:
    """The real clock: time.sleep overflowed (a raw OverflowError from inside
    durable, after the timer was written, so on every resume too), and an int
    past the largest float failed the check itself."""

    @durable.workflow(store=store, run_id="r", name="long-nap")
    def nap(seconds: object) -> str:
        durable.sleep(seconds)  # type: ignore[arg-type]
        return "woke"

    with pytest.raises(durable.ConfigurationError, match=r"at most 1000000000 \(about 31 years\)"):
        nap(seconds)
    assert [s.kind for s in nap.history("r")] == ["initial"]  # no timer, no sleep record
    if isinstance(seconds, datetime.timedelta):
        with pytest.raises(durable.ConfigurationError, match=r"pass its \.total_seconds\(\)"):
            nap(seconds)


def test_the_longest_wait_itself_is_kept(store: durable.Store, clock: FakeClock) -> None:
    @durable.workflow(store=store, run_id="r", name="longest-nap")
    def nap(seconds: float) -> str:
        durable.sleep(seconds)
        return "woke"

    with pytest.raises(durable.ConfigurationError, match="at most"):
        asyncio.run(durable.asleep(1e9 + 1))
    assert nap(1e9) == "woke" and clock.slept == [1e9]


def test_retry_delays_stay_within_the_longest_wait() -> None:
    """backoff**n overflowed after about a thousand tries (a raw
    OverflowError between two tries); a NaN delay slipped through the check."""
    from durable._core.retry import RetryPolicy

    assert RetryPolicy(2000, 1.0, 2.0, 60.0).wait(1100) == 60.0
    assert RetryPolicy(2000, 0.0, 2.0, 60.0).wait(1100) == 0.0
    assert RetryPolicy(2000, 1.0, 2.0, math.inf).wait(1100) == 1e9
    with pytest.raises(durable.ConfigurationError, match="retry_delay"):

        @durable.step(retry_delay=math.nan)
        def never() -> None: ...


def test_a_timer_without_the_duration_digest_is_never_trusted(
    store: durable.Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A timer written before timers kept the digest of the duration: the
    same sleep cannot be told from another one, so it counts as changed."""
    from durable._api import ops
    from durable._storage import codec

    with monkeypatch.context() as patched:  # the first attempt writes the time alone
        patched.setattr(ops, "timer_bytes", lambda until, digest: codec.pack(until))
        nap = _sleep_killed_midway(store, clock)
    with pytest.raises(durable.DefinitionChangedError, match="older version"):
        nap.resume("r")
    assert clock.slept == []
    assert nap.with_options(on_change="rerun").resume("r").value == "woke"
    assert clock.slept == [60.0]


def test_current_run_and_idempotency_key(store: durable.Store) -> None:
    seen = []

    @durable.step(name="a")
    def a() -> None:
        ctx = durable.current_run()
        assert ctx is not None
        seen.append((ctx.run_id, ctx.step_index, ctx.idempotency_key()))

    @durable.workflow(name="w", store=store, run_id="run-7")
    def w() -> None:
        a()
        a()

    assert durable.current_run() is None
    w()
    # The run, the position, the digest of the call (both called with no arguments).
    assert [(r, i, k.split("/")[0]) for r, i, k in seen] == [("run-7", 0, "run-7:0"), ("run-7", 1, "run-7:1")]
    assert seen[0][2].split("/")[1] == seen[1][2].split("/")[1]


def test_loop_over_records_once_and_skips_on_rerun(store: durable.Store) -> None:
    calls = []
    fail_at = {"n": 3}

    @durable.step(name="sq")
    def sq(x: int) -> int:
        calls.append(x)
        if x == fail_at["n"]:
            raise ValueError("bad item")
        return x * x

    @durable.workflow(name="lp", store=store, run_id="r")
    def lp(xs: list[int]) -> list[int]:
        return durable.loop_over(sq, xs)

    with pytest.raises(ValueError):
        lp([1, 2, 3, 4])
    assert calls == [1, 2, 3]
    from durable._core.replay import load_context

    assert load_context(store, "lp", "r", "refuse").records == {}
    fail_at["n"] = -1
    assert lp([1, 2, 3, 4]) == [1, 4, 9, 16]
    assert calls == [1, 2, 3, 1, 2, 3, 4]
    records = load_context(store, "lp", "r", "refuse").records
    assert list(records) == [0] and records[0].kind == "loop"
    calls.clear()
    assert lp.with_options(restart=False).run([1, 2, 3, 4]).value == [1, 4, 9, 16]
    assert calls == []


def test_persist_false_runs_again_and_is_never_written(store: durable.Store) -> None:
    calls = Counter[str]()

    @durable.step(name="token", persist=False)
    def token() -> str:
        calls["token"] += 1
        return "tok-SECRET-123"

    @durable.step(name="use")
    def use(t: str) -> int:
        calls["use"] += 1
        return len(t)

    @durable.workflow(name="p", store=store, run_id="r")
    def p(go: bool = False) -> int:
        n = use(token())
        if not go:
            durable.suspend("later")
        return n

    with pytest.raises(durable.Suspended):
        p()
    assert p.resume("r", go=True).value == 14
    assert calls == {"token": 2, "use": 1}
    blob = b"".join(store.get(k) or b"" for k in store.list(""))
    assert b"SECRET" not in blob


def test_keyboard_interrupt_records_nothing_for_the_step(store: durable.Store) -> None:
    calls = Counter[str]()
    stop = {"on": True}

    @durable.step(name="a")
    def a() -> int:
        calls["a"] += 1
        return 1

    @durable.step(name="b")
    def b() -> int:
        calls["b"] += 1
        if stop["on"]:
            raise KeyboardInterrupt
        return 2

    @durable.workflow(name="k", store=store, run_id="r")
    def k() -> int:
        return a() + b()

    with pytest.raises(KeyboardInterrupt):
        k()
    from durable._core.replay import load_context
    from durable._storage.manifest import read_manifest

    assert read_manifest(store, "k", "r").status == "interrupted"  # type: ignore[union-attr]
    assert list(load_context(store, "k", "r", "refuse").records) == [0]
    stop["on"] = False
    assert k() == 3 and calls == {"a": 1, "b": 2}


def test_generators_are_refused_at_decoration() -> None:
    with pytest.raises(durable.ConfigurationError, match="generator"):

        @durable.step
        def gen() -> Any:
            yield 1

    with pytest.raises(durable.ConfigurationError, match="generator"):

        @durable.workflow
        async def agen() -> Any:
            yield 1


def test_nested_step_and_nested_workflow(store: durable.Store) -> None:
    calls = Counter[str]()

    @durable.step(name="inner")
    def inner() -> int:
        calls["inner"] += 1
        return 1

    @durable.step(name="outer")
    def outer() -> int:
        calls["outer"] += 1
        return inner() + 1

    @durable.workflow(name="child", store=store)
    def child() -> int:
        return inner() * 10

    @durable.workflow(name="parent", store=store, run_id="r")
    def parent() -> int:
        return outer() + child()

    assert parent() == 12
    from durable._core.replay import load_context

    records = load_context(store, "parent", "r", "refuse").records
    # The nested step ran plainly; the child workflow is a run of its own,
    # whose result the parent recorded at one position.
    assert [records[p].name for p in sorted(records)] == ["outer", "child"]
    assert store.runs("child") == ["r.1"]
    assert parent() == 12 and calls == {"inner": 2, "outer": 1}


def test_unserialisable_output_names_step_and_keeps_records(store: durable.Store) -> None:
    calls = Counter[str]()
    bad = {"on": True}

    @durable.step(name="ok")
    def ok() -> int:
        calls["ok"] += 1
        return 1

    @durable.step(name="handle")
    def handle() -> Any:
        calls["handle"] += 1
        return threading.Lock() if bad["on"] else 2

    @durable.workflow(name="s", store=store, run_id="r")
    def s() -> Any:
        return ok() + handle()

    with pytest.raises(durable.SerializationError) as info:
        s()
    assert info.value.step == "handle" and info.value.type_name == "lock"
    bad["on"] = False
    assert s() == 3 and calls == {"ok": 1, "handle": 2}


def test_unserialisable_return_value_keeps_run_resumable(store: durable.Store) -> None:
    calls = Counter[str]()
    bad = {"on": True}

    @durable.step(name="ok")
    def ok() -> int:
        calls["ok"] += 1
        return 1

    @durable.workflow(name="rv", store=store, run_id="r")
    def rv() -> Any:
        v = ok()
        return threading.Lock() if bad["on"] else v

    with pytest.raises(durable.SerializationError, match="return value") as refused:
        rv()
    # No step to mark persist=False: the advice is about the workflow's value.
    assert "persist=False" not in str(refused.value)
    assert "from the workflow" in str(refused.value)
    bad["on"] = False
    assert rv() == 1 and calls == {"ok": 1}


def damage(store: durable.Store) -> str:
    """Flip one bit inside the record at position 0; return what should be named."""
    from durable._storage.local import LocalStore

    if isinstance(store, LocalStore):
        path = Path(store.root) / "pipeline" / "r" / "records.log"
        data = bytearray(path.read_bytes())
        data[40] ^= 0x01
        path.write_bytes(bytes(data))
        return f"{path}, entry at byte 0"
    name = "steps/00000000"
    data = bytearray(store.peek_records("pipeline", "r")[name])
    data[-1] ^= 0x01
    rewrite_record(store, ("pipeline", "r"), name, bytes(data), None)  # in its segment
    return name


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_corrupt_record_is_never_returned(
    store: durable.Store, local_store: durable.Store, kind: str
) -> None:
    target = store if kind == "memory" else local_store
    counts: Counter[str] = Counter()
    wf = suspended_pipeline(target, counts, "1")
    with pytest.raises(durable.Suspended):
        wf(1)
    named = damage(target)
    with pytest.raises(durable.CorruptRecordError) as info:
        wf.resume("r", go=True)
    assert info.value.run_id == "r" and named in str(info.value)
    assert counts == {"add": 1, "double": 1}


def test_same_run_held_twice_in_one_process_is_locked(store: durable.Store) -> None:
    entered, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    @durable.step(name="hold")
    def hold() -> None:
        entered.set()
        release.wait(10)

    @durable.workflow(name="h", store=store, run_id="r")
    def h() -> None:
        hold()

    t = threading.Thread(target=h)
    t.start()
    entered.wait(10)
    try:
        h()
    except durable.RunLockedError as e:
        errors.append(e)
    release.set()
    t.join()
    assert len(errors) == 1 and "pid" in str(errors[0])


def test_waiting_for_a_run_held_by_another_task_does_not_block_the_loop(
    local_store: durable.Store,
) -> None:
    """`with_options(wait=)` in an async workflow waits for the lease without
    blocking its event loop: the holder may be another task of that loop.
    (It slept there, so the holder could not go on and the waiter gave up.)"""
    import asyncio

    ran: Counter[str] = Counter()

    @durable.step(name="slow")
    async def slow() -> str:
        ran["slow"] += 1
        await asyncio.sleep(0.3)
        return "v"

    @durable.workflow(name="a", store=local_store, run_id="r")
    async def a() -> str:
        return await slow()

    async def both(wait: float) -> list[Any]:
        flow = a.with_options(wait=wait)
        return list(await asyncio.gather(flow(), flow(), return_exceptions=True))

    assert asyncio.run(both(30)) == ["v", "v"] and ran["slow"] == 1
    a.delete("r")
    first, second = asyncio.run(both(0.1))
    assert first == "v" and isinstance(second, durable.RunLockedError)
    assert "Waited 0.1s for the lease" in str(second) and second.waited == 0.1


def test_two_runs_in_threads_do_not_share_positions(store: durable.Store) -> None:
    barrier = threading.Barrier(2)

    @durable.step(name="tag")
    def tag(who: str, i: int) -> str:
        if i == 0:
            barrier.wait(10)
        return f"{who}{i}"

    @durable.workflow(name="t", store=store)
    def t(who: str) -> list[str]:
        return [tag(who, i) for i in range(3)]

    out: dict[str, Any] = {}
    threads = [threading.Thread(target=lambda w=w: out.__setitem__(w, t.run(w))) for w in "ab"]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert out["a"].value == ["a0", "a1", "a2"] and out["b"].value == ["b0", "b1", "b2"]
    assert out["a"].steps_executed == out["b"].steps_executed == 3


def test_async_workflow_and_steps_are_coroutine_functions(store: durable.Store) -> None:
    calls = Counter[str]()

    @durable.step(name="fetch")
    async def fetch(x: int) -> int:
        calls["fetch"] += 1
        await asyncio.sleep(0)
        return x + 1

    @durable.workflow(name="aw", store=store, run_id="r")
    async def aw(x: int) -> int:
        a = await fetch(x)
        b = await fetch(a)
        return b

    assert inspect.iscoroutinefunction(fetch)
    assert inspect.iscoroutinefunction(aw)
    assert asyncio.run(aw(1)) == 3
    run = asyncio.run(aw.run(1))
    assert run.value == 3 and calls == {"fetch": 2}


def test_async_resume_at_failed_step(store: durable.Store) -> None:
    calls = Counter[str]()
    fail = {"on": True}

    @durable.step(name="s")
    async def s(i: int) -> int:
        calls[f"s{i}"] += 1
        if i == 2 and fail["on"]:
            raise ValueError("x")
        return i

    @durable.workflow(name="aw2", store=store, run_id="r")
    async def aw2() -> int:
        total = 0
        for i in range(4):
            total += await s(i)
        return total

    with pytest.raises(ValueError):
        asyncio.run(aw2())
    fail["on"] = False
    run = asyncio.run(aw2.run())
    assert run.value == 6 and run.resumed_from_step == 2
    assert calls == {"s0": 1, "s1": 1, "s2": 2, "s3": 1}


def test_derived_run_id_is_the_same_in_a_new_process(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    import subprocess
    import sys

    script = tmp_path / "ids.py"
    script.write_text(
        "import dataclasses, durable\n"
        "@dataclasses.dataclass\n"
        "class Cfg:\n"
        "    depth: int\n"
        "@durable.workflow(name='ids')\n"
        "def ids(repo: str, cfg: Cfg, tags: frozenset = frozenset(), opts: dict | None = None) -> None:\n"
        "    pass\n"
        "print(ids.run('org/repo', Cfg(3), frozenset({'b', 'a', 'c'}), {'y': 1, 'x': (1, 2)}).run_id)\n"
    )
    outs = {
        subprocess.run(
            [sys.executable, str(script)],
            env=dict(child_env, PYTHONHASHSEED=seed),
            capture_output=True,
            text=True,
            check=True,
            cwd=tmp_path,
        ).stdout.strip()
        for seed in ("1", "2", "3")
    }
    assert len(outs) == 1 and next(iter(outs)).startswith("ids-")


def test_helper_rebound_after_decoration_is_seen_at_run_start(
    tmp_path: Path, store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook re-runs a helper's cell but not the step's: the step's
    decoration-time fingerprint is stale, the run-start one is not."""
    import importlib

    (tmp_path / "flowmod.py").write_text(
        "import durable\n"
        "def helper(x):\n    return x + 1\n"
        "@durable.step(name='s')\n"
        "def s(x):\n    return helper(x)\n"
        "@durable.workflow(name='hw', run_id='r')\n"
        "def hw(x, go=False):\n"
        "    v = s(x)\n"
        "    if not go:\n        durable.suspend('later')\n"
        "    return v\n"
    )
    (tmp_path / "newhelper.py").write_text("def helper(x):\n    return x + 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("flowmod")
    hw = mod.hw.with_options(store=store)
    with pytest.raises(durable.Suspended):
        hw(1)
    mod.helper = importlib.import_module("newhelper").helper
    with pytest.raises(durable.DefinitionChangedError) as info:
        hw.resume("r", go=True)
    assert "helper" in info.value.changed_steps["s"]
    assert list(info.value.changed_steps) == ["s"]


def test_a_process_that_lost_its_lease_executes_no_further_step(store: durable.Store) -> None:
    calls = Counter[str]()

    @durable.step(name="first")
    def first() -> None:
        calls["first"] += 1
        ctx = current_state()  # the engine's own state: users get a read-only view
        assert ctx is not None and ctx.lease is not None
        ctx.lease.lost = True  # type: ignore[attr-defined]  # as the renewal thread would

    @durable.step(name="second")
    def second() -> None:
        calls["second"] += 1

    @durable.workflow(name="ll", store=store, run_id="r")
    def ll() -> None:
        first()
        second()

    with pytest.raises(durable.RunLockedError, match="lost its lease") as info:
        ll()
    # Lost while the first step ran: not even its record is written (issue 11.3).
    assert getattr(info.value, "position", None) == 0
    assert calls == {"first": 1}
    assert store.load_records("ll", "r") == {}


def test_a_memory_store_is_used_by_one_thread_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """fsspec's memory filesystem is one dict for every instance, and a
    listing that iterates it while another thread writes fails ("dictionary
    changed size during iteration", seen with two runs in threads): every
    operation of a memory store holds one lock. A write started while a
    listing is inside the filesystem happens only once the listing is done."""
    from fsspec.implementations.memory import MemoryFileSystem

    store = durable.open_store("memory://one-thread-at-a-time")
    inside, wrote = threading.Event(), threading.Event()
    during: list[bool] = []
    real_find = MemoryFileSystem.find

    def find(self: Any, *args: Any, **kwargs: Any) -> Any:
        inside.set()
        during.append(wrote.wait(0.5))  # a write that got past the lock would be seen here
        return real_find(self, *args, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "find", find)

    def write() -> None:
        assert inside.wait(10)
        assert store.create("w/r/k", b"x")
        wrote.set()

    writer = threading.Thread(target=write)
    writer.start()
    assert store.list("w/") == []  # listed before the write, which waited
    writer.join()
    assert during == [False] and wrote.is_set()
    assert store.list("w/") == ["w/r/k"]
