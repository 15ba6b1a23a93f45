"""The eighteenth round of the peers' own test cases (see
tests/test_peer_ports_eighteenth.py) that cross a process boundary: DBOS's
tests/test_classdecorators.py recovery of a workflow (`test_class_recovery`
with `DBOS.recover_pending_workflows` after the process died) whose
step sets an attribute of its class that a later step reads, through the
class's name in a static method (`Cfg.mode = "fast"`), through `cls` in a
class method, or through `type(self)` in a method of a configured
instance (`INST = Inst()`, whose reader is `self.mode`). A replay of the
setter cannot redo the write, so in a new process the reader would
compute from the class as the import left it. Real processes (a new process is the class as imported);
executions are counted by the step bodies, in a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow

FLOW = """
import os
import durable


def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")


class Cfg:
    mode = "slow"

    @durable.step
    @staticmethod
    def set_fast() -> str:
        count("static")
        Cfg.mode = "fast"
        return "set"


class Klass:
    mode = "slow"

    @durable.step
    @classmethod
    def set_fast(cls) -> str:
        count("classmethod")
        cls.mode = "fast"
        return "set"

    @durable.step
    @classmethod
    def read(cls) -> str:
        count("use")
        return cls.mode


class Inst:
    mode = "slow"

    @durable.step
    def set_fast(self) -> str:
        count("instance")
        type(self).mode = "fast"
        return "set"

    @durable.step
    def read(self) -> str:
        count("use")
        return self.mode


INST = Inst()  # a configured instance, as DBOS's tests make one


@durable.step
def gate() -> int:
    if os.environ.get("FAIL"):
        raise RuntimeError("crash")
    return 0


@durable.step
def use() -> str:
    count("use")
    return Cfg.mode




@durable.workflow(run_id="static")
def static() -> str:
    Cfg.set_fast()
    gate()
    return use()


@durable.workflow(run_id="classmethod")
def classmethod_() -> str:
    Klass.set_fast()
    gate()
    return Klass.read()


@durable.workflow(run_id="instance")
def instance() -> str:
    INST.set_fast()
    gate()
    return INST.read()
"""

CALL = """
import os, durable, flow
for wf in (flow.static, flow.classmethod_, flow.instance):
    try:
        print(wf.name, "value", wf.with_options(on_change=os.environ["ON_CHANGE"])())
    except (durable.DurableError, RuntimeError) as error:
        print(wf.name, type(error).__name__, str(error).splitlines()[:3])
"""


def test_dbos_class_attribute_a_step_sets_is_not_lost_on_recovery(tmp_path: Path) -> None:
    """Each run fails after its setter set the class's `mode`; a new
    process resumes it. Refused (the setter's replay cannot redo the
    write), then run again under "rerun": the setter executes again and
    its reader returns "fast" (the last two read it through `cls.mode` and
    `self.mode`). Seen failing: the class method's and the instance's
    resumes returned "slow" (before any change of this round: the write
    through `cls` or `type(self)` was not seen, and a reader through `self`
    named no class), and the static method's too once its class's own
    counters stopped counting by their value (this round's first fix)."""
    (tmp_path / "flow.py").write_text(FLOW)
    env = {"COUNT_FILE": str(tmp_path / "count"), "DURABLE_STORE": str(tmp_path / "store")}
    first, refused, rerun = run_each([
        (tmp_path, CALL, {**env, "FAIL": "1", "ON_CHANGE": "refuse"}),
        (tmp_path, CALL, {**env, "ON_CHANGE": "refuse"}),
        (tmp_path, CALL, {**env, "ON_CHANGE": "rerun"}),
    ])  # fmt: skip
    names = ["static", "classmethod_", "instance"]
    assert first.split("\n")[:3] == [f"{n} RuntimeError ['crash']" for n in names], first
    for name, setter in zip(names, ["Cfg", "Klass", "Inst"], strict=True):
        assert f"{name} DefinitionChangedError" in refused and f"{setter}.set_fast" in refused, refused
    assert rerun.split("\n")[:3] == [
        "static value fast",
        "classmethod_ value fast",
        "instance value fast",
    ], rerun
    counted = (tmp_path / "count").read_text().split()
    assert counted == ["static", "classmethod", "instance", "static", "use", "classmethod", "use", "instance", "use"]
