"""What a step body runs in: its position, try and call key, and where the
artifacts it registers go, kept in one context variable with the artifacts
(`context.StepFrame`). A cached step called plainly in a step's body collects
its own artifacts and keeps the step's identity; each goes back once it returns.

Every test counts executions of the step bodies and asserts exact numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from durable._core import replay


def test_a_cached_call_in_a_step_collects_its_own_artifacts_and_keeps_the_steps_key(
    tmp_path: Path,
) -> None:
    store = durable.open_store(tmp_path / "s")
    ran: list[str] = []
    keys: dict[str, str] = {}

    @durable.step(name="inner", cache=True)
    def inner(name: str) -> str:
        ran.append("inner")
        (tmp_path / name).write_text(name)
        run = durable.current_run()  # read: not kept in the cache (a warning says so)
        assert run is not None and run.step_index == 0 and run.attempt == 0
        keys["inner"] = run.idempotency_key()
        return str(durable.artifact(tmp_path / name))

    @durable.step(name="outer")
    def outer() -> str:
        ran.append("outer")
        (tmp_path / "before").write_text("b")
        durable.artifact(tmp_path / "before")
        with pytest.warns(UserWarning, match="read durable.current_run"):
            made = inner("made")  # a plain call, collecting what it registers
        (tmp_path / "after").write_text("a")
        durable.artifact(tmp_path / "after")
        run = durable.current_run()
        assert run is not None
        keys["outer"] = run.idempotency_key()
        return made

    @durable.workflow(name="frame", run_id="r", store=store)
    def flow() -> str:
        return outer()

    assert flow() == str(tmp_path / "made")
    assert ran == ["outer", "inner"]
    rec = replay.load_context(store, "frame", "r", "refuse").records[0]
    # Once each, in order: the cached call's own list, handed on to the step's once it returned.
    assert keys["inner"] == keys["outer"]  # the step running around it
    urls = [a["url"] for a in rec.artifacts]
    assert urls == [str(tmp_path / "before"), str(tmp_path / "made"), str(tmp_path / "after")]
    assert flow() == str(tmp_path / "made") and ran == ["outer", "inner"]  # replayed

