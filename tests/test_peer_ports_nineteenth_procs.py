"""The nineteenth round of the peers' own test cases (see
tests/test_peer_ports_nineteenth.py) that cross a process boundary: DBOS's
tests/test_classdecorators.py `test_step_recovery`, whose configured
instance keeps a closure over its configuration (`self.multiply = lambda
x: x * multiplier`) that its step calls, recovered after the process died
(a real kill -9), in a script run as `python flow.py` (its classes are
`__main__`'s, as a notebook's are). The same configuration in the new
process replays the step; another configuration is a changed call. And
joblib's tests/test_memory.py idiom of a cached function given a
function (`memory.cache(f)(g, x)`): a step cached across processes given a
lambda that makes an object of the script's own class is a hit in the
next run of the script. Real
processes (one per phase, forked by `run_each`); executions are counted
by the step bodies, in a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow

FLOW = """
import os, signal
import durable


def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")


class Cfg:
    def __init__(self, mult):
        self.mult = mult


class Multiplier:
    def __init__(self, cfg):
        self.multiply = lambda x: x * cfg.mult

    @durable.step
    def step(self, x):
        count("step")
        return self.multiply(x)


@durable.step
def gate():
    count("gate")
    if os.environ.get("CRASH"):
        os.kill(os.getpid(), signal.SIGKILL)
    return 0


INST = Multiplier(Cfg(int(os.environ["MULT"])))


@durable.workflow(run_id="r1")
def wf(x):
    out = INST.step(x)
    gate()
    return out


try:
    print("value", wf(2))
except durable.DefinitionChangedError as e:
    print("refused", e)
"""

CACHED = """
import os
import durable


class Cfg:
    def __init__(self, mult):
        self.mult = mult


@durable.step(cache=True)
def apply(fn, x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("apply\\n")
    return fn(x)


print("value", apply(lambda v: Cfg(v).mult * 2, 3))
"""

# As `python flow.py` runs it: the script is `__main__`.
MAIN = "import runpy; runpy.run_path('flow.py', run_name='__main__')"


def test_dbos_step_recovery_of_a_configured_instance_holding_a_closure(tmp_path: Path) -> None:
    folders = {}
    for name in ("same", "other", "cached"):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / "flow.py").write_text(CACHED if name == "cached" else FLOW)
    crashed, same, crashed_other, other, computed, hit = run_each([
        (folders["same"], MAIN, {"MULT": "5", "CRASH": "1"}),
        (folders["same"], MAIN, {"MULT": "5"}),
        (folders["other"], MAIN, {"MULT": "5", "CRASH": "1"}),
        (folders["other"], MAIN, {"MULT": "7"}),
        (folders["cached"], MAIN, {}),
        (folders["cached"], MAIN, {}),
    ])  # fmt: skip
    assert "value" not in crashed + crashed_other
    # Was `refused ... Multiplier.step: arguments changed`: the closure's
    # pickle held an id cloudpickle draws at random in each process.
    assert "value 6" in computed and "value 6" in hit, computed + hit
    assert (folders["cached"] / "count").read_text().split() == ["apply"]  # was computed twice
    assert "value 10" in same, same
    assert (folders["same"] / "count").read_text().split() == ["step", "gate", "gate"]
    assert "refused" in other and "Multiplier" in other and "value" not in other, other
    assert (folders["other"] / "count").read_text().split() == ["step", "gate"]
