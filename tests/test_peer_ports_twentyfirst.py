"""A twenty-first round of the peers' own test cases, as their users write
them in a script: DBOS's tests/test_classdecorators.py (`test_simple_workflow_inst`,
an instance made per configuration, `inst = DBOSTestClass(cfg)`, whose workflow
is called twice and its step's executions counted) and joblib's
joblib/test/test_memory.py (`test_memory_integration`, a cached function per
configuration, made in a loop, its `accumulator` emptied first). Here the loop
is the script's own, at module level: `for cfg in CONFIGS:` binds the
instance (or the configuration a step made in the loop takes as a default),
empties the log the step appends to (or sets its counter to 0), calls twice
and prints the log's length.
The log is state the step only writes: the loop reading it beside the
statement that binds what the step reads makes it no input, so the second
call answers from its record (the cached call is a hit). A copy of the log
the step reads (`SNAP = list(LOG)` in the loop) still counts. And a method
that is no step, which a step calls or which is made a step by wrapping the
bound method (joblib's `memory.cache(obj.method)`), appending to the log:
the class's code reads the log nowhere, so the object given to a step
(its `self`) is the same object after the call, a cached call is a hit and
the completed run answers from its record. Earlier rounds
are in tests/test_peer_ports*.py. In-process (the script is run by `runpy`);
executions are counted by the step bodies."""

from __future__ import annotations

import runpy
import textwrap
import warnings
from pathlib import Path

import pytest

HEAD = """\
import durable

LOG = []
"""

# DBOS's test_simple_workflow_inst: an instance per configuration, made by the loop.
INSTANCES = """
class Svc:
    def __init__(self, cfg):
        self.k = cfg["k"]


@durable.step
def compute(x):
    LOG.append(x)
    return x * SVC.k


@durable.workflow
def pipeline(x):
    return compute(x)


for cfg in [{"k": 2}, {"k": 3}]:
    SVC = Svc(cfg)
    LOG.clear()
    flow = pipeline.with_options(run_id=f"svc-{cfg['k']}")
    first = flow(5)
    assert len(LOG) == 1, LOG
    second = flow(5)  # the completed run answers from its record
    print(first, second, len(LOG))
"""

# The same counted as DBOS's tests count, in a dict the loop sets to 0 first.
COUNTERS = """
COUNTS = {"compute": 0}


class Svc:
    def __init__(self, cfg):
        self.k = cfg["k"]


@durable.step
def compute(x):
    COUNTS["compute"] += 1
    return x * SVC.k


@durable.workflow
def pipeline(x):
    return compute(x)


for cfg in [{"k": 2}, {"k": 3}]:
    SVC = Svc(cfg)
    COUNTS["compute"] = 0
    flow = pipeline.with_options(run_id=f"svc-{cfg['k']}")
    first = flow(5)
    assert COUNTS["compute"] == 1, COUNTS
    print(first, flow(5), COUNTS["compute"])
"""

# joblib's test_memory_integration as written: `len_accumulator = len(accumulator)`, then a check.
ACCUMULATOR = """
class Svc:
    def __init__(self, cfg):
        self.k = cfg["k"]


@durable.step
def compute(x):
    LOG.append(x)
    return x * SVC.k


@durable.workflow
def pipeline(x):
    return compute(x)


for cfg in [{"k": 2}, {"k": 3}]:
    SVC = Svc(cfg)
    LOG.clear()
    flow = pipeline.with_options(run_id=f"svc-{cfg['k']}")
    for i in range(2):
        before = len(LOG)
        out = flow(5)
        assert len(LOG) == before + (i == 0), (i, LOG)
    print(out, out, len(LOG))
"""

# joblib's test_memory_integration: a cached function per configuration, made in the loop.
MADE_IN_LOOP = """
for cfg in [{"k": 2}, {"k": 3}]:

    @durable.step(name=f"scale_{cfg['k']}")
    def scale(x, cfg=cfg):
        LOG.append(x)
        return x * cfg["k"]

    @durable.workflow(name=f"pipeline_{cfg['k']}")
    def pipeline(x):
        return scale(x)

    LOG.clear()
    first = pipeline(5)
    second = pipeline(5)
    print(first, second, len(LOG))
"""

# The same with `cache=True`: the second call is a hit.
CACHED = """
class Svc:
    def __init__(self, cfg):
        self.k = cfg["k"]


@durable.step(cache=True)
def compute(x):
    LOG.append(x)
    return x * SVC.k


for cfg in [{"k": 2}, {"k": 3}]:
    SVC = Svc(cfg)
    LOG.clear()
    first = compute(5)
    second = compute(5)  # a hit
    print(first, second, len(LOG))
"""

# A copy of the log the step reads: what the log holds is its input.
SNAPSHOT = """
@durable.step(cache=True)
def report(x):
    LOG.append(x)
    return [x, len(SNAP)]


for i in range(3):
    LOG.append(i)
    SNAP = list(LOG)
    print(report(1)[1], len(LOG))
"""


# What the loop binds made of the log: the log is an input through it.
MADE_OF_LOG = """
class Svc:
    def __init__(self, k):
        self.k = k


@durable.step(cache=True)
def compute(x):
    LOG.append(x)
    return x * SVC.k


for i in range(3):
    before = len(LOG)
    SVC = Svc(before)
    print(compute(5), len(LOG))
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], body: str) -> list[str]:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    script = tmp_path / "flow.py"
    script.write_text(HEAD + textwrap.dedent(body))
    runpy.run_path(str(script), run_name="__main__")
    return capsys.readouterr().out.strip().splitlines()


@pytest.mark.parametrize("case", ["instances", "counters", "accumulator", "made_in_loop", "cached"])
def test_dbos_and_joblib_per_configuration_loop_resets_the_log_between_calls(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = {"instances": INSTANCES, "counters": COUNTERS, "accumulator": ACCUMULATOR}
    body = {**cases, "made_in_loop": MADE_IN_LOOP, "cached": CACHED}[case]
    # Each configuration's step ran once; the second call of each was answered.
    assert _run(tmp_path, monkeypatch, capsys, body) == ["10 10 1", "15 15 1"]


def test_a_copy_of_the_log_the_loop_makes_still_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each pass computes from the copy it made: never the first pass's output.
    assert _run(tmp_path, monkeypatch, capsys, SNAPSHOT) == ["1 2", "3 4", "5 6"]


# DBOS's test_simple_workflow_inst: the step method logs through a helper method.
HELPER_METHOD = """
class Svc:
    def __init__(self, k):
        self.k = k

    def log(self, what):
        LOG.append(what)

    @durable.step
    def compute(self, x):
        self.log(x)
        return x * self.k


SVC = Svc(2)


@durable.workflow
def pipeline(x):
    return SVC.compute(x)


print(pipeline(5), pipeline(5), len(LOG))
"""

# joblib's `memory.cache(obj.method)`, as a cached step and as a step of a run.
BOUND_METHOD = """
class Model:
    def __init__(self, k):
        self.k = k

    def predict(self, x):
        LOG.append(x)
        return x * self.k


MODEL = Model(2)
predict = durable.step(cache=True)(MODEL.predict)
print(predict(5), predict(5), len(LOG))
MODEL.k = 3
print(predict(5), predict(5), len(LOG))  # another state of the instance: computed once
step = durable.step(Model(4).predict)


@durable.workflow
def pipeline(x):
    return step(x)


print(pipeline(5), pipeline(5), len(LOG))
"""


def test_dbos_step_method_logging_through_a_helper_method(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path, monkeypatch, capsys, HELPER_METHOD) == ["10 10 1"]


def test_joblib_cache_of_a_bound_method_that_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not "changed an object it was given"
        out = _run(tmp_path, monkeypatch, capsys, BOUND_METHOD)
    assert out == ["10 10 1", "15 15 2", "20 20 3"]


def test_a_global_the_loop_makes_of_the_log_still_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each pass's `Svc(len(LOG))` is another input: computed each time, never 0 again.
    assert _run(tmp_path, monkeypatch, capsys, MADE_OF_LOG) == ["0 1", "5 2", "10 3"]
