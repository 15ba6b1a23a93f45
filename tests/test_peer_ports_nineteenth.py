"""A nineteenth round of the peers' own test cases: DBOS's
tests/test_classdecorators.py (`test_simple_workflow_static`,
`test_simple_workflow_inst`, `test_inst_recovery`) with the steps methods of
a configured instance (`SVC = Svc(Cfg(2))`, the step reading `self.cfg`) or
static methods called through the class, counting their executions in a
module-level dict whose counters the module sets to 0 before anything runs
(`CALLS.update(compute=0, ...)`, as DBOS's tests start their counters). The
steps only write that dict: it is no input of theirs, so a run that crashed
after them resumes in the same process replaying them, though the dict
holds other counts than when the run started. Earlier rounds are in
tests/test_peer_ports*.py. In-process; executions are counted by the step
bodies."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import durable

CALLS: dict[str, int] = {}
CALLS.update(compute=0, static=0, gate=0)


class Cfg:
    def __init__(self, mult: int) -> None:
        self.mult = mult


class Svc:
    def __init__(self, cfg: Cfg) -> None:
        self.cfg = cfg

    @durable.step
    def compute(self, x: int) -> int:
        CALLS["compute"] += 1
        return x * self.cfg.mult

    @durable.step
    @staticmethod
    def bump(x: int) -> int:
        CALLS["static"] += 1
        return x + 1

    @durable.workflow
    def run(self, x: int, fail: bool = False) -> int:
        out = self.compute(x)
        gate(fail)
        return out


@durable.step
def gate(fail: bool) -> int:
    CALLS["gate"] += 1
    if fail:
        raise RuntimeError("crash")
    return 0


SVC = Svc(Cfg(2))


@durable.workflow(run_id="nineteenth-global")
def through_global(x: int, fail: bool = False) -> int:
    out = SVC.compute(x)
    gate(fail)
    return out


@durable.workflow(run_id="nineteenth-static")
def through_class(x: int, fail: bool = False) -> int:
    out = Svc.bump(x)
    gate(fail)
    return out


class Counted:
    runs = 0

    def __init__(self, mult: int) -> None:
        self.mult = mult

    @durable.step
    def compute(self, x: int) -> int:
        Counted.runs += 1
        return x * self.mult


Counted.runs = 0
COUNTED = Counted(2)


@durable.workflow(run_id="nineteenth-counted")
def through_counted(x: int, fail: bool = False) -> int:
    out = COUNTED.compute(x)
    gate(fail)
    return out


@pytest.fixture(autouse=True)
def cleared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    CALLS.update(compute=0, static=0, gate=0)
    monkeypatch.setattr(Counted, "runs", 0)


CASES = {
    "global_instance": (lambda fail: through_global(3, fail), "compute", 6),
    "static_method": (lambda fail: through_class(3, fail), "static", 4),
    "instance_workflow": (lambda fail: SVC.run.with_options(run_id="nineteenth-inst")(3, fail), "compute", 6),
    "class_counter": (lambda fail: through_counted(3, fail), "", 6),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dbos_counters_started_by_the_module_do_not_refuse_the_recovery(case: str) -> None:
    call, counter, value = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "changed an object it was given": the step changed no argument
        with pytest.raises(RuntimeError, match="crash"):
            call(True)
        assert call(False) == value
        assert call(False) == value  # the completed run answers from its record
    assert (CALLS[counter] if counter else Counted.runs) == 1
    assert CALLS["gate"] == 2


OTHER = Svc(Cfg(2))


@durable.workflow(run_id="nineteenth-other")
def through_other(x: int, fail: bool = False) -> int:
    out = OTHER.compute(x)
    gate(fail)
    return out


def reconfigure(mult: int) -> None:
    OTHER.cfg.mult = mult


def test_dbos_configured_instance_changed_between_crash_and_recovery_is_refused() -> None:
    """What the step computes from still counts: `self.cfg.mult` changed
    after the crash is a changed call, never answered with the old 6."""
    with pytest.raises(RuntimeError, match="crash"):
        through_other(3, True)
    reconfigure(5)
    with pytest.raises(durable.DefinitionChangedError, match="arguments changed"):
        through_other(3)
    assert through_other.with_options(on_change="rerun")(3) == 15
    assert CALLS["compute"] == 2
