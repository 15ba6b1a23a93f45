"""The 41st new-user walk, in Python: the traceback of a step that failed
or of a refused resume shows the user's frames and durable's message, not
the engine's twenty frames between them."""

from __future__ import annotations

import asyncio
import functools
import traceback
from pathlib import Path
from typing import Any

import pytest

import durable

OWN = str(Path(durable.__file__).parent)
calls: list[str] = []


def make(version: str) -> Any:
    @durable.step(version=version)
    def crunch(n: int) -> int:
        calls.append(f"crunch {n}")
        if n < 0:
            raise ValueError(f"bad input {n}")
        return n * 10

    @durable.workflow
    def job(n: int) -> int:
        if n == 99:
            return crunch(n, n)  # type: ignore[call-arg]  # does not bind
        return crunch(n) + 1

    return job


def frames(e: BaseException) -> list[tuple[str, str]]:
    """(where, function) of each frame of e's traceback, durable's as `durable`."""
    return [
        ("durable" if f.filename.startswith(OWN) else Path(f.filename).name, f.name)
        for f in traceback.extract_tb(e.__traceback__)
    ]


@pytest.fixture(autouse=True)
def _short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DURABLE_TRACEBACK", raising=False)  # the suite's conftest keeps them whole
    durable.configure(store=str(tmp_path / "store"))
    calls.clear()


def test_a_failed_step_shows_the_users_frames_and_two_of_durable(tmp_path: Path) -> None:
    """Before: 18 frames of durable's between the call and the step's body."""
    job = make("1")
    with pytest.raises(ValueError, match="bad input -1") as e:
        job.with_options(run_id="r1")(-1)
    assert frames(e.value) == [
        ("test_newuser41_api.py", "test_a_failed_step_shows_the_users_frames_and_two_of_durable"),
        ("durable", "__call__"),
        ("durable", "drive_sync"),
        ("test_newuser41_api.py", "job"),
        ("test_newuser41_api.py", "crunch"),
    ]
    line = traceback.extract_tb(e.value.__traceback__)[2].line
    assert line == "raise e  # durable's own frames left out of this traceback: DURABLE_TRACEBACK=full shows them"
    assert calls == ["crunch -1"]


def test_a_refused_resume_shows_the_call_and_the_message_alone(tmp_path: Path) -> None:
    """Before: 13 frames of durable's, ending in `choose_policy`."""
    assert make("1").with_options(run_id="r1")(2) == 21
    with pytest.raises(durable.DefinitionChangedError) as e:
        make("2").with_options(run_id="r1").run(2)
    assert frames(e.value) == [
        ("test_newuser41_api.py", "test_a_refused_resume_shows_the_call_and_the_message_alone"),
        ("durable", "run"),
        ("durable", "drive_sync"),
    ]
    assert "Ways out:" in str(e.value)
    assert calls == ["crunch 2"]


async def _twice(job: Any) -> int:
    return await job.with_options(run_id="a1")(-3)  # type: ignore[no-any-return]


def test_an_async_workflow_s_failed_step_too(tmp_path: Path) -> None:
    """Before: 20 frames of durable's and asyncio's between them."""
    @durable.step
    async def fetch(n: int) -> int:
        calls.append(f"fetch {n}")
        raise ValueError(f"bad input {n}")

    @durable.workflow
    async def ajob(n: int) -> int:
        return await fetch(n)

    with pytest.raises(ValueError, match="bad input -3") as e:
        asyncio.run(_twice(ajob))
    assert frames(e.value)[-5:] == [
        ("test_newuser41_api.py", "_twice"),
        ("durable", "__call__"),
        ("durable", "drive_async"),
        ("test_newuser41_api.py", "ajob"),
        ("test_newuser41_api.py", "fetch"),
    ]
    assert calls == ["fetch -3"]


def test_a_call_that_does_not_bind_shows_the_users_line(tmp_path: Path) -> None:
    """A call that does not bind is the caller's mistake: shown at the line
    that made it, as Python shows a plain function's (newuser47: durable's
    path down to `_bind` followed it, as if durable had failed)."""
    job = make("1")
    with pytest.raises(TypeError, match="cannot be called with these arguments") as e:
        job.with_options(run_id="r1")(99)
    assert frames(e.value) == [
        ("test_newuser41_api.py", "test_a_call_that_does_not_bind_shows_the_users_line"),
        ("durable", "__call__"),
        ("durable", "drive_sync"),
        ("test_newuser41_api.py", "job"),
    ]
    assert calls == []


def test_a_fault_of_durables_shows_the_users_line_then_where_durable_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error durable raises that is no `DurableError` nor the caller's
    mistake (a fault, here a builtin failing under `_bind`) keeps its frames
    from the user's last one on: the line that made the call, then
    durable's path down to the raise."""
    import durable._core.identity as identity
    import durable._core.steps as steps

    monkeypatch.setattr(identity, "call_bytes", lambda *a: None)  # no fast path past `_bind`
    monkeypatch.setattr(steps, "call_bytes", lambda *a: None)
    monkeypatch.setattr(identity, "fill_defaults", functools.partial(int, "x"))  # a TypeError of its own
    with pytest.raises(TypeError, match="cannot be interpreted as an integer") as e:
        make("1").with_options(run_id="r1")(1)
    where = frames(e.value)
    assert where[:4] == [
        ("test_newuser41_api.py", "test_a_fault_of_durables_shows_the_users_line_then_where_durable_raised"),
        ("durable", "__call__"),
        ("durable", "drive_sync"),
        ("test_newuser41_api.py", "job"),
    ]
    assert where[-1] == ("durable", "_bind") and all(f[0] == "durable" for f in where[4:])
    assert len(where) < 12
    assert calls == []


def test_durable_traceback_full_keeps_the_engine_s_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the project's own tests have them (tests/conftest.py sets it)."""
    monkeypatch.setenv("DURABLE_TRACEBACK", "full")
    with pytest.raises(ValueError) as e:
        make("1").with_options(run_id="r1")(-1)
    assert sum(1 for f in frames(e.value) if f[0] == "durable") > 10
    assert calls == ["crunch -1"]
