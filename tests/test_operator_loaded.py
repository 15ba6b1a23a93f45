"""A comparison or `not x` in a workflow body is no call of a method of
the user's classes (`__eq__`, `__lt__`, `__bool__` are in most classes):
followed, a class with an `__eq__` that fills a global, loaded in the
resuming process and not in the one that recorded the run, made a step's
digest differ between the two, and the resume was refused ("arguments
changed"). Two real processes; each step runs once."""

from __future__ import annotations

from pathlib import Path

from tests.scripts import run_in

FLOW = """
import os, sys
import durable

STATE = {}

def counted(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

@durable.step
def work(i):
    counted(f"work{i}")
    return i * 10 + len(STATE)

@durable.workflow(run_id="r")
def flow(n):
    out = [work(i) for i in range(n)]
    if os.environ.get("STOP") == "1" or not out:
        durable.suspend("stopped")
    return out

if sys.argv[1] == "resume":
    import others  # a module of the user's this process loads, the first did not
print(flow(2))
"""

OTHERS = """
class Loud:
    def __eq__(self, other):  # what it calls only the run knows: it may fill any global
        return getattr(other, "__eq__")(self)

    def __bool__(self):
        return bool(getattr(self, "value", None)())
"""


def test_a_comparison_in_the_body_does_not_hang_on_the_classes_loaded(tmp_path: Path) -> None:
    (tmp_path / "flow_script.py").write_text(FLOW)
    (tmp_path / "others.py").write_text(OTHERS)
    first = run_in(tmp_path, "flow_script.py", "start", STOP="1")
    assert "Suspended" in first or "stopped" in first, first
    assert run_in(tmp_path, "flow_script.py", "resume").strip().splitlines()[-1] == "[0, 10]"
    assert sorted((tmp_path / "count").read_text().split()) == ["work0", "work1"]
