"""A step that changes an object it was given (a list argument, `self`):
its replay returns the output but cannot redo the change, so a resumed run
would go on with the object as it was before the step, a value an
uninterrupted run never gives. Such a record counts as a changed call."""

from __future__ import annotations

import concurrent.futures as cf
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

import durable

from .clikit import Poke

SCRIPT = textwrap.dedent(
    """
    import os, sys
    import durable

    LOG = sys.argv[1]

    @durable.step
    def add_header(rows: list) -> int:
        with open(LOG, "a") as f:
            f.write("add_header\\n")
        rows.insert(0, "header")  # changes its argument: a replay cannot redo it
        return len(rows)

    @durable.step
    def crash_once(n: int) -> int:
        if os.environ.get("CRASH") == "1":
            os._exit(3)
        return n

    @durable.workflow(run_id="report", on_change=os.environ.get("POLICY", "refuse"))
    def report() -> str:
        rows = ["a", "b"]
        crash_once(add_header(rows))
        return ",".join(rows)

    try:
        print(report())
    except durable.DefinitionChangedError as e:
        print("REFUSED", e)
        sys.exit(4)
    """
)


def _runner(tmp_path: Path, child_env: dict[str, str]):  # type: ignore[no-untyped-def]
    script, log = tmp_path / "flow.py", tmp_path / "log"
    script.write_text(SCRIPT)

    def run(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-W", "ignore", str(script), str(log)],
            env={**child_env, **env}, cwd=tmp_path, capture_output=True, text=True,
        )  # fmt: skip

    return run, log


def refused_then_rerun(flow: Any, calls: list[str], first_warning: str) -> Any:
    """The first run warns (`first_warning`) and fails after the call that
    changed its argument; once fixed, the resume is refused under "refuse"
    and runs that call again under "rerun" (with the warning again): its
    value."""
    with pytest.warns(UserWarning, match=first_warning):
        with pytest.raises(ConnectionError):
            flow()
    calls.append("fixed")
    with pytest.raises(durable.DefinitionChangedError, match="changed an object it was given"):
        flow()
    with pytest.warns(UserWarning, match="changed an object it was given"):
        return flow.with_options(on_change="rerun")()


def test_a_resume_past_a_step_that_changed_its_argument_is_refused(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """Before: the resume replayed add_header without inserting the header
    and returned "a,b" (an uninterrupted run returns "header,a,b")."""
    run, log = _runner(tmp_path, child_env)
    assert run(CRASH="1").returncode == 3
    refused = run()
    assert refused.returncode == 4, refused.stdout + refused.stderr
    assert "changed an object it was given" in refused.stdout
    assert "Return the new state" in refused.stdout
    assert log.read_text().split() == ["add_header"]  # refused: nothing ran again
    rerun = run(POLICY="rerun")
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.strip() == "header,a,b"
    assert log.read_text().split() == ["add_header", "add_header"]


def test_a_step_that_leaves_its_arguments_alone_replays(store: durable.Store) -> None:
    calls: list[str] = []

    @durable.step
    def total(rows: list[int]) -> int:
        calls.append("total")
        return sum(rows)

    @durable.step
    def fail_once(n: int) -> int:
        if len(calls) == 1:
            raise ConnectionError("the first run fails here")
        return n

    @durable.workflow(store=store, run_id="r")
    def flow() -> int:
        return fail_once(total([1, 2, 3]))

    with pytest.raises(ConnectionError):
        flow()
    calls.append("fixed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no in-place warning for it
        assert flow() == 6
    assert calls == ["total", "fixed"]


def test_changing_an_argument_warns_when_it_runs_and_rebase_keeps_the_output(
    store: durable.Store,
) -> None:
    calls: list[str] = []

    @durable.step
    def tag(seen: dict[str, int]) -> int:
        calls.append("tag")
        seen["tagged"] = 1
        return len(seen)

    @durable.step
    def fail_once(n: int) -> int:
        if calls.count("tag") == 1 and "fixed" not in calls:
            raise ConnectionError("the first run fails here")
        return n

    @durable.workflow(store=store, run_id="r")
    def flow() -> int:
        return fail_once(tag({}))

    with pytest.warns(UserWarning, match="step .*tag changed an object it was given"):
        with pytest.raises(ConnectionError):
            flow()
    calls.append("fixed")
    with pytest.raises(durable.DefinitionChangedError, match="changed an object it was given"):
        flow()
    assert flow.with_options(rebase=True)() == 1
    assert flow() == 1  # the rebased record replays from now on
    assert calls == ["tag", "fixed"]


def test_a_cached_step_that_changed_its_argument_is_not_served_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the second run and the plain call were served the first call's
    entry without the header inserted (["a"], where running gives
    ["header", "a"])."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    log = tmp_path / "log"

    @durable.step(cache=True)
    def add_header(rows: list[str]) -> int:
        with log.open("a") as f:
            f.write("add_header\n")
        rows.insert(0, "header")
        return len(rows)

    @durable.workflow
    def report(tag: str) -> list[str]:
        rows = ["a"]
        add_header(rows)
        return rows

    with pytest.warns(UserWarning, match="changed an object it was given"):
        assert report("first") == ["header", "a"]
        assert report("second") == ["header", "a"]
        rows = ["a"]
        assert add_header(rows) == 2 and rows == ["header", "a"]
        rows = ["a"]
        assert add_header(rows) == 2 and rows == ["header", "a"]
    assert log.read_text().split() == ["add_header"] * 4


@pytest.mark.parametrize("checkpoint_items", [False, True])
def test_a_loop_over_block_that_changed_its_items_counts_as_changed(
    store: durable.Store, checkpoint_items: bool
) -> None:
    """Before: the resume replayed the block without marking the items and
    returned [{"id": 1}, {"id": 2}] (an uninterrupted run marks both)."""
    calls: list[str] = []

    @durable.step
    def mark(item: dict[str, object]) -> object:
        calls.append("mark")
        item["seen"] = True
        return item["id"]

    @durable.step
    def fail_once(ids: list[object]) -> int:
        if "fixed" not in calls:
            raise ConnectionError("the first run fails here")
        return len(ids)

    @durable.workflow(store=store, run_id="r")
    def flow() -> list[dict[str, object]]:
        items: list[dict[str, object]] = [{"id": 1}, {"id": 2}]
        fail_once(durable.loop_over(mark, items, checkpoint_items=checkpoint_items))
        return items

    marked = [{"id": 1, "seen": True}, {"id": 2, "seen": True}]
    assert refused_then_rerun(flow, calls, "loop_over.* changed an object") == marked
    assert calls == ["mark", "mark", "fixed", "mark", "mark"]


def test_a_kept_item_belongs_to_the_item_as_it_was_before_it_ran(store: durable.Store) -> None:
    """Before: item 0, changed to {"v": 2} as it ran, was kept under that
    digest, and the resume gave its result to item 1 ({"v": 2}): [10, 10].
    Nor is a kept item that changed restored: its change would be lost."""
    calls: list[object] = []

    @durable.step
    def bump(item: dict[str, int]) -> int:
        calls.append(item["v"])
        if calls == [1, 2]:
            raise ConnectionError("the first run fails at item 1")
        result = item["v"] * 10
        item["v"] += 1
        return result

    @durable.workflow(store=store, run_id="r", on_change="rerun")
    def flow() -> tuple[list[int], list[dict[str, int]]]:
        items = [{"v": 1}, {"v": 2}]
        return durable.loop_over(bump, items, checkpoint_items=True), items

    with pytest.raises(ConnectionError):
        flow()
    with pytest.warns(UserWarning, match="changed an object it was given"):
        assert flow() == ([10, 20], [{"v": 2}, {"v": 3}])
    assert calls == [1, 2, 1, 2]


def test_a_kept_item_of_a_method_that_changed_its_instance_runs_again(
    store: durable.Store,
) -> None:
    """`loop_over(acc.add, items)` where add changes acc: an item kept after
    that change is not restored (each call of flow starts a fresh Acc, as a
    new process does). Before, the kept item 0 was restored without redoing
    its change to acc, and the resume returned [1, 2, 5] where an
    uninterrupted run returns [1, 3, 6]."""
    calls: list[int] = []

    class Acc:
        def __init__(self) -> None:
            self.total = 0

        def add(self, x: int) -> int:
            calls.append(x)
            if calls == [1, 2]:
                raise ConnectionError("the first run fails at item 1")
            self.total += x
            return self.total

    @durable.workflow(store=store, run_id="r")
    def flow() -> list[int]:
        return durable.loop_over(Acc().add, [1, 2, 3], checkpoint_items=True)

    with pytest.raises(ConnectionError):
        flow()
    with pytest.warns(UserWarning, match="changed an object it was given"):
        assert flow() == [1, 3, 6]
    assert calls == [1, 2, 1, 2, 3]


def test_items_sharing_a_dict_that_changes_as_it_is_read_complete(store: durable.Store) -> None:
    """Checkpointed items on a thread pool that fill one dict they share:
    the check of a finished item meets the dict changing ("dictionary
    changed size during iteration"); that item counts as changed (kept, not
    restored) and the block completes. Before, the block failed with that
    RuntimeError (200 items on 4 threads: 3 runs of 3)."""
    shared: dict[object, object] = {}
    shared["poke"] = Poke(shared)

    def mark(item: dict[str, Any]) -> int:
        item["seen"]["filling"] = True
        return int(item["i"])

    @durable.workflow(store=store)
    def flow(n: int) -> int:
        items = [{"i": i, "seen": shared} for i in range(n)]
        with cf.ThreadPoolExecutor(2) as pool:
            return sum(durable.loop_over(mark, items, checkpoint_items=True, executor=pool))

    with pytest.warns(UserWarning, match="changed an object it was given"):
        assert flow(5) == 10


def test_a_method_block_whose_instance_cannot_be_read_meanwhile_completes(
    store: durable.Store,
) -> None:
    """Items on a thread pool may change their instance while a finished
    item's check reads it, and the read fails as Python's own iteration
    does ("dictionary changed size during iteration"): the item counts as
    changed (kept, not restored), and the block completes. Without the
    catch, the block failed with that RuntimeError (300 items filling a
    dict of their instance on 4 threads: 5 runs of 5)."""

    class Busy:
        def __init__(self) -> None:
            self.seen: dict[object, object] = {}
            self.seen["poke"] = Poke(self.seen)

        def add(self, x: int) -> int:
            self.seen["filling"] = True
            return x

    @durable.workflow(store=store)
    def flow(n: int) -> int:
        with cf.ThreadPoolExecutor(2) as pool:
            done = durable.loop_over(Busy().add, list(range(n)), checkpoint_items=True, executor=pool)
        return sum(done)

    with pytest.warns(UserWarning, match="changed an object it was given"):
        assert flow(5) == 10


ACC_SCRIPT = textwrap.dedent(
    """
    import os, sys
    import durable

    LOG = sys.argv[1]

    class Acc:
        def __init__(self):
            self.total = 0

        def add(self, x):
            with open(LOG, "a") as f:
                f.write(f"add{x}\\n")
            if x == 2 and os.environ.get("CRASH") == "1":
                os.kill(os.getpid(), 9)
            self.total += x
            return self.total

    acc = Acc()

    @durable.workflow(run_id="acc")
    def flow():
        return durable.loop_over(acc.add, [1, 2, 3], checkpoint_items=True)

    print(flow())
    """
)


def test_a_method_block_killed_mid_way_resumes_to_the_uninterrupted_value(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """kill -9 at item 1 of loop_over(acc.add, ...), where add changes acc:
    before, the resume restored item 0 without redoing its change to acc
    and printed [1, 2, 5] (an uninterrupted run prints [1, 3, 6])."""
    script, log = tmp_path / "acc.py", tmp_path / "log"
    script.write_text(ACC_SCRIPT)

    def run(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-W", "ignore", str(script), str(log)],
            env={**child_env, **env}, cwd=tmp_path, capture_output=True, text=True,
        )  # fmt: skip

    assert run(CRASH="1").returncode == -9
    resumed = run()
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "[1, 3, 6]"
    assert log.read_text().split() == ["add1", "add2", "add1", "add2", "add3"]


def test_a_child_run_that_changed_its_argument_counts_as_changed(store: durable.Store) -> None:
    """Before: the resumed parent replayed the child's result without the
    child appending to rows, and returned ["a"] (a run returns ["a", "child"])."""
    calls: list[str] = []

    @durable.step
    def note(n: int) -> int:
        calls.append("note")
        return n

    @durable.workflow(store=store)
    def child(rows: list[str]) -> int:
        n = note(len(rows))
        rows.append("child")
        return n

    @durable.step
    def fail_once(n: int) -> int:
        if "fixed" not in calls:
            raise ConnectionError("the first run fails here")
        return n

    @durable.workflow(store=store, run_id="parent")
    def parent() -> list[str]:
        rows = ["a"]
        fail_once(child(rows))
        return rows

    assert refused_then_rerun(parent, calls, "workflow .*child changed an object") == [
        "a", "child"
    ]
    assert calls == ["note", "fixed"]  # the child's body ran again; its step replayed
