"""A Ctrl-C landing in the run driver itself, between two of the plan's
requests (`plan.send` returned, or the loop's jump back), left the plan
suspended with the run's lease: only collecting it released the lease. A
notebook keeps the interrupted cell's traceback (`sys.last_traceback`),
which keeps the driver's frame and so the plan, and the next call of the run
was refused with RunLockedError naming this very process. Here the
interrupt is raised at every line of `drive_sync` / `drive_async` in turn,
the exception is kept as a notebook keeps it, and the next call must run
and execute each step once over both calls (see test_ctrl_c.py).

CPython looks for a signal after a call returns and at a loop's jump back.
Where that leaves the exception outside the driver's own `try` blocks, the
tracer raises it at the next line: after `plan.send` returned (the line
clearing `send, error`), and at the jump back after a step's error was kept
(`error = e`). Everywhere else the driver's handlers already hand it to the
plan (test_ctrl_c covers the code they call); raising at a line that calls
nothing inside a `finally:` would model no real signal."""

from __future__ import annotations

import asyncio
import contextvars
import linecache
import os
import sys
from types import CodeType, FrameType
from typing import Any

import pytest

import durable
from durable._core import plan as driver

from .test_ctrl_c import N, aflow, call_again, executed, flow, recorded

LANDINGS = ("send, error = None, None", "error = e")


def _line(frame: FrameType) -> str:
    return linecache.getline(frame.f_code.co_filename, frame.f_lineno).split("#")[0].strip()


class InDriver:
    """KeyboardInterrupt at the `at`-th of the driver's own `LANDINGS` it runs."""

    def __init__(self, at: int, code: CodeType) -> None:
        self.at, self.code, self.seen, self.where = at, code, 0, ""

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        return self._line if frame.f_code is self.code else None

    def _line(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "line" or _line(frame) not in LANDINGS:
            return self._line
        self.seen += 1
        if self.seen == self.at:
            sys.settrace(None)
            self.where = f"{frame.f_code.co_name}:{frame.f_lineno}"
            raise KeyboardInterrupt(self.where)
        return self._line


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_ctrl_c_between_two_requests_leaves_the_next_call_free(
    tmp_path: Any, kind: str
) -> None:
    store = durable.open_store(tmp_path / "store")
    code = (driver.drive_sync if kind == "sync" else driver.drive_async).__code__
    name = "flow" if kind == "sync" else "aflow"
    tried = 0
    for at in range(1, 10_000):
        run = (flow if kind == "sync" else aflow).with_options(store=store, run_id=f"r{at}")
        call: Any = run if kind == "sync" else (lambda n, run=run: asyncio.run(run(n)))
        del executed[:]
        stop = InDriver(at, code)
        kept: list[BaseException] = []  # what a notebook keeps of the interrupted cell
        sys.settrace(stop)
        try:
            call(N)
        except KeyboardInterrupt as e:
            kept.append(e)
        finally:
            sys.settrace(None)
        if not stop.where:
            break
        tried += 1
        done, first = recorded(store, f"r{at}", name), list(executed)
        del executed[:]
        value = call_again(contextvars.Context(), call, stop.where)
        assert value == [i * i for i in range(N)], stop.where
        assert sorted(executed) == sorted(set(range(N)) - done), (stop.where, first)
    assert tried >= 1, tried
    assert os.path.isdir(tmp_path / "store")
