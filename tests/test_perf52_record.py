"""perf52: a live step's one try makes no `_Tries` unless a try failed at
its position, and the record of a step the run found plain is made without
asking `with_written` again while its function's code is the one the run
found (`livecall.finish`). What the per-run answer must not hide: code
swapped in place inside the body (as IPython's autoreload swaps `__code__`),
a failed try still recorded and counted, and a lease lost mid-run, which
refuses the write whatever the run decided before."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import durable
from durable._core import written
from durable._core.identity import call_digest
from durable._core.replay import load_context
from durable._core.spec import _others_may_run, step_spec
from tests.scripts import ROOT

STATE: dict[str, int] = {}


def _reloaded(x: int) -> int:  # the code a reload brings: it writes STATE, which `peek` reads
    STATE["k"] = x
    return x


HOOKS: list[Callable[[int], None]] = []  # called by the body: none of its code names a write


def _swapping(x: int) -> int:
    for hook in HOOKS:
        hook(x)
    return x


def _reload_at_2(x: int) -> None:
    if x == 2:  # reloaded in place while its call runs (`fn.__code__ = new.__code__`)
        _swapping.__code__ = _reloaded.__code__


def _arm() -> None:
    HOOKS.append(_reload_at_2)


swapping = durable.step(name="swapping")(_swapping)
_SWAPPING = _swapping.__code__


@durable.step(name="peek")
def peek() -> int:
    return STATE.get("k", 0)


def test_code_reloaded_in_a_body_is_recorded_as_the_new_code_writes(tmp_path: Path) -> None:
    """`swapping(1)` makes the step plain for the run; the body of
    `swapping(2)` swaps its function's code for one that writes STATE.
    Its record must count that write (`with_written` asked again, as the
    code is not the one the run found): with the plain answer kept, the
    record held the bare digest and a resume where STATE differs replayed."""
    store = durable.open_store(tmp_path, durability="none")

    @durable.workflow(name="reloaded", run_id="r", store=store)
    def flow() -> int:
        first = swapping(1)
        _arm()  # after the run decided: a hook the run's analysis saw would count its writes
        return first + swapping(2)

    written.WRITERS.pop("swapping", None)
    try:
        if _others_may_run():  # another thread (pytest-xdist's) may have swapped it: refused
            with pytest.raises(durable.DefinitionChangedError, match="changed while run 'r' went on"):
                flow()
            assert store.record_names("reloaded", "r") == ["steps/00000000"]
            return
        assert flow() == 3
    finally:
        HOOKS.clear()
        _swapping.__code__ = _SWAPPING
    assert written.WRITERS.get("swapping") == ("STATE",)
    spec = step_spec(swapping)
    assert spec is not None
    records = load_context(store, "reloaded", "r", "refuse").records
    first, second = records.get(0), records.get(1)
    assert first is not None and second is not None
    assert first.args_digest == call_digest(spec.signature, (1,), {}, "swapping")
    # Joined with STATE as the body left it: the bare digest with the plain answer kept.
    assert second.args_digest != call_digest(spec.signature, (2,), {}, "swapping")


def test_a_failed_try_of_a_plain_step_is_recorded_and_counted(tmp_path: Path) -> None:
    """The one try of a direct step that fails without a `_Tries` made
    before its body: its failure is recorded with its start, and the
    resume's try is numbered after it."""
    store = durable.open_store(tmp_path, durability="none")
    tries: list[int] = []

    @durable.step(name="flaky")
    def flaky(i: int) -> int:
        tries.append(durable.current_run().attempt)  # type: ignore[union-attr]
        if i == 1 and len(tries) == 2:
            raise ValueError("once")
        return i

    @durable.workflow(name="failing", run_id="r", store=store)
    def flow() -> int:
        return flaky(0) + flaky(1)

    with pytest.raises(ValueError, match="once"):
        flow()
    assert flow() == 1
    assert tries == [0, 0, 1]  # the resumed try of position 1 counts the failed one
    steps = {s.position: s for s in flow.history("r")}
    assert [(f.type, f.message) for f in steps[1].failures] == [("ValueError", "once")]
    assert steps[1].attempts == 2


CHILD = """
import os, sys
import durable

count, ready, go = sys.argv[1], sys.argv[2], sys.argv[3]

@durable.step(name="work")
def work(i):
    with open(count, "a") as f:
        f.write(f"{i}\\n")
    if i == 3 and len(open(count).read().split()) == 4:  # the holder's body of step 3
        with open(ready, "w") as f:
            f.write("ready")
        with open(go) as f:  # blocks until the parent has taken the lease file away
            f.read()
    return i

@durable.workflow(name="lost", run_id="r")
def flow():
    return sum(work(i) for i in range(5))

try:
    print("value", flow())
except durable.LeaseLostError as e:
    print("lost at", e.position)
"""


@pytest.mark.slow
def test_a_lease_lost_mid_run_refuses_the_write_and_the_taker_goes_on(tmp_path: Path) -> None:
    """A holder whose three calls of `work` made it plain for the run: its
    lease file is replaced (another process may lock the new one) while
    the body of the fourth call runs. Its record is refused; the process
    that takes the run over replays the three records and runs the rest,
    each body once but the one the holder lost."""
    script, count = tmp_path / "lost.py", tmp_path / "count"
    script.write_text(CHILD)
    ready, go = tmp_path / "ready", tmp_path / "go"
    os.mkfifo(ready)
    os.mkfifo(go)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DURABLE_STORE": str(tmp_path / "store")}
    argv = [sys.executable, str(script), str(count), str(ready), str(go)]
    holder = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
    try:
        with open(ready) as f:  # the holder is in the body of step 3
            assert f.read() == "ready"
        lease = tmp_path / "store" / "lost" / "r" / "lease"
        (tmp_path / "copy").write_bytes(lease.read_bytes())
        os.replace(tmp_path / "copy", lease)
        with open(go, "w") as f:
            f.write("go")
        out, _ = holder.communicate(timeout=60)
    finally:
        holder.kill()
    assert out.split() == ["lost", "at", "3"]
    store = durable.open_store(tmp_path / "store")
    assert store.record_names("lost", "r") == [f"steps/{i:08d}" for i in range(3)]
    taker = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=True)
    assert taker.stdout.split() == ["value", "10"]
    assert count.read_text().split() == ["0", "1", "2", "3", "3", "4"]
