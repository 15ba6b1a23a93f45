"""A script's `main()` that configures what a step reads (`CFG["k"] = ...`)
and resets a log its step only writes (`LOG.clear()`), calling the
workflow twice (peers45's strict xfail, DBOS's counters): its `def` binds
CFG, and only the statements of its body CFG may be made from count for
the step (`handedpart._made_part`), not the log it empties, reads and
prints. What does flow into CFG still counts: CFG's value from the command
line, and the log when `main()` makes CFG from it, through an alias too.
In-process, `runpy` running the script as `__main__` once per phase."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = """
import sys

import durable

CFG = {"k": 1}
LOG = []


@durable.step
def fetch(i):
    with open(__file__ + ".count", "a") as f:
        f.write("ran\\n")
    LOG.append(i)
    return i * CFG["k"]


@durable.workflow(run_id="configured")
def pipeline(i):
    return fetch(i)


def main():
    CFG["k"] = int(sys.argv[1])
    LOG.clear()
    {extra}
    try:
        first = pipeline(3)
        second = pipeline(3)
        print("values", first, second, "log", LOG)
    except durable.DefinitionChangedError as e:
        print("refused", e)


if __name__ == "__main__":
    main()
"""


def _run(script: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], k: str) -> str:
    monkeypatch.setattr(sys, "argv", [str(script), k])
    runpy.run_path(str(script), run_name="__main__")
    return capsys.readouterr().out.strip()


def _ran(script: Path) -> int:
    return len(Path(f"{script}.count").read_text().split())


def _script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str) -> Path:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT.replace("{extra}", extra))
    return script


def test_the_log_main_empties_is_no_input_and_the_value_it_sets_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script(tmp_path, monkeypatch, "pass")
    assert _run(script, monkeypatch, capsys, "2") == "values 6 6 log [3]"  # was refused
    assert _run(script, monkeypatch, capsys, "2") == "values 6 6 log []"  # a new process: replayed
    assert _ran(script) == 1
    out = _run(script, monkeypatch, capsys, "5")  # another CFG["k"]: the completed run is refused
    assert out.startswith("refused") and "CFG" in out, out
    assert _ran(script) == 1


@pytest.mark.parametrize(
    "extra",
    [
        'CFG["n"] = len(LOG)',
        'c = CFG\n    c["n"] = len(LOG)',
        'if LOG:\n        return\n    CFG["n"] = 0',
        'for n in range(3):\n        CFG["n"] = n\n        if not LOG:\n            break',
    ],
)
def test_a_log_main_makes_the_configuration_from_still_counts(
    extra: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Made from the log (directly, through a name bound to CFG, set only
    when the log is empty, or in a loop the log may end), the log counts by
    its contents for the step: the second call, which finds it holding the
    first call's entry, is refused, as before."""
    script = _script(tmp_path, monkeypatch, extra)
    out = _run(script, monkeypatch, capsys, "2")
    assert out.startswith("refused") and "LOG" in out, out
    assert _ran(script) == 1
