"""A fourteenth round of the peers' own test cases: joblib's Memory
(joblib/test/test_memory.py `test_memory_integration`) and Prefect's
INPUTS + TASK_SOURCE cache policy, the cached function reading state made at
import from the environment that the thirteenth round left stale: the
instance a singleton metaclass keeps (`Cfg()` giving the one made by a
module-level `Cfg(K)`, in a dict on the metaclass, named through the
metaclass or through `cls`, or made by a function the module calls), and a
`struct.Struct` whose format is the state; and DBOS's test_recovery_workflow
(tests/test_dbos.py) with a singleton the steps make themselves, which must
not make the completed run look changed. Earlier rounds are in
tests/test_peer_ports*.py. Executions are counted by the step bodies
themselves, in a file (real processes: what counts is the script's own
module-level statements)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_in
from tests.test_peer_ports_thirteenth import COUNTED_STEPS

METAS = """
import os, struct
import durable

class Single(type):
    _made = {}

    def __call__(cls, *args):
        if cls not in Single._made:
            Single._made[cls] = super().__call__(*args)
        return Single._made[cls]

class Singleton(type):
    _instances = {}

    def __call__(cls, *args, **kwargs):
        if cls not in cls._instances:
            cls._instances[cls] = super().__call__(*args, **kwargs)
        return cls._instances[cls]

class Cfg(metaclass=Single):
    def __init__(self, k=0):
        self.k = k

class Settings(metaclass=Singleton):
    def __init__(self, k=0):
        self.k = k

class Later(metaclass=Singleton):
    def __init__(self, k=0):
        self.k = k

def configure():
    Later(k=int(os.environ["K"]))

Cfg(int(os.environ["K"]))
Settings(int(os.environ["K"]))
configure()
FMT = struct.Struct("<" + "h" * int(os.environ["K"]))
""" + COUNTED_STEPS + """
STEPS = [
    step("single", lambda: Cfg().k),
    step("singleton", lambda: Settings().k),
    step("configured", lambda: Later().k),
    step("struct", lambda: FMT.size // 2),
]
print(*[s(1) for s in STEPS])
"""

KINDS = ["single", "singleton", "configured", "struct"]


@pytest.mark.slow
def test_joblib_memory_with_singletons_a_metaclass_keeps_and_a_struct_from_the_environment(
    tmp_path: Path,
) -> None:
    """K=2, then K=3 computes each again, then K=2 is served from the
    cache: each computed twice. Seen failing: K=3 printed K=2's `2 2 2 2`
    (a module-level call of a class is no statement of the metaclass
    keeping its instance; a `struct.Struct` will not pickle, so it counted
    by its statement's text)."""
    (tmp_path / "flow.py").write_text(METAS)
    for k in "232":
        assert run_in(tmp_path, "flow.py", K=k).split() == [k] * len(KINDS)
    counts = (tmp_path / "count").read_text().split()
    assert {n: counts.count(n) for n in KINDS} == dict.fromkeys(KINDS, 2)


LAZY = """
import os
import durable

class Singleton(type):
    _instances = {}

    def __call__(cls, *args, **kwargs):
        if cls not in cls._instances:
            cls._instances[cls] = super().__call__(*args, **kwargs)
        return cls._instances[cls]

class Client(metaclass=Singleton):
    def __init__(self, k=3):
        self.k = k

class Made(metaclass=Singleton):
    def __init__(self, k=0):
        self.k = k

Made(4)

@durable.step
def call(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("call\\n")
    return Client().k * x + Made().k

@durable.workflow(run_id="r1")
def wf(x):
    return call(x) + call(x + 1)

print(wf(1), wf(1))
"""


@pytest.mark.slow
def test_dbos_recovery_of_steps_making_a_singleton_themselves(tmp_path: Path) -> None:
    """The steps make the singleton (`Client()` on first use) in the dict
    that also keeps one made at import: state the steps keep, so the
    completed run is answered again in its process and in a new one, each
    step executed once."""
    (tmp_path / "flow.py").write_text(LAZY)
    assert [run_in(tmp_path, "flow.py").strip() for _ in range(2)] == ["17 17", "17 17"]
    assert (tmp_path / "count").read_text().split() == ["call", "call"]


METHODS = """
import collections
import durable

COUNTS = collections.Counter()

class Worker:
    def __init__(self, k):
        self.k = k

    @durable.step(cache=True)
    def scale(self, x):
        COUNTS["scale"] += 1
        return self.k * x

    @classmethod
    @durable.step(cache=True)
    def twice(cls, x):
        COUNTS["twice"] += 1
        return 2 * x

@durable.workflow(run_id="r1")
def wf(x):
    return Worker(2).scale(x) + Worker(3).scale(x) + Worker.twice(x)

one, two = Worker(2), Worker(3)
cached = [one.scale(10), two.scale(10), one.scale(10), Worker.twice(10), Worker.twice(10)]
print(cached, wf(1), wf(1), COUNTS["scale"], COUNTS["twice"])
"""


@pytest.mark.slow
def test_dbos_class_decorators_with_steps_counting_in_a_module_level_counter(tmp_path: Path) -> None:
    """DBOS's tests/test_classdecorators.py: steps as methods of instances
    with different state and as a class method, bumping a module-level
    Counter (as the peer's tests count). Each instance's own value, each
    call computed once, the completed run answered again; in a new process
    everything comes from the cache and the run. Seen failing: every call
    computed (with a warning that the step changed `self`) and the second
    `wf(1)` refused as changed: the Counter counted by its contents through
    the class statement, whose methods change it, as `one = Worker(2)`
    made the class at module level."""
    (tmp_path / "flow.py").write_text(METHODS)
    assert run_in(tmp_path, "flow.py").strip() == "[20, 30, 20, 20, 20] 7 7 4 2"
    assert run_in(tmp_path, "flow.py").strip() == "[20, 30, 20, 20, 20] 7 7 0 0"
