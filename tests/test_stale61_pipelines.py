"""Stale replays in pipelines as users write them (stale61): a list of
stage functions (`STAGES = [clean, enrich]`) that the script's `main()`
changes from its command line (`STAGES.remove(enrich)` under `--skip`),
read by a step that runs each. A list of functions had no contents to
tell (only plain data did), so it counted by its statements alone, the
same text in both runs: the resume with `--skip` replayed what the run
with `enrich` computed. A function of the user's in such a list now
counts by its name; so does the function a class attribute holds
(`Scorer.key = staticmethod(two)` in `main()`), and another module's global (`stages.PICK = stages.last`); a lambda there
(`PICKED["f"] = OPS["two"]`) by its code. Each phase a real process (`twice`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import RUN_WF, refused_after_edit, twice

pytestmark = pytest.mark.slow  # two interpreters, forked per flow

FLOW = """
import os, durable
import stages

def clean(x):
    return x.strip()

def enrich(x):
    return x + "+e"

STAGES = [clean, enrich]
KEYS = {"first": stages.first}
OPS = {"one": lambda: "1", "two": lambda: "2"}
PICKED = {"f": OPS["one"]}


def one():
    return "1"


def two():
    return "2"


class Scorer:
    key = staticmethod(one)



@durable.step
def s():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("s\\n")
    x = " a "
    for fn in STAGES:
        x = fn(x)
    return x + KEYS["first"]() + Scorer.key() + stages.PICK() + PICKED["f"]()

@durable.workflow(run_id="r1")
def wf():
    out = s()
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out

def main():
    if os.environ.get("SKIP"):
        STAGES.remove(enrich)
    if os.environ.get("LAST"):
        KEYS["first"] = stages.last
    if os.environ.get("KEY"):
        Scorer.key = staticmethod(two)
    if os.environ.get("PICK"):
        stages.PICK = stages.last
    if os.environ.get("LAMBDA"):
        PICKED["f"] = OPS["two"]

main()
"""

STAGES = "def first():\n    return '1'\n\ndef last():\n    return '2'\n\nPICK = first\n"


def test_a_list_of_stages_main_changes_counts_which_functions_it_holds(tmp_path: Path) -> None:
    folders = {}
    for case in ("removed", "swapped", "method", "module", "lambda", "same"):
        folders[case] = place = tmp_path / case
        place.mkdir()
        (place / "flow.py").write_text(FLOW)
        (place / "stages.py").write_text(STAGES)

    def between(case: str, place: Path) -> dict[str, str]:
        return {"removed": {"SKIP": "1"}, "swapped": {"LAST": "1"}, "method": {"KEY": "1"},
                "module": {"PICK": "1"}, "lambda": {"LAMBDA": "1"}, "same": {}}[case]

    # `import flow` runs `main()`, as `python flow.py` would.
    runs = twice(folders, RUN_WF, between, {"STOP": "1"})
    # Each printed `value a+e1111`, the first run's output, before the fix.
    refused_after_edit(runs["removed"])  # STAGES.remove(enrich): a1111
    refused_after_edit(runs["swapped"])  # KEYS["first"] = stages.last: a+e2111
    refused_after_edit(runs["method"])  # Scorer.key = staticmethod(two): a+e1211
    refused_after_edit(runs["module"])  # stages.PICK = stages.last: a+e1121
    refused_after_edit(runs["lambda"])  # PICKED["f"] = OPS["two"]: a+e1112
    first, count, second, after = runs["same"]
    assert "suspended" in first and "value a+e1111" in second and count == after == ["s"], second
