"""Module or class state a step writes and a later step reads, seen through
other names than the state's own: a class read through a module-level
alias (`C = Cfg`) or a plain helper the reader calls (`def mode(): return
Cfg.mode`, `def rate(): return RATE["v"]`); a write in a plain helper the writer
calls (`def set_mode(m): Cfg.mode = m`, or `global MODE`) or in a class
method of no step (`Cfg.configure("fast")` setting `cls.mode`); a write by `setattr(Cfg, ...)`,
`setattr(settings, ...)`, `setattr(sys.modules[__name__], ...)`,
`globals()["MODE"] = ...`, `vars(settings)["MODE"] = ...`; a read by
`globals()["MODE"]`; a write into the
dict a helper returns (`registry()["mode"] = ...`, `registry().update(...)`).
Each run fails after the writer step; a new process resumes it: a replay of
the writer cannot redo its write, so the resume is refused, and run again
under "rerun" the writer executes again and the reader returns what the
uninterrupted run does. Seen failing before the fix: every resume returned
the value the import left ("slow", 1). Real processes (`run_each`: one
interpreter forks each phase); executions counted in a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow

COMMON = """
import os


def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")


def gate():
    if os.environ.get("FAIL"):
        raise RuntimeError("crash")
"""

# name -> (module-level head, the writer's write, the reader's expression, the true answer)
CASES = {
    "alias_read": (
        'class Cfg:\n    mode = "slow"\n\n\nC = Cfg',
        'Cfg.mode = "fast"',
        "C.mode",
        "fast",
    ),
    "alias_write": (
        'class Cfg:\n    mode = "slow"\n\n\nC = Cfg',
        'C.mode = "fast"',
        "Cfg.mode",
        "fast",
    ),
    "helper_class": (
        'class Cfg:\n    mode = "slow"\n\n\ndef mode():\n    return Cfg.mode',
        'Cfg.mode = "fast"',
        "mode()",
        "fast",
    ),
    "helper_global": (
        'RATE = {"v": 1}\n\n\ndef rate():\n    return RATE["v"]',
        'RATE["v"] = 2',
        "rate()",
        "2",
    ),
    "helper_writes_class": (
        'class Cfg:\n    mode = "slow"\n\n\ndef set_mode(m):\n    Cfg.mode = m',
        'set_mode("fast")',
        "Cfg.mode",
        "fast",
    ),
    "helper_writes_global": (
        'MODE = "slow"\n\n\ndef set_mode(m):\n    global MODE\n    MODE = m',
        'set_mode("fast")',
        "MODE",
        "fast",
    ),
    "method_writes_class": (
        'class Cfg:\n    mode = "slow"\n\n    @classmethod\n    def configure(cls, m):\n        cls.mode = m',
        'Cfg.configure("fast")',
        "Cfg.mode",
        "fast",
    ),
    "setattr_class": (
        'class Cfg:\n    mode = "slow"',
        'setattr(Cfg, "mode", "fast")',
        "Cfg.mode",
        "fast",
    ),
    "setattr_module": (
        "import settings",
        'setattr(settings, "MODE", "fast")',
        "settings.MODE",
        "fast",
    ),
    "setattr_own_module": (
        'import sys\nMODE = "slow"',
        'setattr(sys.modules[__name__], "MODE", "fast")',
        "MODE",
        "fast",
    ),
    "globals_item": ('MODE = "slow"', 'globals()["MODE"] = "fast"', "MODE", "fast"),
    "globals_read": ('MODE = "slow"', 'global MODE; MODE = "fast"', 'globals()["MODE"]', "fast"),
    "vars_of_module": (
        "import settings",
        'vars(settings)["MODE"] = "fast"',
        "settings.MODE",
        "fast",
    ),
    "registry_item": (
        'REG = {"mode": "slow"}\n\n\ndef registry():\n    return REG',
        'registry()["mode"] = "fast"',
        'REG["mode"]',
        "fast",
    ),
    "registry_update": (
        'REG = {"mode": "slow"}\n\n\ndef registry():\n    return REG',
        'registry().update(mode="fast")',
        'registry()["mode"]',
        "fast",
    ),
}

FLOW = """
import durable
from common import count, gate
{head}


@durable.step
def setter() -> str:
    count("setter")
    {write}
    return "set"


@durable.step
def check() -> int:
    gate()
    return 0


@durable.step
def use() -> str:
    count("use")
    return str({read})


@durable.workflow(run_id="{name}")
def wf() -> str:
    setter()
    check()
    return use()
"""

CALL = """
import importlib, os, durable
for name in os.environ["CASES"].split():
    wf = importlib.import_module(name).wf
    try:
        print(name, "value", wf.with_options(on_change=os.environ["ON_CHANGE"])())
    except (durable.DurableError, RuntimeError) as error:
        print(name, type(error).__name__)
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[str], list[str], Path]:
    """Each case in a folder of its own (its modules alone loaded): the run
    fails after the setter; resumed in a new process; then under "rerun"."""
    jobs: list[list[tuple[Path, str, dict[str, str]]]] = [[], [], []]
    root = tmp_path_factory.mktemp("stale50")
    for name, (head, write, read, _) in CASES.items():
        folder = root / name
        folder.mkdir()
        (folder / "common.py").write_text(COMMON)
        (folder / "settings.py").write_text('MODE = "slow"\n')
        (folder / f"{name}.py").write_text(
            FLOW.format(head=head, write=write, read=read, name=name)
        )
        env = {
            "CASES": name,
            "COUNT_FILE": str(folder / "count"),
            "DURABLE_STORE": str(folder / "store"),
        }
        for phase, extra in enumerate(
            ({"FAIL": "1", "ON_CHANGE": "refuse"}, {"ON_CHANGE": "refuse"}, {"ON_CHANGE": "rerun"})
        ):
            jobs[phase].append((folder, CALL, {**env, **extra}))
    first, resumed, rerun = (run_each(j) for j in jobs)
    return first, resumed, rerun, root


@pytest.mark.parametrize("name", list(CASES))
def test_state_written_through_other_names_is_not_replayed_stale(
    runs: tuple[list[str], list[str], list[str], Path], name: str
) -> None:
    first, resumed, rerun, root = runs
    i = list(CASES).index(name)
    assert first[i].strip() == f"{name} RuntimeError", first[i]
    assert resumed[i].strip() == f"{name} DefinitionChangedError", resumed[i]
    assert rerun[i].strip() == f"{name} value {CASES[name][3]}", rerun[i]
    # The setter once in the failed run, again in the run under "rerun"; the reader once, there.
    assert (root / name / "count").read_text().split() == ["setter", "setter", "use"]
