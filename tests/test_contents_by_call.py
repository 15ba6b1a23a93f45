"""A global that a module-level call changes in place through a function of
the script (`set_lr(lr)` in a loop, `fill(CONFIG, lr)`) counts by its
contents, as one a statement changes directly (`CONFIG["lr"] = lr`) does:
the calling statement is in the file before and after it runs, so counted
by its text alone every pass of the loop had one key. Each script runs in a
process of its own, and a second time to show the keys are the same in
another process (every call a hit, nothing executed)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .test_cache_memo import first_line_of

pytestmark = pytest.mark.slow  # two Python processes per test

_SETTER = """
import durable
ran = []
CONFIG = {"lr": 1}


def set_lr(lr):
    CONFIG["lr"] = lr


@durable.step(cache=True)
def train(v):
    ran.append(v)
    return v * CONFIG["lr"]


for lr in (2, 3, 4):
    set_lr(lr)
    print(train(10), end=" ")  # no list the loop fills: its contents would count
print(len(ran))
"""

_FILLER = """
import durable
ran = []
GRID = [1]


def fill(table, value):
    table[0] = value


@durable.step(cache=True)
def train(v):
    ran.append(v)
    return v * GRID[0]


for lr in (2, 3, 4):
    fill(GRID, lr)
    print(train(10), end=" ")
print(len(ran))
"""


@pytest.mark.parametrize("text", [_SETTER, _FILLER], ids=["setter", "filler"])
def test_a_global_a_called_function_changes_in_a_loop_is_not_served_stale(
    tmp_path: Path, text: str
) -> None:
    """Seen failing: 20 20 20 1 (the second and third lr were served the
    first's output)."""
    script = tmp_path / "grid_script.py"
    script.write_text(textwrap.dedent(text))
    runs = [first_line_of(script, tmp_path / "store") for _ in range(2)]
    assert runs == ["20 30 40 3", "20 30 40 0"]


_FLOW = """
import durable
ran = []
CONFIG = {"lr": 1}


def set_lr(lr):
    CONFIG["lr"] = lr


@durable.step
def train(v):
    ran.append(v)
    return v * CONFIG["lr"]


@durable.workflow(run_id="train-1")
def flow(v):
    return train(v)


set_lr(2)
first = flow(10)
set_lr(3)
try:
    second = flow(10)
except durable.DefinitionChangedError:
    second = "refused"
print(first, second, len(ran))
"""


def test_a_completed_run_is_not_answered_after_a_setter_changed_its_input(
    tmp_path: Path,
) -> None:
    """The same call of a completed run after `set_lr(3)`: its step read
    another value, so the run is refused as changed, never answered 20.
    Seen failing: 20 20 1."""
    script = tmp_path / "flow_script.py"
    script.write_text(textwrap.dedent(_FLOW))
    assert first_line_of(script, tmp_path / "store") == "20 refused 1"


_ARRAY = """
import numpy as np
import durable
ran = []
WEIGHTS = np.ones(3)
SCALE = np.ones(2)


def set_scale(s):
    SCALE[:] = s


@durable.step(cache=True)
def weighted(v):
    ran.append(v)
    return float((WEIGHTS * v).sum())


@durable.step(cache=True)
def scaled(v):
    ran.append(v)
    return float((SCALE * v).sum())


for w in (1.0, 2.0):
    WEIGHTS[:] = w
    set_scale(w)
    print(weighted(10.0), scaled(10.0), end=" ")
print(len(ran))
"""


def test_a_global_array_changed_in_place_between_calls_is_not_served_stale(
    tmp_path: Path,
) -> None:
    """A numpy array (any buffer) that the module changes in place counts by
    its contents, as a list of plain data does. Seen failing: 30.0 20.0 30.0
    20.0 2."""
    pytest.importorskip("numpy")
    script = tmp_path / "array_script.py"
    script.write_text(textwrap.dedent(_ARRAY))
    runs = [first_line_of(script, tmp_path / "store") for _ in range(2)]
    assert runs == ["30.0 20.0 60.0 40.0 4", "30.0 20.0 60.0 40.0 0"]


_OBJECT = """
import durable
ran = []


class Params:
    def __init__(self):
        self.values = {"lr": 1}

    def set(self, key, value):
        self.values[key] = value


PARAMS = Params()


@durable.step(cache=True)
def train(v):
    ran.append(v)
    return v * PARAMS.values["lr"]


for lr in (2, 3):
    PARAMS.set("lr", lr)
    print(train(10), end=" ")  # no list the loop fills: its contents would count
print(len(ran))
"""


def test_an_object_of_your_class_a_module_level_method_call_changes_is_not_served_stale(
    tmp_path: Path,
) -> None:
    """`PARAMS.set("lr", lr)` in a loop: an object of the script's own class
    counts by its plain-data attributes, as after `PARAMS.lr = 3`. Seen
    failing: 20 20 1."""
    script = tmp_path / "object_script.py"
    script.write_text(textwrap.dedent(_OBJECT))
    runs = [first_line_of(script, tmp_path / "store") for _ in range(2)]
    assert runs == ["20 30 2", "20 30 0"]


_ARGS = """
import json, os, sys
import durable
ran = []


@durable.step
def work(v):
    ran.append(v)
    return v * 2


@durable.workflow(run_id="args-1")
def flow(v, approved=False):
    print("working", file=sys.stderr)
    out = work(v)
    if not approved:
        durable.suspend("needs approval")
    return out


args = json.loads(os.environ.get("FLOW_ARGS", "{}"))
try:
    run = flow.resume("args-1", **args) if args else flow.run(10)
    print(run.value, len(ran))
except durable.Suspended:
    print("suspended", len(ran))
    sys.exit(0)
"""


def test_arguments_a_script_passes_its_workflow_do_not_change_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`args` differs on every run by design (the resume's answer), and the
    body reads none of it: only the statement that passes it to the
    workflow (which also calls `sys.exit`, of a body reading `sys`) does.
    Seen failing: the resume refused with 'now flows.args' changed."""
    script = tmp_path / "args_script.py"
    script.write_text(textwrap.dedent(_ARGS))
    assert first_line_of(script, tmp_path / "store") == "suspended 1"
    monkeypatch.setenv("FLOW_ARGS", '{"approved": true}')
    assert first_line_of(script, tmp_path / "store") == "20 0"
