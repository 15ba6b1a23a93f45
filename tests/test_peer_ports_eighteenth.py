"""An eighteenth round of the peers' own test cases: DBOS's
tests/test_singleexec.py `test_simple_workflow` and
tests/test_classdecorators.py, whose static-method steps and workflows count
their executions in attributes of their class (`TryConcExec.conc_exec +=
1`, `TryConcExec.max_conc = max(...)`), one workflow id called from two
threads at once and then again. Each counter is state the function keeps,
as a module global it rebinds with `global` is: a completed run called
again in the same process must answer from its record, not look changed
because its own counters moved. Earlier rounds are in
tests/test_peer_ports*.py. In-process; executions are counted by the step
bodies."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

import pytest

import durable
from durable.testing import FakeClock

STARTED = threading.Event()
GO = threading.Event()


class TryConcExec:
    conc_exec = 0
    max_conc = 0
    conc_wf = 0
    max_wf = 0
    runs = 0

    @durable.step
    @staticmethod
    def testConcStep() -> int:
        TryConcExec.runs += 1
        TryConcExec.conc_exec += 1
        TryConcExec.max_conc = max(TryConcExec.conc_exec, TryConcExec.max_conc)
        STARTED.set()
        GO.wait(30)  # the second caller of this run id is started meanwhile
        TryConcExec.conc_exec -= 1
        return 7

    @durable.workflow
    @staticmethod
    def testConcWorkflow() -> int:
        TryConcExec.conc_wf += 1
        TryConcExec.max_wf = max(TryConcExec.conc_wf, TryConcExec.max_wf)
        out = TryConcExec.testConcStep()
        TryConcExec.conc_wf -= 1
        return out


@pytest.fixture(autouse=True)
def cleared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    for name in ("conc_exec", "max_conc", "conc_wf", "max_wf", "runs"):
        monkeypatch.setattr(TryConcExec, name, 0)
    STARTED.clear()
    GO.clear()


def test_dbos_singleexec_one_workflow_id_from_two_threads_runs_its_step_once() -> None:
    """test_singleexec.py `test_simple_workflow`, its direct-exec part: two
    threads call one workflow id (the second waits for the lease, DBOS's
    second caller waits for the first's result), then it is called again.
    Both threads get 7, the step ran once, never two at a time, and the
    third call answers from the record. Seen failing: the second thread
    and the third call raised DefinitionChangedError "constant
    TryConcExec.max_conc changed" (the counters the step and the body bump
    counted by their value now)."""
    flow = TryConcExec.testConcWorkflow.with_options(run_id="conc-1", wait=30)
    out: list[object] = []

    def call() -> None:
        try:
            out.append(flow())
        except durable.DurableError as error:  # pragma: no cover - the failure shown
            out.append(error)

    first = threading.Thread(target=call)
    first.start()
    assert STARTED.wait(30)
    second = threading.Thread(target=call)
    second.start()
    GO.set()
    first.join()
    second.join()
    assert out == [7, 7]
    assert flow() == 7
    assert (TryConcExec.runs, TryConcExec.max_conc, TryConcExec.max_wf) == (1, 1, 1)
    run = flow.run()
    assert (run.steps_executed, run.value) == (0, 7)


class DBOSTestClassStatic:
    wf_counter = 0
    step_counter = 0

    @durable.workflow
    @staticmethod
    def test_workflow(var: str, var2: str) -> str:
        DBOSTestClassStatic.wf_counter += 1
        res = DBOSTestClassStatic.test_step(var2) + "1"
        return res + DBOSTestClassStatic.test_step(var)

    @durable.step
    @staticmethod
    def test_step(var: str) -> str:
        DBOSTestClassStatic.step_counter += 1
        return var


class DBOSTestClassClass:
    wf_counter = 0
    step_counter = 0

    @classmethod
    @durable.workflow
    def test_workflow(cls, var: str, var2: str) -> str:
        DBOSTestClassClass.wf_counter += 1
        return DBOSTestClassClass.test_step(var2) + "1" + DBOSTestClassClass.test_step(var)

    @classmethod
    @durable.step
    def test_step(cls, var: str) -> str:
        DBOSTestClassClass.step_counter += 1
        return var


@pytest.mark.parametrize("owner", [DBOSTestClassStatic, DBOSTestClassClass], ids=["static", "classmethod"])
def test_dbos_class_workflow_counting_in_its_class_is_answered_again(
    owner: type[DBOSTestClassStatic] | type[DBOSTestClassClass], monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_classdecorators.py `test_simple_workflow_static` and
    `test_simple_workflow_class`: the workflow and its step count their
    executions in class attributes. DBOS starts a new workflow at each call
    (counters at 2); durable's second call with the same arguments is the
    same run, answered from its record: each counter at 1. Other arguments
    are another run. Seen failing (both): the second call raised
    DefinitionChangedError, the counters the body and the step bump
    counted by their value now."""
    monkeypatch.setattr(owner, "wf_counter", 0)
    monkeypatch.setattr(owner, "step_counter", 0)
    assert owner.test_workflow("bob", "bob") == "bob1bob"
    if owner is DBOSTestClassClass:  # from 3.13 on, `classmethod` passes no binding on (docs/identity.md)
        run = owner.test_workflow.__func__.run(owner, "bob", "bob")
    else:
        run = owner.test_workflow.run("bob", "bob")
    assert (run.value, run.steps_executed) == ("bob1bob", 0)
    assert (owner.wf_counter, owner.step_counter) == (1, 2)
    assert owner.test_workflow("amy", "bob") == "bob1amy"
    assert (owner.wf_counter, owner.step_counter) == (2, 4)


class Registry:
    seen: ClassVar[dict[str, int]] = {}
    level = 0

    @durable.step
    @classmethod
    def register(cls, key: str) -> str:
        cls.seen[key] = 1
        return key

    @durable.step
    def raise_level(self) -> int:
        self.__class__.level = 3
        return 3

    @durable.step
    def known(self) -> str:
        return ",".join(sorted(self.seen)) + str(self.level)


def test_method_steps_writing_their_class_are_told_apart_from_counters() -> None:
    """What `stepstate` finds of the forms the processes test does not
    spell (tests/test_peer_ports_eighteenth_procs.py): `cls.seen[key] = 1`
    and `self.__class__.level = 3` write the class, which `known` reads
    through `self`, so their replay in a new process is refused. A class
    made in a function is no module-level value a replay leaves behind."""
    from durable._fingerprint.reach import target_of
    from durable._fingerprint.stepstate import state_written

    assert state_written(target_of(Registry.register)) == ("Registry",)
    assert state_written(target_of(Registry.raise_level)) == ("Registry",)

    class Alone:
        level = 0

        @durable.step
        def raise_level(self) -> int:
            type(self).level = 3
            return 3

    assert state_written(target_of(Alone.raise_level)) == ()  # a class in a function: no global


class Flaky:
    attempts = 0

    @durable.step(retries=3, retry_delay=1.0, backoff=2.0)
    @staticmethod
    def call_api(x: int) -> int:
        Flaky.attempts += 1
        if Flaky.attempts < 3:
            raise ConnectionError("flaky")
        return x * 2

    @durable.workflow
    @staticmethod
    def job(x: int) -> int:
        return Flaky.call_api(x) + 1


def test_dbos_step_retries_counted_in_its_class_then_answered_again(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_failures.py `test_step_retries` with its attempt counter on the
    step's class (`Flaky.attempts += 1`, failing while it is below 3):
    three attempts, two waits of 1 and 2 seconds (the backoff), the run
    completes; called again, it is answered from its record, the counter
    (the step's own state, which decided the retries) left at 3. Seen
    failing: the second call raised DefinitionChangedError "constant
    Flaky.attempts changed"."""
    monkeypatch.setattr(Flaky, "attempts", 0)
    assert Flaky.job(4) == 9
    assert (Flaky.attempts, clock.slept) == (3, [1.0, 2.0])
    run = Flaky.job.run(4)
    assert (run.value, run.steps_executed, run.steps_replayed) == (9, 0, 0)
    assert Flaky.attempts == 3
    (step,) = [s for s in Flaky.job.history(run.run_id) if s.position == 0]
    assert [f.message for f in step.failures] == ["flaky", "flaky"]
