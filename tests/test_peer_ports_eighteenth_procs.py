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


class Desc:
    mode = "slow"

    @durable.step
    @staticmethod
    def set_fast() -> str:
        count("described")
        Desc.mode = "fast"
        return "set"

    @classmethod
    def describe(cls) -> str:  # no step: what it reads is the reader's
        return cls.mode


@durable.step
def use_desc() -> str:
    count("use")
    return Desc.describe()


@durable.workflow(run_id="described")
def described() -> str:
    Desc.set_fast()
    gate()
    return use_desc()


class Counted:  # DBOS's counters: bumped by the steps, read by no step
    runs = 0

    @durable.step
    @staticmethod
    def first() -> int:
        count("first")
        Counted.runs += 1
        return 5

    @durable.step
    @classmethod
    def second(cls) -> int:
        count("second")
        cls.runs += 1
        return 6

    @durable.workflow(run_id="counted")
    @classmethod
    def counted(cls) -> int:
        a = cls.first() + Counted.second()
        gate()
        return a
"""

CALL = """
import os, durable, flow
for wf in (flow.static, flow.classmethod_, flow.instance, flow.described, flow.Counted.counted):
    try:
        print(wf.name, "value", wf.with_options(on_change=os.environ["ON_CHANGE"])())
    except (durable.DurableError, RuntimeError) as error:
        print(wf.name, type(error).__name__, str(error).splitlines()[:3])
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str, list[str]]:
    """The runs fail (FAIL), then are resumed in a new process, then run
    under "rerun" in a third: what each printed, and the executions."""
    folder = tmp_path_factory.mktemp("eighteenth")
    (folder / "flow.py").write_text(FLOW)
    env = {"COUNT_FILE": str(folder / "count"), "DURABLE_STORE": str(folder / "store")}
    first, resumed, rerun = run_each([
        (folder, CALL, {**env, "FAIL": "1", "ON_CHANGE": "refuse"}),
        (folder, CALL, {**env, "ON_CHANGE": "refuse"}),
        (folder, CALL, {**env, "ON_CHANGE": "rerun"}),
    ])  # fmt: skip
    return first, resumed, rerun, (folder / "count").read_text().split()


def test_dbos_class_attribute_a_step_sets_is_not_lost_on_recovery(runs: tuple[str, str, str, list[str]]) -> None:
    """Each run fails after its setter set the class's `mode`; a new
    process resumes it. Refused (the setter's replay cannot redo the
    write), then run again under "rerun": the setter executes again and
    its reader returns "fast" (the class and instance methods' readers
    through `cls.mode` and `self.mode`; `use_desc` through a class method
    of no step, `Desc.describe()`). Seen failing: the class method's and the instance's
    resumes returned "slow" (before any change of this round: the write
    through `cls` or `type(self)` was not seen, and a reader through `self`
    named no class), and the static method's too once its class's own
    counters stopped counting by their value (this round's first fix);
    `described` returned "slow" once a class counted as read only where a
    written attribute is (this round's third fix), until a plain method
    named through it counted as a read too."""
    first, refused, rerun, counted = runs
    names = ["static", "classmethod_", "instance", "described"]
    assert first.split("\n")[:4] == [f"{n} RuntimeError ['crash']" for n in names], first
    for name, setter in zip(names, ["Cfg", "Klass", "Inst", "Desc"], strict=True):
        assert f"{name} DefinitionChangedError" in refused and f"{setter}.set_fast" in refused, refused
    assert rerun.split("\n")[:4] == [
        "static value fast",
        "classmethod_ value fast",
        "instance value fast",
        "described value fast",
    ], rerun
    setters = [n for n in counted if n not in ("first", "second")]
    assert setters == [
        *["static", "classmethod", "instance", "described"],
        *["static", "use", "classmethod", "use", "instance", "use", "described", "use"],
    ]


def test_dbos_class_counters_no_step_reads_do_not_refuse_the_recovery(runs: tuple[str, str, str, list[str]]) -> None:
    """test_classdecorators.py's recovery of a class's workflow whose steps
    count their executions in the class (`Counted.runs += 1`, `cls.runs +=
    1`), which no step reads: the workflow, a method of the class, only
    calls them. Resumed in a new process it replays both and finishes,
    each executed once. Seen failing: refused, "Counted, which
    Counted.first writes and another step reads, is not as Counted.first
    left it" (the workflow named the class to call its methods)."""
    first, resumed, again, counted = runs
    assert "Counted.counted RuntimeError ['crash']" in first, first
    assert "Counted.counted value 11" in resumed, resumed
    assert "Counted.counted value 11" in again, again
    assert [n for n in counted if n in ("first", "second")] == ["first", "second"]
