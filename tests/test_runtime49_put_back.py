"""A new run refused by its child (the child's run recorded by other code)
ended `failed` with the definition of the code that was refused: with the
code put back, the run was refused in turn (its definition "changed")
although it had recorded nothing, and only a restart ran it. A refused
attempt that made a run and recorded nothing leaves it no definition of its
own: the code put back runs it. One that recorded a step keeps the
definition of the code that made the step: other code is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage.manifest import read_manifest
from durable.events import LeaseTakenOver


class Flows:
    """A child run of its own id whose step reads `code` (which version of
    the code is in use: part of its fingerprint), and a parent calling it,
    after a step of its own when the file `own` exists (read at run time)."""

    def __init__(self, tmp_path: Path) -> None:
        self.store = durable.open_store(str(tmp_path / "store"))
        self.ran: dict[str, int] = {}
        self.own = tmp_path / "own"
        self.seen: list[Any] = []  # the parent's manifest as flaky() found it
        code = 1

        def use(version: int) -> None:
            nonlocal code
            code = version

        self.use = use

        @durable.step
        def part() -> int:
            self.count(f"part{code}")
            return code

        @durable.step
        def flaky() -> int:
            self.count("flaky")
            self.seen.append(read_manifest(self.store, "parent", "p1"))
            if self.ran["flaky"] == 1:
                raise ValueError("first try fails")
            return 0

        @durable.step
        def mine() -> int:
            self.count("mine")
            return 100

        @durable.workflow(name="child", store=self.store, run_id="c1")
        def child() -> int:
            return part() + flaky()

        @durable.workflow(name="parent", store=self.store, run_id="p1")
        def parent() -> int:
            return (mine() if self.own.exists() else 0) + child()

        self.child: Callable[[], int] = child
        self.parent: Callable[[], int] = parent

    def count(self, name: str) -> None:
        self.ran[name] = self.ran.get(name, 0) + 1

    def call(self) -> Any:
        """The value, or the refusal's name; no call takes a run over (nobody died)."""
        seen: list[object] = []
        with durable.on_event(seen.append):
            try:
                out: Any = self.parent()
            except durable.DurableError as e:
                out = type(e).__name__
        assert not [e for e in seen if isinstance(e, LeaseTakenOver)]
        return out


def _child_recorded_by_v1(f: Flows) -> None:
    with pytest.raises(ValueError):
        f.child()  # part(): recorded by v1; flaky: failed
    f.use(2)  # the child's step changed: v2 refuses the child run


def test_code_put_back_runs_a_run_its_refused_attempt_made(tmp_path: Path) -> None:
    f = Flows(tmp_path)
    _child_recorded_by_v1(f)
    assert f.call() == "DefinitionChangedError"
    assert f.call() == "DefinitionChangedError"  # again: still nothing recorded
    m = read_manifest(f.store, "parent", "p1")
    assert m is not None and m.status == "failed"
    f.use(1)  # put back
    assert f.call() == 1
    assert f.ran == {"part1": 1, "flaky": 2}
    m = read_manifest(f.store, "parent", "p1")
    assert m is not None and m.status == "completed" and "unmade" not in m.extra
    # What a kill -9 mid-run would leave: the run is v1's before any step of it runs.
    during = f.seen[-1]
    assert (during.status, during.fingerprint, "unmade" in during.extra) == ("running", m.fingerprint, False)
    assert f.call() == 1  # completed: replayed whole
    assert f.ran == {"part1": 1, "flaky": 2}


def test_a_run_that_recorded_under_other_code_is_refused(tmp_path: Path) -> None:
    f = Flows(tmp_path)
    _child_recorded_by_v1(f)
    f.own.touch()
    assert f.call() == "DefinitionChangedError"  # mine() recorded by v2, then the child refused
    f.use(1)
    assert f.call() == "DefinitionChangedError"  # v2's record is not replayed by v1
    assert f.ran == {"part1": 1, "flaky": 1, "mine": 1}


def test_a_later_attempt_that_recorded_keeps_its_code(tmp_path: Path) -> None:
    f = Flows(tmp_path)
    _child_recorded_by_v1(f)
    assert f.call() == "DefinitionChangedError"  # v2 made p1, recorded nothing
    f.use(3)
    f.own.touch()
    assert f.call() == "DefinitionChangedError"  # v3 recorded mine(), then the child refused
    f.use(1)
    assert f.call() == "DefinitionChangedError"  # v3's record is not replayed by v1
    assert f.ran == {"part1": 1, "flaky": 1, "mine": 1}
