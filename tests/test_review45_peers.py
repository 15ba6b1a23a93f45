"""A class attribute a step rebinds itself (`Acc.total += n`) counts by the
class's statements (peers43), so that a counter a static-method step bumps
does not make a completed run look changed. Another module of the user's
that sets the attribute (`flow.Acc.total = int(os.environ["K"])`, or
`setattr(Acc, "total", ...)`, in plugin.py) is no statement of the class: counted by those alone, a resume
under another K replayed the step's record, made from the old start value,
where a fresh run returns another (value 12 for 13). Set elsewhere, it
counts by its value again, as before peers43."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import RUN_FLOW, RUN_WF, run_each

pytestmark = pytest.mark.slow  # one interpreter forking three phases

FLOW = """
import os, durable

class Acc:
    total = 1

@durable.step
def s(n):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("s\\n")
    Acc.total += n
    return Acc.total

@durable.workflow(run_id="r1")
def wf(x):
    out = s(x)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""

PLUGINS = {
    "attribute": 'import os, flow\nflow.Acc.total = int(os.environ["K"])\n',
    "setattr": 'import os\nfrom flow import Acc\nsetattr(Acc, "total", int(os.environ["K"]))\n',
}


def test_a_class_attribute_another_module_sets_counts_by_its_value(tmp_path: Path) -> None:
    code = "import plugin\n" + RUN_FLOW
    jobs = []
    for name, plugin in PLUGINS.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "flow.py").write_text(FLOW)
        (tmp_path / name / "plugin.py").write_text(plugin)
        jobs += [(tmp_path / name, code, {"K": k, **stop}) for k, stop in [("2", {"STOP": "1"}), ("3", {}), ("2", {})]]
    outs = run_each(jobs)
    for i, name in enumerate(PLUGINS):
        first, other, same = outs[3 * i : 3 * i + 3]
        assert "suspended" in first, (name, first)
        assert "refused" in other and "value 12" not in other, (name, other)  # was: value 12
        assert "value 12" in same, (name, same)  # the same start value: replayed
        assert (tmp_path / name / "count").read_text().split() == ["s"]


# A step writes a class (or a dict); the workflow reads it only through a
# plain function of the module (`describe()`), naming the class only to call
# the step (`Cfg.set_fast()`, which peers43 reads as no read of `Cfg.mode`).
HELPER_FLOW = """
import os, durable

class Cfg:
    mode = "slow"

    @staticmethod
    @durable.step
    def set_fast():
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write("set_fast\\n")
        Cfg.mode = "fast"

STATE = {"mode": "slow"}

@durable.step
def put_fast():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("put_fast\\n")
    STATE["mode"] = "fast"

def describe():
    return Cfg.mode if os.environ["VIA"] == "class" else STATE["mode"]

@durable.workflow(run_id="r1")
def wf():
    Cfg.set_fast() if os.environ["VIA"] == "class" else put_fast()
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return describe()
"""


def test_a_value_a_step_writes_read_through_a_helper_is_not_replayed_without_it(tmp_path: Path) -> None:
    jobs = []
    for via in ("class", "dict"):
        (tmp_path / via).mkdir()
        (tmp_path / via / "flow.py").write_text(HELPER_FLOW)
        jobs += [(tmp_path / via, RUN_WF, {"VIA": via, **stop}) for stop in ({"STOP": "1"}, {})]
    outs = run_each(jobs)
    for i, via in enumerate(("class", "dict")):
        first, resumed = outs[2 * i : 2 * i + 2]
        assert "suspended" in first, (via, first)
        # A new process: the import left mode "slow"; replaying the setter would say so.
        assert "refused" in resumed and "value slow" not in resumed, (via, resumed)  # was: value slow
        assert len((tmp_path / via / "count").read_text().split()) == 1
