"""The thirteenth round of the peers' own test cases (see
tests/test_peer_ports_thirteenth.py), Temporal's determinism checks on
replay (tests/worker/test_workflow.py `test_workflow_nondeterministic_*`,
tests/worker/test_replayer.py `test_replayer_workflow_nondeterministic`):
a workflow whose order of steps comes from iterating a set of strings,
which another process (another `PYTHONHASHSEED`) walks in another order.
Resumed there, it must be refused at the first position whose call
differs, never serve one name's recorded value to another, and run no
step twice. And DBOS's test_recovery_workflow with steps that fill a cache
on a class whose `__init_subclass__` fills a registry: state the steps
keep, which must not make the completed run look changed (the singleton
a metaclass keeps, which this round left stale, is in
tests/test_peer_ports_fourteenth.py). Real processes; executions are
counted by the step bodies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts import run_in

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

NAMES = '{"alpha", "beta", "gamma", "delta"}'

BY_SET = f"""
import os
import durable

@durable.step
def fetch(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
    return name.upper()

@durable.workflow(run_id="r1")
def wf():
    out = []
    for name in {NAMES}:
        out.append((name, fetch(name)))
        if len(out) == 2 and os.environ.get("STOP"):
            durable.suspend("waiting")
    return out

try:
    out = wf()
    assert all(name.upper() == value for name, value in out), out
    print("value", len(out))
except durable.Suspended:
    print("suspended")
"""


def _order(seed: int) -> list[str]:
    """The order a process of this Python with that hash seed walks the set in."""
    done = subprocess.run(
        [sys.executable, "-c", f"print(*{NAMES})"],
        env={"PYTHONHASHSEED": str(seed)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


@pytest.mark.slow
def test_temporal_a_set_walked_in_another_order_on_replay_is_refused(tmp_path: Path) -> None:
    """Two steps recorded under one hash seed; resumed under a seed whose
    order starts otherwise, the run is refused (DefinitionChangedError,
    naming the position's call) and runs nothing; resumed under the first
    seed, it replays both and runs the other two once: each name fetched
    exactly once, each value its own name's."""
    first = _order(0)
    other = next(s for s in range(1, 50) if _order(s)[:2] != first[:2])
    (tmp_path / "flow.py").write_text(BY_SET)
    assert run_in(tmp_path, "flow.py", STOP="1", PYTHONHASHSEED="0").split() == ["suspended"]
    refused = run_in(tmp_path, "flow.py", PYTHONHASHSEED=str(other))
    assert "DefinitionChangedError" in refused and "arguments changed" in refused
    assert (tmp_path / "count").read_text().split() == first[:2]
    assert run_in(tmp_path, "flow.py", PYTHONHASHSEED="0").split() == ["value", "4"]
    assert (tmp_path / "count").read_text().split() == first


KEPT = """
import os
import durable

class Base:
    registry = {}
    seen = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        Base.registry[cls.__name__] = cls

class Sub(Base):
    pass

@durable.step
def remember(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("remember\\n")
    Base.seen[x] = len(Base.seen)
    return len(Base.seen) + len(Base.registry)

@durable.workflow(run_id="r1")
def wf(x):
    return remember(x) + remember(x + 1)

print(wf(1), wf(1))
"""


@pytest.mark.slow
def test_dbos_recovery_of_steps_filling_a_cache_on_a_class_with_a_registry(tmp_path: Path) -> None:
    """A class whose `__init_subclass__` fills its registry also holds a
    cache the steps fill (`Base.seen`): state they keep, counted by the
    class statement, so the completed run is answered again in its
    process and in a new one, each step executed once. Counted by its
    contents as the registry is, the second call was refused as changed."""
    (tmp_path / "flow.py").write_text(KEPT)
    assert [run_in(tmp_path, "flow.py").strip() for _ in range(2)] == ["5 5", "5 5"]
    assert (tmp_path / "count").read_text().split() == ["remember", "remember"]

