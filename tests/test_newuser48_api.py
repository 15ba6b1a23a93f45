"""The 48th new-user walk, in Python: a run id not found by `history()` or
`cancel()` was advised to "call the workflow without resume()"; a step
output that cannot be pickled showed cloudpickle's frames above durable's
message, which did not say which part of the value was the cause."""

from __future__ import annotations

import threading
import traceback
from pathlib import Path
from typing import Any

import pytest

import durable


def test_a_run_not_found_is_told_to_start_it_only_on_a_resume(tmp_path: Path) -> None:
    """Before: `wf.history("nope")` and `wf.cancel("nope")` said "... or
    call the workflow without resume() to start it": neither resumes."""
    calls = []

    @durable.workflow(name="nf", store=str(tmp_path))
    def nf() -> int:
        calls.append(1)
        return 1

    assert nf() == 1
    for look in (nf.history, nf.cancel, nf.delete):
        with pytest.raises(durable.RunNotFoundError) as e:
            look("nope")
        assert "resume()" not in str(e.value) and "Check the run id" in str(e.value), (look, e.value)
    with pytest.raises(durable.RunNotFoundError) as e:
        nf.resume("nope")
    assert str(e.value).endswith("or call the workflow without resume() to start it."), e.value
    assert calls == [1]


def test_an_output_that_cannot_be_pickled_is_said_without_the_picklers_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the traceback began with cloudpickle's frames ("The above
    exception was the direct cause"), and the message said "cannot pickle
    '_thread.lock' object" of a dict, not where in it. Now the message
    names the part; DURABLE_TRACEBACK=full keeps the pickler's frames."""
    monkeypatch.delenv("DURABLE_TRACEBACK", raising=False)
    calls = []

    @durable.step
    def make() -> dict[str, Any]:
        calls.append(1)
        return {"rows": [1, 2], "held": {"lock": threading.Lock()}}

    @durable.workflow(name="ser", store=str(tmp_path))
    def ser() -> dict[str, Any]:
        return make()

    with pytest.raises(durable.SerializationError) as e:
        ser()
    shown = "".join(traceback.format_exception(e.type, e.value, e.tb))
    assert "cloudpickle.py" not in shown and "direct cause" not in shown, shown
    assert "(in the value's ['held']['lock'], a _thread.lock)" in str(e.value), e.value
    monkeypatch.setenv("DURABLE_TRACEBACK", "full")
    with pytest.raises(durable.SerializationError) as e:
        ser.with_options(run_id="r2")()
    assert isinstance(e.value.__cause__, TypeError)
    assert calls == [1, 1]
