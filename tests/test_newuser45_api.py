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


def test_the_preview_of_a_huge_bytes_output_does_not_repr_all_of_it() -> None:
    """Before: `durable show` of a run whose step returned 300 MB of bytes
    took 7 s and 900 MB, half of it `repr()` of the whole value, which
    reprlib then cut to 60 characters (it has no rule for bytes)."""
    import tracemalloc

    from durable._valuetext import preview_of

    big = b"x" * 20_000_000
    tracemalloc.start()
    try:
        shown = preview_of(big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert shown == "b'" + "x" * 26 + "..." + "x" * 28 + "'", shown
    assert peak < 1_000_000, peak  # the whole repr is 20 MB
    assert preview_of(bytearray(b"ab")) == "bytearray(b'ab')" and preview_of(b"ab") == "b'ab'"
