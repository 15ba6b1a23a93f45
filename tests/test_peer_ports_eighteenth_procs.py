"""The eighteenth round of the peers' own test cases (see
tests/test_peer_ports_eighteenth.py) that cross a process boundary: DBOS's
tests/test_classdecorators.py recovery of a workflow (`test_class_recovery`
with `DBOS.recover_pending_workflows` after the process died) whose
static-method step sets an attribute of its class (`Cfg.mode = "fast"`)
that a later step reads. A replay of the setter cannot redo the write, so
in a new process the reader would compute from the class as the import
left it. Real processes (a new process is the class as imported);
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
        count("set_fast")
        Cfg.mode = "fast"
        return "set"


@durable.step
def gate() -> int:
    if os.environ.get("FAIL"):
        raise RuntimeError("crash")
    return 0


@durable.step
def use() -> str:
    count("use")
    return Cfg.mode


@durable.workflow(run_id="cfg-1")
def wf() -> str:
    Cfg.set_fast()
    gate()
    return use()
"""

CALL = """
import durable, flow
try:
    print("value", flow.wf.with_options(on_change=__import__("os").environ["ON_CHANGE"])())
except (durable.DurableError, RuntimeError) as error:
    print(type(error).__name__, error)
"""


def test_dbos_class_attribute_a_step_sets_is_not_lost_on_recovery(tmp_path: Path) -> None:
    """The run fails after `set_fast` set `Cfg.mode`; a new process resumes
    it. Refused (the setter's replay cannot redo the write), then run
    again under "rerun": `set_fast` executes again and `use` reads "fast".
    Seen failing once the class's own counters stopped counting by their
    value (this round's fix): the resume returned "slow", `use` computing
    from the class as imported."""
    (tmp_path / "flow.py").write_text(FLOW)
    env = {"COUNT_FILE": str(tmp_path / "count"), "DURABLE_STORE": str(tmp_path / "store")}
    first, refused, rerun = run_each([
        (tmp_path, CALL, {**env, "FAIL": "1", "ON_CHANGE": "refuse"}),
        (tmp_path, CALL, {**env, "ON_CHANGE": "refuse"}),
        (tmp_path, CALL, {**env, "ON_CHANGE": "rerun"}),
    ])  # fmt: skip
    assert first.startswith("RuntimeError crash"), first
    assert refused.startswith("DefinitionChangedError"), refused
    assert "Cfg.set_fast" in refused, refused
    assert rerun.startswith("value fast"), rerun
    assert (tmp_path / "count").read_text().split() == ["set_fast", "set_fast", "use"]
