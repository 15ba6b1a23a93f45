"""The 39th new-user walk, through the Python API: each public function
given an argument of the wrong type says which parameter takes what, and
leaves what was recorded as it was."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

import durable

ran: list[str] = []


@durable.step
def note(n: int) -> int:
    ran.append("note")
    return n + 1


@pytest.fixture(autouse=True)
def _store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    ran.clear()


@pytest.mark.parametrize("reason", [5, None, b"waiting"])
def test_suspend_given_no_text_is_refused_before_anything_is_recorded(reason: object) -> None:
    """Before: `durable.suspend(5)` suspended the run, its reason 5, and
    `Suspended` told the caller to resume it."""

    @durable.workflow(run_id="s")
    def waits() -> int:
        n = note(1)
        durable.suspend(reason)  # type: ignore[arg-type]
        return n

    with pytest.raises(durable.ConfigurationError, match=r"suspend\(\) takes the reason as a str"):
        waits()
    (info,) = waits.runs()
    assert (info.status, info.steps, ran) == ("failed", 1, ["note"])  # not suspended
    with pytest.raises(durable.ConfigurationError, match="reason as a str"):
        durable.suspend(5)  # type: ignore[arg-type]  # outside a run: the same message


def test_artifact_given_no_path_names_the_parameter() -> None:
    """Before: inside a step, "expected str, bytes or os.PathLike object, not
    int" from os, naming no durable function; outside a run, nothing."""

    @durable.step
    def build() -> int:
        ran.append("build")
        return durable.artifact(5)  # type: ignore[type-var]

    @durable.workflow(run_id="a")
    def release() -> int:
        return build()

    with pytest.raises(durable.ConfigurationError, match=r"artifact\(\) takes a path .*not 5"):
        release()
    assert release.runs()[0].status == "failed" and ran == ["build"]
    with pytest.raises(durable.ConfigurationError, match=r"artifact\(\) takes a path"):
        durable.artifact(None)  # type: ignore[type-var]


def test_gc_given_a_status_or_dry_run_of_the_wrong_type_removes_nothing() -> None:
    """Before: `gc(status=5)` raised "'int' object is not iterable", and
    `gc(dry_run=0)` (or any falsy value meant as "no") removed runs."""

    @durable.workflow
    def flow(n: int) -> int:
        return note(n)

    for n in range(3):
        flow(n)
    with pytest.raises(durable.ConfigurationError, match=r"gc\(status=...\) takes a run status"):
        durable.gc(status=5)  # type: ignore[arg-type]
    for dry in ("no", 0, None):
        with pytest.raises(durable.ConfigurationError, match=r"gc\(dry_run=...\) takes True or False"):
            durable.gc(keep_last=1, dry_run=dry)  # type: ignore[arg-type]
    assert len(flow.runs()) == 3


def test_stop_on_signals_given_no_signal_installs_no_handler() -> None:
    """Before: `stop_on_signals(5)` raised "'int' object is not iterable",
    and `stop_on_signals([signal.SIGTERM, "x"])` raised a TypeError after
    installing its SIGTERM handler, which stayed: a later `kill -TERM` asked
    for a graceful stop that no run was there to take."""
    before = signal.getsignal(signal.SIGTERM)
    for given in (5, [signal.SIGTERM, "x"], [signal.SIGTERM, 0]):
        with pytest.raises(durable.ConfigurationError, match=r"stop_on_signals\(\) takes signal"):
            durable.stop_on_signals(given)  # type: ignore[arg-type]
        assert signal.getsignal(signal.SIGTERM) is before


def test_fork_given_a_mutate_that_is_no_function_forks_nothing() -> None:
    """Before: `fork(run_id, at=1, mutate=5)` raised "'int' object is not
    callable" from inside the copy; and `at=0` with a mutate said only that 0
    was out of range, "between 1 and 1", not why."""

    @durable.workflow(run_id="f")
    def flow() -> int:
        return note(1) + note(2)

    flow()
    with pytest.raises(durable.ConfigurationError, match=r"fork\(mutate=...\) takes a function"):
        flow.fork("f", at=1, mutate=5)  # type: ignore[arg-type]
    with pytest.raises(durable.ConfigurationError, match=r"mutate= replaces the output at at - 1"):
        flow.fork("f", at=0, mutate=lambda v: v)
    assert [i.run_id for i in flow.runs()] == ["f"] and ran == ["note", "note"]


def test_loop_over_given_no_function_names_the_parameter() -> None:
    """Before: "'int' object is not callable", from the first item."""

    @durable.workflow(run_id="l")
    def flow() -> list[int]:
        return durable.loop_over(5, [1, 2])  # type: ignore[arg-type]

    with pytest.raises(durable.ConfigurationError, match=r"loop_over\(\) takes a function first"):
        flow()
    assert flow.runs()[0].steps == 0


CELL = """\
import durable

@durable.workflow(run_id="nb")
def cell_flow() -> str:
    return durable.wait_for("ok")
"""


def test_a_notebook_cells_suspended_run_advises_no_command_for_the_cell() -> None:
    """Before: a workflow defined in a notebook cell (IPython, Jupyter) that
    suspended advised "or from a shell: durable ... run
    '<ipython-input-1-89f0>:cell_flow' ...": a cell is no file that
    `durable run` can load. The Python call is what it advises now."""
    import linecache

    name = "<ipython-input-1-89f046962685>"  # how IPython names a cell's code
    linecache.cache[name] = (len(CELL), None, CELL.splitlines(True), name)
    cell: dict[str, object] = {"__name__": "__main__"}
    exec(compile(CELL, name, "exec"), cell)
    with pytest.raises(durable.Suspended) as waiting:
        cell["cell_flow"]()  # type: ignore[operator]
    said = str(waiting.value)
    assert "cell_flow.resume('nb', inputs={'ok': VALUE})." in said, said
    assert "from a shell" not in said and "ipython-input" not in said
