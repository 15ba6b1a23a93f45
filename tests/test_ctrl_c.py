"""Ctrl-C in a notebook lands at any line, durable's own included: the
KeyboardInterrupt is caught by the kernel, and the next call in the same
process must run (not `RunLockedError` from a lease this process still holds,
not a refusal as if it were inside the interrupted run, not a hang) and
replay what was recorded without executing it again.

The interrupt is raised by a tracer at the k-th line durable executes inside
a chosen part of a run, for every k: the lines a real signal can land
between (a `try:`, `finally:`, `return name` or a `with` block's exit
call nothing, where CPython looks for signals, so they are skipped)."""

from __future__ import annotations

import contextvars
import functools
import gc
import linecache
import os
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import durable
from durable._storage.keys import parse_name

PACKAGE = os.path.dirname(durable.__file__)
N = 3
executed: list[int] = []


@durable.step(name="work")
def work(i: int) -> int:
    executed.append(i)
    return i * i


@durable.workflow(name="flow")
def flow(n: int) -> list[int]:
    return [work(i) for i in range(n)]


class CtrlC:
    """Raise KeyboardInterrupt at the `at`-th line event of durable's code
    run under one of the functions named `inside` (counted from 1)."""

    def __init__(self, at: int, inside: frozenset[str]) -> None:
        self.at, self.inside, self.seen, self.where = at, inside, 0, ""
        self.line = self._line  # one object: a frame traced by it is known by it

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        if not code.co_filename.startswith(PACKAGE):
            return None
        if code.co_name not in self.inside and not self._under(frame):
            return None
        return self.line

    def _under(self, frame: FrameType) -> bool:
        """Whether a frame of `inside` calls this one. The nearest caller in
        durable's code tells: it was asked when it was called (or resumed),
        since every frame of the run started after `sys.settrace`, and is
        traced by this very tracer if and only if one of `inside` (or it)
        called it. Walking every frame up to pytest's for each call cost
        the test more than the runs it interrupts."""
        f = frame.f_back
        while f is not None:
            if f.f_code.co_filename.startswith(PACKAGE):
                return f.f_trace is self.line or f.f_code.co_name in self.inside
            f = f.f_back
        return False

    def _line(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "line" or _no_op(frame):
            return self.line
        self.seen += 1
        if self.seen == self.at:
            sys.settrace(None)
            self.where = f"{os.path.relpath(frame.f_code.co_filename, PACKAGE)}:{frame.f_lineno}"
            raise KeyboardInterrupt(self.where)
        return self.line


def _no_op(frame: FrameType) -> bool:
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).split("#")[0].strip()
    if text in ("try:", "finally:", "else:", "return") or (
        text.startswith("return ") and text[7:].isidentifier()
    ):
        return True
    if not text.startswith(("with ", "async with ")):
        return False
    first = next(s for s, _, line in frame.f_code.co_lines() if line == frame.f_lineno)
    return frame.f_lasti != first  # the block's exit: __exit__ is called before a signal


def recorded(store: durable.Store, run_id: str, workflow: str = "flow") -> set[int]:
    names = store.peek_records(workflow, run_id)
    return {p[1] for n in names if (p := parse_name(n)) is not None and p[0] == "steps"}


def call_again(context: contextvars.Context, call: Callable[[], list[int]], where: str) -> Any:
    """The next call, in a thread so that a hang fails the test (it is a
    daemon left blocked then)."""
    out: list[Any] = []

    def again() -> None:
        try:
            out.append(context.run(call, N))
        except BaseException as e:
            out.append(e)

    thread = threading.Thread(target=again, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert out, f"after a Ctrl-C at {where}, the next call hangs"
    if isinstance(out[0], BaseException):
        raise AssertionError(f"after a Ctrl-C at {where}: {out[0]!r}")
    return out[0]


def interrupt_everywhere(store: durable.Store, inside: frozenset[str]) -> int:
    """Interrupt a run at each line in turn; after each, call again in the
    same context. The number of lines interrupted."""
    for at in range(1, 10_000):
        context = contextvars.Context()  # a notebook's: what a call leaves set stays
        call: Callable[[], list[int]] = flow.with_options(store=store, run_id=f"r{at}")
        del executed[:]
        ctrl_c = CtrlC(at, inside)
        sys.settrace(ctrl_c)
        try:
            context.run(call, N)
        except KeyboardInterrupt:
            pass
        finally:
            sys.settrace(None)
        if not ctrl_c.where:  # the run went through: every line was tried
            return at - 1
        done, first = recorded(store, f"r{at}"), list(executed)
        del executed[:]
        value = call_again(context, call, ctrl_c.where)
        assert value == [i * i for i in range(N)], ctrl_c.where
        assert sorted(executed) == sorted(set(range(N)) - done), (ctrl_c.where, first)
    raise AssertionError("the run never went through")


@pytest.mark.parametrize(
    "part",
    [
        frozenset({"acquire"}),  # taking the run's lease
        frozenset({"enter_run"}),  # entering the body: the run's context set
        frozenset({"cover"}),  # a commit's fdatasync, shared between threads
        frozenset({"reset"}),  # leaving the body: the run's context put back
        frozenset({"release"}),  # giving the lease up (Held's, FileLease's, the log's)
    ],
    ids=["lease", "entry", "sync", "reset", "release"],
)
def test_the_next_call_runs_after_a_ctrl_c_at_any_line(tmp_path: Path, part: frozenset[str]) -> None:
    store = durable.open_store(tmp_path / "store")
    assert interrupt_everywhere(store, part) > 5


@durable.workflow(name="outer")
def outer(n: int) -> list[int]:
    return [*flow(n), work(n)]


@pytest.mark.slow
def test_a_child_run_is_not_locked_out_after_a_ctrl_c_in_its_release(tmp_path: Path) -> None:
    """The child's lease, released inside the parent's run: a Ctrl-C landing
    in that release must not leave the child's run held by nobody."""
    store = durable.open_store(tmp_path / "store")
    for at in range(1, 10_000):
        context, ctrl_c = contextvars.Context(), CtrlC(at, frozenset({"release"}))
        call = outer.with_options(store=store, run_id=f"p{at}")
        del executed[:]
        sys.settrace(ctrl_c)
        try:
            context.run(call, N)
        except KeyboardInterrupt:
            pass
        finally:
            sys.settrace(None)
        if not ctrl_c.where:
            assert at > 5
            return
        first = list(executed)
        del executed[:]
        assert call_again(context, call, ctrl_c.where) == [i * i for i in range(N + 1)]
        assert sorted(first + executed) == list(range(N + 1)), (ctrl_c.where, first, executed)


def test_a_live_holder_in_this_process_keeps_its_run(tmp_path: Path) -> None:
    """What frees a lease left by an interrupted release never frees a live
    one: a thread still in the run keeps it, and a second call of the run in
    this process is refused while it runs."""
    store = durable.open_store(tmp_path / "store")
    entered, go = threading.Event(), threading.Event()

    @durable.step(name="held")
    def held() -> int:
        entered.set()
        assert go.wait(30)
        return 1

    @durable.workflow(name="hold")
    def hold() -> int:
        return held()

    call = hold.with_options(store=store, run_id="h")
    thread = threading.Thread(target=call)
    thread.start()
    try:
        assert entered.wait(30)
        for _ in range(2):  # the refused call's own lease is no leftover either
            with pytest.raises(durable.RunLockedError, match="this very process"):
                call()
    finally:
        go.set()
        thread.join(30)
    assert call() == 1


@pytest.mark.parametrize(
    "part",
    [frozenset({"acquire"}), pytest.param(frozenset({"release"}), marks=pytest.mark.slow)],
    ids=["lease", "release"],
)
def test_an_object_store_lease_is_not_left_held_by_a_ctrl_c(part: frozenset[str]) -> None:
    """The same on an object store (memory://, as S3): there a lease is a
    generation object renewed by a thread, and one left held blocks the run
    until its expiry, or for good while the thread renews it."""
    store = durable.open_store(f"memory://ctrl-c-{uuid.uuid4().hex[:12]}")
    assert interrupt_everywhere(store, part) > 5


def test_a_call_abandoned_mid_run_lets_its_lease_go(tmp_path: Path) -> None:
    """A run's plan dropped while suspended (what a Ctrl-C landing in the
    driver, between two of its steps, leaves once the traceback goes) is
    closed when collected, which releases its lease: the record of leases
    held here must not keep it alive."""
    store = durable.open_store(tmp_path / "store")
    call = flow.with_options(store=store, run_id="a")
    plan = call._call_plan((N,), {})
    next(plan)  # the lease taken, the body about to run
    del plan
    gc.collect()
    del executed[:]
    assert call(N) == [i * i for i in range(N)]
    assert executed == list(range(N))


@durable.step(name="awork")
async def awork(i: int) -> int:
    executed.append(i)
    return i * i


@durable.workflow(name="aflow")
async def aflow(n: int) -> list[int]:
    return [await awork(i) for i in range(n)]


@pytest.mark.parametrize(
    "part", [frozenset({"reset"}), frozenset({"release"})], ids=["reset", "release"]
)
def test_an_async_run_is_not_locked_out_after_a_ctrl_c(tmp_path: Path, part: frozenset[str]) -> None:
    """The same for an async workflow, each call in `asyncio.run` (a
    notebook's loop): there a step's own reset goes through the driver."""
    import asyncio

    store = durable.open_store(tmp_path / "store")
    for at in range(1, 10_000):
        context, ctrl_c = contextvars.Context(), CtrlC(at, part)
        call = aflow.with_options(store=store, run_id=f"a{at}")
        del executed[:]
        sys.settrace(ctrl_c)
        try:
            context.run(asyncio.run, call(N))
        except KeyboardInterrupt:
            pass
        finally:
            sys.settrace(None)
        if not ctrl_c.where:
            assert at > 5
            return
        done, first = recorded(store, f"a{at}", "aflow"), list(executed)
        del executed[:]
        again = functools.partial(_arun, call)
        assert call_again(context, again, ctrl_c.where) == [i * i for i in range(N)]
        assert sorted(executed) == sorted(set(range(N)) - done), (ctrl_c.where, first)


def _arun(call: Callable[[int], Any], n: int) -> Any:
    import asyncio

    return asyncio.run(call(n))
