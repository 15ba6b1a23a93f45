"""Values made at import from the environment that a resume in a new
process replayed though the variable changed (value 20 for K=2 where K=3
gives 30), found by review61:

- a settings object of your class whose `__init__` it inherits from a base
  class of yours reading `os.environ` (a hand-rolled pydantic-settings:
  `class App(Settings): k: int = 1`, `S = App()`), the base in the same
  module or another; or made by a class method the base defines
  (`S = App.from_env()`);
- a dataclass whose field's `default_factory` is a function of yours
  reading `os.environ` (`field(default_factory=env_k)`, or a
  `functools.partial` of one), here or imported: the class statement names
  the function without calling it.

Each is now a changed call, executing nothing; the same variable replays.
The cases run together, twice, each time a script in a process of its own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scripts import run_in

pytestmark = pytest.mark.slow  # two processes

BASE = """import os

class Settings:
    def __init__(self):
        for name, typ in type(self).__annotations__.items():
            setattr(self, name, int(os.environ.get(name.upper(), getattr(type(self), name))))

    @classmethod
    def from_env(cls):
        return cls()
"""
APP = "class App(Settings):\n    k: int = 1\n"
ENV_K = """import os

def env_k():
    return int(os.environ.get("K", "1"))

def env_int(name):
    return int(os.environ.get(name, "1"))
"""
FIELD = """import dataclasses, functools

@dataclasses.dataclass
class App:
    k: int = dataclasses.field(default_factory={})

W = App()"""

CASES = {  # name: the head of flow_NAME.py (mysettings.py holds BASE)
    "inherited_init": BASE + APP + "W = App()",
    "inherited_init_imported": "from mysettings import Settings\n" + APP + "W = App()",
    "inherited_classmethod": "from mysettings import Settings\n" + APP + "W = App.from_env()",
    # A dataclass whose field's default factory reads it: named, not called, by the class statement.
    "factory_here": ENV_K + FIELD.format("env_k"),
    "factory_imported": "from envs import env_k\n" + FIELD.format("env_k"),
    "factory_partial": "from envs import env_int\n" + FIELD.format('functools.partial(env_int, "K")'),
}

FLOW = """import os, durable
{head}

@durable.step
def s(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("{name}\\n")
    return x * W.k

@durable.workflow(run_id="r-{name}")
def wf(x):
    out = s(x)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""

# A script of its own as `__main__` (run from `-c`, whose source cannot be
# read, the workflow counted W by its contents for another reason).
RUN = f"""import importlib, durable
for name in {sorted(CASES)!r}:
    try:
        print(name, "value", importlib.import_module("flow_" + name).wf(10))
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused", str(e).splitlines()[1])
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str, list[str]]]:
    """By K edited or the same: what the first and the second run printed,
    and the steps executed."""
    done = {}
    for how, k in (("edited", "3"), ("same", "2")):
        folder = tmp_path_factory.mktemp(how)
        for name, head in CASES.items():
            (folder / f"flow_{name}.py").write_text(FLOW.format(head=head, name=name))
        (folder / "mysettings.py").write_text(BASE)
        (folder / "envs.py").write_text(ENV_K)
        (folder / "run.py").write_text(RUN)
        first = run_in(folder, "run.py", STOP="1", K="2")
        second = run_in(folder, "run.py", K=k)
        done[how] = (first, second, (folder / "count").read_text().split())
    return done


def _said(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(name + " "))


@pytest.mark.parametrize("name", sorted(CASES))
def test_settings_made_by_code_reading_the_environment_count_by_contents(runs: dict[str, Any], name: str) -> None:
    first, second, count = runs["edited"]
    assert _said(first, name) == f"{name} suspended", first
    assert "refused" in _said(second, name) and "W changed" in _said(second, name), second  # was `value 20`
    assert count.count(name) == 1
    first, second, count = runs["same"]
    assert _said(second, name) == f"{name} value 20", second
    assert count.count(name) == 1
