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
