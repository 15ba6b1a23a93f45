"""Fingerprints as the engine uses them: public `.fingerprint`s, and a
`DefinitionChangedError` that names the step and the kind of change."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._fingerprint.fingerprint import fingerprint_function

SOURCE = """
import durable

PROMPT = "a"

def polish(text):
    return text.strip()

@durable.step(retries=1)
def shout(x):
    return polish(PROMPT + x).upper()

@durable.step
def count(x):
    return len(x)

@durable.workflow(run_id="r")
def pipeline(x):
    return count(shout(x))
"""

EDITS = {
    "cosmetic": (SOURCE.replace("return len(x)", "return len(  x  )  # why"), None),
    "code": (SOURCE.replace("len(x)", "len(x) + 1"), r"count: code changed"),
    "constant": (
        SOURCE.replace('PROMPT = "a"', 'PROMPT = "ab"'),
        r"shout: constant PROMPT changed",
    ),
    "helper": (
        SOURCE.replace("text.strip()", "text.lstrip()"),
        r"shout: helper \w+\.polish changed",
    ),
    "version": (
        SOURCE.replace("@durable.step\ndef count", "@durable.step(version='2')\ndef count"),
        r"count: now pinned with version='2'",
    ),
}


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    path = tmp_path / "flow_mod.py"

    def write(source: str) -> types.ModuleType:
        path.write_text(textwrap.dedent(source))
        importlib.invalidate_caches()
        if "flow_mod" in sys.modules:
            return importlib.reload(sys.modules["flow_mod"])
        return importlib.import_module("flow_mod")

    yield write
    sys.modules.pop("flow_mod", None)


def test_public_fingerprints(module: Any) -> None:
    m = module(SOURCE)
    assert m.shout.fingerprint == fingerprint_function(m.shout.__wrapped__).value
    assert re.fullmatch(r"[0-9a-f]{12}", m.pipeline.fingerprint)
    assert m.pipeline.fingerprint not in (m.shout.fingerprint, m.count.fingerprint)


@pytest.mark.parametrize("kind", sorted(EDITS))
def test_edit_after_a_run(module: Any, kind: str) -> None:
    m = module(SOURCE)
    assert m.pipeline("x") == 2
    before = m.pipeline.fingerprint
    edited, expected = EDITS[kind]
    m = module(edited)  # importlib.reload: decorators run again
    if expected is None:
        assert m.pipeline.fingerprint == before
        assert m.pipeline("x") == 2
        return
    assert m.pipeline.fingerprint != before
    with pytest.raises(durable.DefinitionChangedError) as caught:
        m.pipeline("x")
    message = str(caught.value)
    assert re.search(expected + r": [0-9a-f]{12} -> [0-9a-f]{12}", message), message
    assert caught.value.old_fingerprint == before
    assert caught.value.new_fingerprint == m.pipeline.fingerprint


UNREACHED = """
import importlib

import durable

@durable.step
def later(v, fail):
    if fail:
        raise RuntimeError("the first attempt stops here")
    return v

@durable.workflow(run_id="u")
def flow(x, fail=False, kind="steps"):
    # Found in a module named at run time: no definition covers it (its own
    # module, or one a string in it names, would count as a whole).
    step = getattr(importlib.import_module("flow_" + kind), "compute")
    return later(step(x), fail)
"""
UNREACHED_STEPS = """
import durable

RAN = []

def clean(x):
    return x + 1

@durable.step
def compute(x):
    RAN.append(x)
    return clean(x)
"""


@pytest.mark.parametrize("completed", [False, True], ids=["resumed", "completed"])
def test_a_step_the_workflow_does_not_name_is_fingerprinted_afresh(
    module: Any, completed: bool, tmp_path: Path
) -> None:
    (tmp_path / "flow_steps.py").write_text(UNREACHED_STEPS)
    m = module(UNREACHED)
    steps = importlib.import_module("flow_steps")
    if completed:
        assert m.flow.run(10).value == 11
    else:
        with pytest.raises(RuntimeError):
            m.flow(10, fail=True)
    steps.clean = lambda x: x + 7  # the step's helper changed: its record is stale
    with pytest.raises(durable.DefinitionChangedError, match="compute: code changed"):
        m.flow(10)
    assert steps.RAN == [10]  # executed once, and its stale output never returned
    sys.modules.pop("flow_steps")


NESTED = """
import durable

RAN = []

@durable.step
def inner(x):
    return clean(x)

def clean(x):  # below the step: not there when it was decorated
    return x + 1

@durable.step
def outer(x):
    RAN.append(x)
    return inner(x) * 10

@durable.step
def later(v, fail):
    if fail:
        raise RuntimeError("the first attempt stops here")
    return v

@durable.workflow(run_id="n")
def flow(x, fail=False):
    return later(outer(x), fail)
"""


def test_a_step_another_step_calls_counts_in_it_as_it_is_now(module: Any) -> None:
    """`outer` calls `inner`, which the workflow does not name: `inner`
    counted in `outer` by the fingerprint it got when decorated, which
    misses a helper defined below it, and never sees that helper rebound
    (a notebook cell). The old output of `outer` came back."""
    m = module(NESTED)
    with pytest.raises(RuntimeError):
        m.flow(10, fail=True)
    m.clean = lambda x: x + 7  # the helper of the step outer calls changed
    with pytest.raises(durable.DefinitionChangedError, match="outer"):
        m.flow(10)
    assert m.RAN == [10]  # executed once, and its stale output never returned


NESTED_LIB = """
import durable

@durable.step
def inner(x):
    return clean(x)

def clean(x):  # below the step: not there when it was decorated
    return x + {k}
"""

NESTED_FLOW = """
import os, sys
import durable
from lib import inner

@durable.step
def outer(x):
    with open("ran", "a") as log:
        log.write("outer\\n")
    return inner(x) * 10

@durable.workflow(run_id="n")
def flow(x):
    out = outer(x)
    if os.environ.get("CRASH"):
        os._exit(3)
    return out

print(flow(1))
"""


def test_a_step_another_step_calls_counts_its_helper_edited_between_processes(
    tmp_path: Path,
) -> None:
    """The same in two processes, with the helper edited in its file: the
    fingerprint `inner` got when decorated never held `clean`, so `outer`
    replayed its old output (20), even under the default on_change="refuse"."""
    (tmp_path / "flow.py").write_text(NESTED_FLOW)
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "DURABLE_STORE": str(tmp_path / "store"), "PYTHONPATH": root}

    def run(k: int, **extra: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "lib.py").write_text(NESTED_LIB.replace("{k}", str(k)))
        return subprocess.run(
            [sys.executable, "flow.py"], cwd=tmp_path, env={**env, **extra},
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    assert run(1, CRASH="1").returncode == 3
    assert run(1, CRASH="1").returncode == 3  # the same code: replayed
    out = run(100)
    assert out.returncode != 0 and "DefinitionChangedError" in out.stderr, out.stdout
    assert "outer" in out.stderr and "inner" in out.stderr
    assert (tmp_path / "ran").read_text().split() == ["outer"]


CYCLE = """
import sys
import durable

@durable.step
def pick(name):
    return sorted(FLOWS)[0] + name

@durable.workflow(run_id="c")
def flow(name):
    return pick(name)

FLOWS = {"main": flow}  # the step reads what holds the workflow that reaches it

if __name__ == "__main__":
    print(flow("x"), flow("x"), flow.fingerprint == flow.fingerprint)
"""


def test_a_step_that_reaches_its_own_workflow_is_fingerprinted(tmp_path: Path) -> None:
    """Its workflow counts in it by its body alone: the whole definition
    would hold the step again, and fingerprinting it never ended."""
    done = run_script(tmp_path, "cycle.py", CYCLE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["mainx", "mainx", "True"]


LAZY_CLIENT = """
import durable

RAN = []
_client = None
_calls = 0

def get_client():
    global _client, _calls
    _calls = _calls + 1  # program state: counts by its statements, never its value
    if _client is None:
        _client = object()
    return _client

@durable.step
def fetch(x):
    RAN.append(x)
    get_client()
    return x

@durable.step
def gate(fail):
    if fail:
        raise RuntimeError("the first attempt stops here")

@durable.workflow(run_id="lazy")
def flow(fail=False):
    return [fetch(1), gate(fail)]
"""


def test_a_global_a_helper_rebinds_as_it_runs_never_looks_like_a_change(module: Any) -> None:
    m = module(LAZY_CLIENT)
    with pytest.raises(RuntimeError):
        m.flow(fail=True)
    assert m.flow() == [1, None]  # resumed, not refused
    assert m.flow() == [1, None]  # and called again once completed
    assert m.RAN == [1]


SHOWN = """
import durable

RESULTS = {}
RAN = []

@durable.step
def fetch(u):
    RAN.append(u)
    RESULTS[u] = u * 2
    return u * 2

@durable.workflow(run_id="shown")
def pipe(u):
    return fetch(u)

if __name__ == "__main__":
    out = pipe(3)
    print(RESULTS, out)  # shows what the step filled: changes nothing it reads
    out = pipe(3)
    print(len(RESULTS), repr(RAN))
"""


def test_printing_a_global_a_step_fills_is_no_change(tmp_path: Path) -> None:
    """`print(RESULTS)` at module level (or in a notebook cell) passes the
    global to a call, which may change it in place, so such a statement
    counts as one that binds it; a builtin that only reads its arguments
    never changes one, and the run called again after it must replay, not
    be refused as changed (nor executed twice)."""
    done = run_script(tmp_path, "shown.py", SHOWN)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["{3: 6} 6", "1 [3]"]


SET_UP_IN_MAIN = """
import durable

WEIGHTS = {}
RAN = []

def setup(weight):
    WEIGHTS["a"] = weight

@durable.step
def fetch(u):
    RAN.append(u)
    return u * WEIGHTS["a"]

@durable.workflow(run_id="main")
def pipe(u):
    return fetch(u)

if __name__ == "__main__":
    setup(2)
    out = pipe(3)
    print(out)
    out = pipe(3)
    print(out, repr(RAN))
"""


def test_a_main_block_that_fills_a_global_and_reads_its_own_names_is_no_change(
    tmp_path: Path,
) -> None:
    """A call of a function that fills a global counts for it; a statement
    that also reads a name it binds (`out` above) does not: `out` is unbound
    while the first call runs and bound at the second, which was then
    refused as changed ("now uses global out")."""
    done = run_script(tmp_path, "main_block.py", SET_UP_IN_MAIN)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["6", "6 [3]"]


CALLED_IN_A_LOOP = """
import durable

SEEN = []

@durable.step
def work(i):
    SEEN.append(i)
    return i

@durable.workflow(run_id="loop")
def flow(n):
    return [work(i) for i in range(n)]

for attempt in range(2):
    SEEN.clear()
    out = flow(3)
    print(attempt, out, SEEN)
"""


def test_a_module_level_loop_calling_a_workflow_again_is_no_change(tmp_path: Path) -> None:
    """The loop changes SEEN (`SEEN.clear()`), so it counts for the step
    that reads SEEN, with what it reads; `out` is its own, bound by it
    alone: unbound while the first call runs and bound at the second, which
    was refused as changed ("work: now uses global loop.out"). The second
    call replays: the step body ran once in all."""
    done = run_script(tmp_path, "loop.py", CALLED_IN_A_LOOP)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["0 [0, 1, 2] [0, 1, 2]", "1 [0, 1, 2] []"]


def test_a_name_a_loop_also_binds_elsewhere_still_counts(tmp_path: Path) -> None:
    """The other half of the rule above: `base` is bound before the loop
    too, so what the loop puts in SEEN depends on that statement, whose
    edit (1 to 2) must refuse the replay of [100, 101] where running gives
    [200, 201]."""
    script = CALLED_IN_A_LOOP.replace("SEEN = []", "SEEN = []\nbase = 1").replace(
        "    SEEN.clear()\n    out = flow(3)\n    print(attempt, out, SEEN)",
        "    SEEN.clear()\n    SEEN.append(base * 100)\n    base = flow(2)\n    print(base)",
    ).replace("range(2):", "range(1):").replace("return i\n", "return i + SEEN[0]\n")
    outputs = [
        run_script(tmp_path, "loop.py", edited)
        for edited in (script, script.replace("base = 1", "base = 2"))
    ]
    assert outputs[0].stdout.splitlines() == ["[100, 101]"], outputs[0].stderr
    assert outputs[1].returncode != 0
    assert "DefinitionChangedError" in outputs[1].stderr and "base" in outputs[1].stderr


def run_script(folder: Path, name: str, text: str) -> subprocess.CompletedProcess[str]:
    """Write a script into folder and run it there, in a process of its own,
    on the store in folder/store."""
    (folder / name).write_text(text)
    env = {**os.environ, "DURABLE_STORE": str(folder / "store")}
    return subprocess.run(
        [sys.executable, name], cwd=folder, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
