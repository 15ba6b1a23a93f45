"""Writes from another module (`elsewhere`) under pytest and at run time:
a test module pytest loaded, whose running code is not what its text
compiles to (hypothesis's `@given` gives its wrapper the test's file and
line), never refuses a step of another test module; a write there that
reaches what the step reads still counts, by its text. Each case runs a
real pytest (or script) in a child process, counting body executions."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .scripts import run_in

WRITER = """
from fractions import Fraction

from hypothesis import given, strategies as st

import settings

settings.RATES = [3]


@given(st.integers(-1000, 1000))
def test_an_integer_is_a_fraction(i):
    assert Fraction.from_float(float(i)) == i
"""
STEP = """
import os
from fractions import Fraction

import durable
import settings


def test_a_step_of_another_test_module_runs_and_replays(tmp_path):
    @durable.step(name="half")
    def half():
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write("half\\n")
        return str(Fraction(sum(settings.RATES), 2))

    @durable.workflow(name="w", store=durable.open_store(os.environ["STORE"]), run_id="r")
    def w():
        return half()

    print("result", w(), w())
"""


def child(folder: Path, *argv: str) -> str:
    return run_in(folder, *argv)


def test_a_test_module_pytest_loaded_never_refuses_a_step_of_another(tmp_path: Path) -> None:
    """`Fraction.from_float(...)` in test_writer.py, whose `@given` test runs
    code its text does not compile to: the step reading `Fraction` was
    refused ("edited after import?"). `settings.RATES = [3]` there counts
    for the step reading it (an edit of it is a change), by its text."""
    (tmp_path / "settings.py").write_text("RATES = [1]\n")
    (tmp_path / "test_writer.py").write_text(textwrap.dedent(WRITER).lstrip())
    (tmp_path / "test_step.py").write_text(textwrap.dedent(STEP).lstrip())
    argv = ("-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_writer.py", "test_step.py")
    out = child(tmp_path, *argv)
    assert "2 passed" in out and "result 3/2 3/2" in out, out
    assert (tmp_path / "count").read_text().split() == ["half"]
    writer = tmp_path / "test_writer.py"
    writer.write_text(writer.read_text().replace("[3]", "[5]"))
    out = child(tmp_path, *argv)
    assert "1 failed, 1 passed" in out and "half: global settings.RATES changed" in out, out
    assert (tmp_path / "count").read_text().split() == ["half"]


PLACEHOLDER_RUN = """
import durable, flow, plugin

def call(run_id):
    try:
        print(run_id, flow.flow.with_options(run_id=run_id)())
    except durable.DefinitionChangedError as e:
        print(run_id, "refused", e)

call("r0")  # fingerprinted while plugin.target holds None
plugin.point()
plugin.bump()
call("r1")
"""
PLUGIN = """
{target}


def point():
    global target
    import settings
    target = settings


def bump():
    target.RATES = [3]
"""


@pytest.mark.parametrize("target", ["target = None", "import other as target"])
def test_a_name_another_module_binds_to_a_module_at_run_time_counts(
    tmp_path: Path, target: str
) -> None:
    """`target.RATES = [3]` in plugin.py, `target` bound to settings only
    after the step was first fingerprinted (the loaded modules and their
    numbers of names the same): an edit of it is a change, not the old
    output replayed. A placeholder's write counts from the start (fail
    closed); a module rebound is seen when what the step reads is."""
    (tmp_path / "settings.py").write_text("RATES = [1]\n")
    (tmp_path / "other.py").write_text("RATES = [0]\n")
    (tmp_path / "plugin.py").write_text(textwrap.dedent(PLUGIN).lstrip().format(target=target))
    flow = "import os, durable, settings, plugin\n\n@durable.step\ndef first():\n"
    flow += "    with open(os.environ['COUNT_FILE'], 'a') as f:\n        f.write('first\\n')\n"
    flow += "    return sum(settings.RATES)\n\n@durable.workflow\ndef flow():\n    return first()\n"
    (tmp_path / "flow.py").write_text(flow)
    assert child(tmp_path, "-c", PLACEHOLDER_RUN).split("\n")[:2] == ["r0 1", "r1 3"]
    plugin = tmp_path / "plugin.py"
    plugin.write_text(plugin.read_text().replace("[3]", "[4]"))
    again = child(tmp_path, "-c", PLACEHOLDER_RUN)
    assert "r1 refused" in again and "first: global settings.RATES changed" in again, again
    assert (tmp_path / "count").read_text().split() == ["first", "first"]


SETTER_SCRIPT = """
import os
import durable
import settings

durable.configure(store=os.environ["STORE"])


@durable.step(cache=True)
def train(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("train\\n")
    return x * settings.CONFIG["lr"]


for lr in [1, 2, 3]:
    settings.set_lr(lr)
    print("result", train(10))
"""


def test_a_global_another_module_changes_through_its_setter_counts_by_contents(
    tmp_path: Path,
) -> None:
    """`settings.set_lr(lr)` in the script's loop, whose body changes
    `settings.CONFIG` the cached step reads: the statement is in settings,
    the call in the script, and each pass was served the first's output."""
    (tmp_path / "settings.py").write_text('CONFIG = {"lr": 0}\n\n\ndef set_lr(lr):\n    CONFIG["lr"] = lr\n')
    (tmp_path / "script.py").write_text(textwrap.dedent(SETTER_SCRIPT).lstrip())
    out = child(tmp_path, "script.py")
    assert out.split() == ["result", "10", "result", "20", "result", "30"], out  # was: 10 10 10
    assert child(tmp_path, "script.py") == out  # served from the cache, each its own
    assert (tmp_path / "count").read_text().split() == ["train"] * 3
