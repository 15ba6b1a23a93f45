"""The 45th new-user walk, from Python: a workflow called with an argument
that cannot be digested (a lock, a socket, a client)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import durable


def test_a_completed_run_called_again_with_an_undigestable_argument_says_why_and_what_works(
    tmp_path: Path,
) -> None:
    """Before: `conn: (not recorded) -> <unlocked _thread.lock ...>` (as if
    the call had been given another value) and, first of the ways out,
    "read the result it completed with: resume('a1') returns it", which
    raised "wf needs argument(s) conn": with it, the call is refused again."""
    ran: list[str] = []

    @durable.workflow(store=str(tmp_path), run_id="a1")
    def wf(conn: object, n: int = 1) -> str:
        ran.append("body")
        return "ok"

    assert wf(threading.Lock()) == "ok"
    with pytest.raises(durable.DefinitionChangedError) as refused:
        wf(threading.Lock())
    said = str(refused.value)
    assert "  - conn: cannot be digested (<unlocked _thread.lock object" in said, said
    assert "no call with it is ever the same as the recorded one (fail closed)" in said, said
    assert "pass what identifies it (a key, a path, a version string) and build the object " \
        "inside a step" in said, said
    assert "resume('a1') returns it" not in said, said
    assert "read the result it completed with: durable show a1" in said, said
    assert ran == ["body"]


def test_a_bad_durable_log_says_what_happens_and_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `DURABLE_LOG must be one of 'off', 'error', 'warning', 'info',
    'debug', not 'verbose'` as a warning, the run going on: whether it logged
    anything, and that the variable is to be fixed, went unsaid."""
    from durable._core.logs import follow_setting

    monkeypatch.setenv("DURABLE_LOG", "verbose")
    with pytest.warns(UserWarning) as said:
        follow_setting()
    text = str(said[0].message)
    assert text.startswith("DURABLE_LOG must be one of 'off', 'error', 'warning', 'info', 'debug', not 'verbose'")
    assert text.endswith("; it is ignored: no log is printed for it. Fix or unset it"), text
