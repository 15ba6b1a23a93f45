"""A workflow called inside a workflow is a run of its own."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable.testing import memory_store

SCRIPT = """
import os, sys
import durable

LOG = sys.argv[1]

def note(name):
    with open(LOG, "a") as f:
        f.write(name + "\\n")

@durable.step
def prepare(x: int) -> int:
    note("prepare")
    return x + 1

@durable.step
def heavy(x: int) -> int:
    note(f"heavy{x}")
    if x == 2 and os.environ.get("DIE_IN_CHILD"):
        print("DYING", flush=True)
        sys.stdin.readline()  # the parent test kills us here
    return x * 10

@durable.workflow
def child(x: int) -> int:
    return heavy(x) + heavy(x + 1)

@durable.workflow(run_id="parent")
def parent(x: int) -> int:
    return child(prepare(x)) + prepare(100)

run = parent.run(0)
print("VALUE", run.value, flush=True)
"""


def test_a_child_run_killed_mid_way_resumes_each_step_once(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    script, log = tmp_path / "flow.py", tmp_path / "log"
    script.write_text(SCRIPT)
    first = subprocess.Popen(
        [sys.executable, str(script), str(log)],
        env=dict(child_env, DIE_IN_CHILD="1"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert first.stdout is not None
    assert first.stdout.readline().strip() == "DYING"
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    done = subprocess.run(
        [sys.executable, str(script), str(log)],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["VALUE", str(10 + 20 + 101)]
    # heavy(1) was recorded in the child run before the kill; heavy(2) died
    # before its record, so it is the only body that ran twice.
    assert log.read_text().split() == ["prepare", "heavy1", "heavy2", "heavy2", "prepare"]
    store = durable.open_store(tmp_path / "store")
    assert store.runs("flow.parent") == ["parent"] and store.runs("flow.child") == ["parent.1"]


def test_child_runs_are_listed_with_their_parent_and_replay_from_the_parent(
    store: durable.Store,
) -> None:
    counts: Counter[str] = Counter()

    @durable.step(name="double")
    def double(x: int) -> int:
        counts[f"double{x}"] += 1
        return 2 * x

    @durable.workflow(name="child", store=store)
    def child(x: int) -> int:
        return double(x)

    @durable.workflow(name="parent", store=store, run_id="p")
    def parent() -> list[int]:
        named = child.with_options(run_id="shared")
        # The same child run id twice: its steps execute once.
        return [child(1), child(2), named(3), named(3)]

    assert parent() == [2, 4, 6, 6]
    assert counts == {"double1": 1, "double2": 1, "double3": 1}
    assert sorted(store.runs("child")) == ["p.0", "p.1", "shared"]
    infos = {i.run_id: i for i in child.runs()}
    assert infos["p.0"].parent == "parent/p@0" and infos["p.1"].parent == "parent/p@1"
    assert infos["shared"].parent == "parent/p@2"
    assert all(i.status == "completed" for i in infos.values())
    [parent_info] = parent.runs()
    assert parent_info.parent is None
    # A re-run of the parent takes the children's results from its own records.
    store.delete_run("child", "p.0")
    assert parent() == [2, 4, 6, 6] and counts["double1"] == 1
    assert "p.0" not in store.runs("child")


def test_a_child_called_with_other_arguments_never_replays(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    state = {"x": 1, "wait": True}

    @durable.step(name="double")
    def double(x: int) -> int:
        counts["double"] += 1
        return 2 * x

    @durable.workflow(name="child", store=store)
    def child(x: int) -> int:
        return double(x)

    @durable.workflow(name="parent", store=store, run_id="p")
    def parent() -> int:
        value = child(state["x"])
        if state["wait"]:
            durable.suspend("waiting")
        return value

    try:
        parent()
    except durable.Suspended:
        pass
    state.update(x=5, wait=False)
    try:
        parent()
    except durable.DefinitionChangedError as e:
        assert "arguments changed" in str(e) and "child(5)" in str(e)
    else:
        raise AssertionError("a child called with other arguments must not replay")
    assert counts["double"] == 1
    # Under rerun the parent re-executes the child call, and the child run
    # (same id, other arguments) re-runs its changed steps too.
    assert parent.with_options(on_change="rerun")() == 10
    assert counts["double"] == 2
    assert parent() == 10 and counts["double"] == 2


def test_a_restarted_parent_never_resumes_a_child_of_the_discarded_run(
    store: durable.Store,
) -> None:
    """restart=True keeps nothing of the discarded run: its children (ids
    derived from the parent's) run afresh too, even when the restarted run
    stops before reaching them and a plain resume reaches them later."""
    counts: Counter[str] = Counter()
    fail = {"before": False}

    @durable.step(name="fetch")
    def fetch(x: int) -> int:
        counts["fetch"] += 1
        return 100 * counts["fetch"] + x  # as fresh data would: each run differs

    @durable.step(name="gate")
    def gate() -> None:
        if fail["before"]:
            raise RuntimeError("flaky")

    @durable.workflow(name="child", store=store)
    def child(x: int) -> int:
        return fetch(x)

    @durable.workflow(name="parent", store=store, run_id="p")
    def parent() -> int:
        gate()
        return child(1)

    assert parent() == 101 and counts["fetch"] == 1
    assert parent.with_options(restart=True)() == 201 and counts["fetch"] == 2
    # The restarted run fails before its child; a plain call resumes it and
    # reaches the child: the child made by the run before the restart is
    # not resumed (that would hand back 201, made before this run began).
    fail["before"] = True
    with pytest.raises(RuntimeError, match="flaky"):
        parent.with_options(restart=True)()
    fail["before"] = False
    assert parent() == 301 and counts["fetch"] == 3
    assert parent() == 301 and counts["fetch"] == 3  # completed: replayed
    # A child shared by name with another parent run is that run's child.
    named = child.with_options(run_id="shared")

    @durable.workflow(name="other", store=store, run_id="o")
    def other() -> int:
        return named(2)

    @durable.workflow(name="user", store=store, run_id="u")
    def user() -> int:
        return named(2)

    assert other() == 402 and user() == 402 and counts["fetch"] == 4


def test_an_async_child_run(store: durable.Store) -> None:
    import asyncio

    counts: Counter[str] = Counter()

    @durable.step(name="inc")
    async def inc(x: int) -> int:
        counts["inc"] += 1
        return x + 1

    @durable.workflow(name="achild", store=store)
    async def achild(x: int) -> int:
        return await inc(x)

    @durable.workflow(name="aparent", store=store, run_id="ap")
    async def aparent() -> int:
        return await achild(1) + await achild(10)

    assert asyncio.run(aparent()) == 13
    assert sorted(store.runs("achild")) == ["ap.0", "ap.1"] and counts["inc"] == 2
    assert asyncio.run(aparent.with_options(restart=True)()) == 13
    assert counts["inc"] == 4  # a restart keeps nothing: its children run afresh too


NESTED_WAITS = """
import os
import pytest

import durable


@durable.step
def work(tag):
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write(tag + "\\n")
    return tag


@durable.workflow
def grandkid() -> str:
    return work("g") + durable.wait_for("deep")


@durable.workflow
def kid() -> str:
    return work("k") + durable.wait_for("ok") + grandkid()


@durable.workflow
def parent() -> str:
    return work("p") + kid() + durable.wait_for("ok")
"""


def test_the_parent_resumed_with_an_input_answers_the_wait_of_its_child(
    tmp_path: Path,
) -> None:
    """The answer to a wait in a child (or grandchild) run is given where the
    run was started, as the parent's suspension says; an answer a child
    takes is used up for the parent too (one answer, one wait)."""
    from .clikit import child_env, counts, write_flow
    from .clikit import durable as durable_cli

    write_flow(tmp_path, NESTED_WAITS)
    env = child_env(tmp_path)

    def resume(*inputs: str) -> subprocess.CompletedProcess[str]:
        given = [arg for name in inputs for arg in ("--input", name)]
        return durable_cli(tmp_path, "run", "flow.py:parent", "--run-id", "p", "--resume",
                           *given, env=env)  # fmt: skip

    first = durable_cli(tmp_path, "run", "flow.py:parent", "--run-id", "p", env=env)
    assert first.returncode == 3 and "--input ok=VALUE" in first.stderr, first.stderr
    both = resume("ok=yes", "deep=D")  # the child's and the grandchild's waits
    assert both.returncode == 3, both.stderr  # then the parent's own wait for 'ok'
    assert "'ok'" in both.stderr
    done = resume("ok=no")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '"pkyesgDno"'
    assert counts(tmp_path) == {"p": 1, "k": 1, "g": 1}
    assert resume().stdout.strip() == '"pkyesgDno"' and counts(tmp_path)["k"] == 1


def _waiting_family(store: durable.Store, ran: Counter[str]) -> durable.Workflow[[], str]:
    """A parent whose child waits for "ok", then fails once in a step; the
    parent then waits for "ok" too. Run until the child's step has failed."""

    @durable.step(name="flaky")
    def flaky() -> str:
        ran["flaky"] += 1
        if ran["flaky"] == 1:
            raise ConnectionError("down")
        return "-"

    @durable.workflow(name="kid", store=store)
    def kid() -> str:
        return durable.wait_for("ok") + flaky()

    @durable.workflow(name="parent", store=store, run_id="p")
    def parent() -> str:
        return kid() + durable.wait_for("ok")

    with pytest.raises(durable.Suspended):
        parent()
    with pytest.raises(ConnectionError):
        parent.resume("p", inputs={"ok": "yes"})
    return parent


def test_an_answer_the_child_recorded_stays_and_the_input_goes_to_the_parent(
    store: durable.Store,
) -> None:
    """An input offered to a child run that already recorded another answer
    of that name is not refused by the child: the parent's later wait of
    that name is the first one without an answer."""
    ran: Counter[str] = Counter()
    parent = _waiting_family(store, ran)
    with pytest.warns(UserWarning, match="child run 'p.0' already recorded input 'ok'"):
        assert parent.resume("p", inputs={"ok": "no"}).value == "yes-no"
    assert ran == Counter(flaky=2)


def test_an_answer_repeated_to_a_child_is_used_up_for_the_parent_too(
    store: durable.Store,
) -> None:
    """The child's recorded answer, supplied again (as a repeated command
    does), is a repeat there: it does not answer the parent's later wait."""
    ran: Counter[str] = Counter()
    parent = _waiting_family(store, ran)
    with pytest.raises(durable.Suspended, match="'ok'"):  # the parent's own wait
        parent.resume("p", inputs={"ok": "yes"})
    assert ran == Counter(flaky=2)
    assert parent.resume("p", inputs={"ok": "yes"}).value == "yes-yes"


def _answered_child_then_failing_parent(
    store: durable.Store, ran: Counter[str], *, wait_again: bool
) -> durable.Workflow[[], str]:
    """A child that waits for "ok" and completes; its parent then fails once
    in a step (and, with `wait_again`, waits for "ok" itself). Run until
    the parent's step has failed."""

    @durable.step(name="after")
    def after(v: str) -> str:
        ran["after"] += 1
        if ran["after"] == 1:
            raise ConnectionError("down")
        return v + "!"

    @durable.workflow(name="kid", store=store)
    def kid() -> str:
        return durable.wait_for("ok")

    @durable.workflow(name="parent", store=store, run_id="p")
    def parent() -> str:
        done = after(kid())
        return done + durable.wait_for("ok") if wait_again else done

    with pytest.raises(durable.Suspended):
        parent()
    with pytest.raises(ConnectionError):
        parent.resume("p", inputs={"ok": "yes"})
    return parent


def test_an_answer_a_completed_child_recorded_given_again_is_a_repeat(
    store: durable.Store,
) -> None:
    """The same command run again after the parent failed past its child,
    which completed (the parent replays it from its own record): the
    child's answer again is a repeat, as when the child is entered
    (test_an_answer_repeated_to_a_child_is_used_up_for_the_parent_too). It
    answered the parent's own later wait, never asked; with none, the
    parent's end said no wait took it (a misspelt name?)."""
    ran: Counter[str] = Counter()
    parent = _answered_child_then_failing_parent(store, ran, wait_again=True)
    with pytest.raises(durable.Suspended, match="'ok'"):  # the parent's own wait
        parent.resume("p", inputs={"ok": "yes"})
    assert parent.resume("p", inputs={"ok": "no"}).value == "yes!no"
    ran.clear()
    quiet = _answered_child_then_failing_parent(memory_store(), ran, wait_again=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert quiet.resume("p", inputs={"ok": "yes"}).value == "yes!"
    assert ran == Counter(after=2)


def test_a_workflow_called_inside_its_own_run_is_told_that_it_waits_for_itself(
    tmp_path: Path,
) -> None:
    # Called from one of its own steps with the same arguments, the workflow
    # finds its own run held: by this very process, which no wait can free.
    calls: list[int] = []

    @durable.step
    def again(x: int) -> int:
        calls.append(x)
        return again_wf(x)

    @durable.workflow(store=str(tmp_path / "store"))
    def again_wf(x: int) -> int:
        return again(x)

    with pytest.raises(durable.RunLockedError, match=r"That is this very process: .*called inside its own run"):
        again_wf(1)
    assert calls == [1]


def test_a_child_run_made_in_an_asyncio_task_names_its_parent_position(
    store: durable.Store,
) -> None:
    import asyncio

    @durable.workflow(name="tchild", store=store)
    async def tchild(x: int) -> int:
        return x

    @durable.workflow(name="tparent", store=store, run_id="tp")
    async def tparent() -> list[int]:
        return list(await asyncio.gather(tchild(1), tchild(2)))

    assert asyncio.run(tparent()) == [1, 2]
    parents = sorted((info.run_id, info.parent) for info in tchild.runs())
    # The position inside a task reads as `durable show` prints it, not as a list.
    assert parents == [("tp.0.0.0", "tparent/tp@0.0.0"), ("tp.0.1.0", "tparent/tp@0.1.0")]


def test_a_derived_child_id_another_call_made_is_refused(store: durable.Store) -> None:
    # Run ids may hold dots: run "v2" at position 0.0.0 (in an asyncio task)
    # and run "v2.0.0" at position 0 both derive the child id "v2.0.0.0".
    # The second parent was handed the child the first one made.
    asked: list[str] = []

    @durable.step
    async def ask(q: str) -> str:
        run = durable.current_run()
        assert run is not None
        asked.append(run.run_id)
        return f"{q} in {run.run_id}"

    @durable.workflow(store=store)
    async def kid(q: str) -> str:
        return await ask(q)

    async def helper() -> str:
        return await kid("q")

    @durable.workflow(store=store)
    async def mom(in_task: bool) -> str:
        if in_task:
            return (await asyncio.gather(helper()))[0]
        return await kid("q")

    assert asyncio.run(mom.with_options(run_id="v2")(True)) == "q in v2.0.0.0"
    with pytest.raises(durable.ConfigurationError, match=r"run 'v2' of .* made it"):
        asyncio.run(mom.with_options(run_id="v2.0.0")(False))
    assert asked == ["v2.0.0.0"]  # nothing ran for the second parent
    assert [r.status for r in mom.runs() if r.run_id == "v2.0.0"] == ["failed"]
    # A run of the child started on its own under that id is no parent's either.
    assert asyncio.run(kid.with_options(run_id="w.0")("q")) == "q in w.0"
    with pytest.raises(durable.ConfigurationError, match="started on its own"):
        asyncio.run(mom.with_options(run_id="w")(False))
    # Its own child still replays for each parent (the same call again).
    assert asyncio.run(mom.with_options(run_id="v2")(True)) == "q in v2.0.0.0"
    assert asked == ["v2.0.0.0", "w.0"]


def test_a_child_that_suspends_or_is_cancelled_ends_a_parent_that_catches_it(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Suspended` and `Cancelled` are `Exception`s (through DurableError):
    a parent body's `except Exception:` caught its child's, and the parent
    completed with the fallback, for good, the child's question unanswered."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    ran: Counter[str] = Counter()

    @durable.step(name="after")
    def after() -> str:
        ran["after"] += 1
        return "+after"

    @durable.step(name="ask")
    def ask(cancel: bool) -> str:
        ran["ask"] += 1
        if cancel:
            kid.cancel("p-True.0")  # from outside, while the child runs
        return "asked-"

    @durable.workflow(name="kid", store=store)
    def kid(cancel: bool) -> str:
        return ask(cancel) + durable.wait_for("answer")

    @durable.workflow(name="parent", store=store, run_id=lambda cancel=False: f"p-{cancel}")
    def parent(cancel: bool = False) -> str:
        try:
            value = kid(cancel)
        except Exception as e:
            value = f"fallback after {type(e).__name__}"
        return value + after()

    with pytest.raises(durable.Suspended, match="answer"):
        parent()
    assert [(i.run_id, i.status) for i in parent.runs()] == [("p-False", "suspended")]
    assert parent.resume("p-False", inputs={"answer": "yes"}).value == "asked-yes+after"
    with pytest.raises(durable.Cancelled, match=r"p-True\.0"):
        parent(cancel=True)
    statuses = {i.run_id: i.status for i in parent.runs()}
    assert statuses == {"p-False": "completed", "p-True": "failed"}
    # after() ran once in each parent (the body went on past what it caught),
    # and replayed in the resume.
    assert ran == Counter(ask=2, after=2)


def test_children_gathered_under_a_catch_all_suspend_their_parent(store: durable.Store) -> None:
    """The gathered children each reach their question, the parent does not
    complete with its fallback, and one resume answers them all (it
    returned ['fallback Suspended'], the answers unused)."""
    ran: list[str] = []

    @durable.step
    async def prep(p: str) -> str:
        ran.append(p)
        return p

    @durable.workflow(name="asker", store=store)
    async def asker(p: str) -> str:
        await prep(p)
        return str(durable.wait_for(p))

    @durable.workflow(name="gatherer", store=store, run_id="g")
    async def gatherer() -> list[str]:
        try:
            return list(await asyncio.gather(*(asker(p) for p in "abc")))
        except Exception as e:
            return [f"fallback {type(e).__name__}"]

    with pytest.raises(durable.Suspended):
        asyncio.run(gatherer())
    assert {i.status for i in asker.runs()} == {"suspended"} and len(asker.runs()) == 3
    answers = {p: p.upper() for p in "abc"}
    assert asyncio.run(gatherer.resume("g", inputs=answers)).value == ["A", "B", "C"]
    assert sorted(ran) == ["a", "b", "c"]


def test_a_wait_in_a_child_run_names_the_run_to_resume(store: durable.Store) -> None:
    """`except Suspended as waiting: wf.resume(waiting.run_id, inputs=...)`
    (the README's way) for a wait in a child run: `Suspended` named the
    child that waits ('rel.0'), and resuming that id was refused. It names
    the run the caller started, and says which child waits."""
    built: list[str] = []

    @durable.step
    def build(part: str) -> str:
        built.append(part)
        return f"built {part}"

    @durable.workflow(name="part", store=store)
    def part(name: str) -> str:
        return f"{build(name)}: {durable.wait_for('ok')}"

    @durable.workflow(name="release", store=store, run_id="rel")
    def release() -> str:
        return part("api")

    with pytest.raises(durable.Suspended) as waiting:
        release()
    found = waiting.value
    assert (found.run_id, found.child, found.waiting_for) == ("rel", "rel.0", "ok")
    assert str(found).startswith(
        "run 'rel' of workflow 'release' is suspended (in its child run 'rel.0', at its position 1)"
    ), found
    assert "release.resume('rel', inputs={'ok': VALUE})" in str(found), found
    with pytest.raises(durable.RunNotFoundError) as lost:
        release.resume("rel.0", inputs={"ok": "yes"})
    said = str(lost.value)
    assert "a child run of run 'rel' of 'release'; resume that run" in said, said
    done = release.resume(found.run_id, inputs={"ok": "yes"})  # as the message says
    assert done.value == "built api: yes" and built == ["api"]

