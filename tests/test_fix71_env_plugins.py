"""Two steps of one module each importing the plugin its own variable of
the environment names (`import_module(os.environ["PLUGIN_A"])`,
`PLUGIN_B`): a step looking modules up read its own module whole, so the
step reading `PLUGIN_A` counted the other step, `PLUGIN_B`'s value with
it. `PLUGIN_B` changed, both were changed calls: under `on_change="rerun"`
the first ran again too. Now a lookup naming another module as the call
is made counts that module whole, not its own (`builtnames.named_elsewhere`).

Stays refused: the plugin calling back into the step's module, whose
helper was edited (the plugin counts whole, what it reaches too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes

HEAD = """import importlib, os
import durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

def helper(x):
    return x + 1
"""
TWO = HEAD + """
@durable.step
def a(x):
    count("two:a")
    return importlib.import_module(os.environ["PLUGIN_A"]).run(x)

@durable.step
def b(x):
    count("two:b")
    return importlib.import_module(os.environ["PLUGIN_B"]).run(x)

@durable.workflow(run_id="two")
def wf():
    out = a(1) + b(2)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""
BACK = HEAD + """
@durable.step
def a(x):
    count("back:a")
    return importlib.import_module(os.environ["PLUGIN_C"]).run(x)

@durable.workflow(run_id="back")
def wf():
    out = a(1)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""
RUN = """
import importlib, durable
for name in ("two", "back"):
    try:
        print(name, "value", importlib.import_module("f71e_" + name).wf.with_options(on_change="rerun")())
    except durable.Suspended:
        print(name, "suspended")
"""


def test_a_step_counts_the_plugin_its_own_variable_names(tmp_path: Path) -> None:
    (tmp_path / "f71e_two.py").write_text(TWO)
    (tmp_path / "f71e_back.py").write_text(BACK)
    for name, add in (("pa", 10), ("pb", 20), ("pb2", 30)):
        (tmp_path / f"{name}.py").write_text(f"def run(x):\n    return x + {add}\n")
    (tmp_path / "pback.py").write_text("import f71e_back\n\ndef run(x):\n    return f71e_back.helper(x)\n")
    env = {"PLUGIN_A": "pa", "PLUGIN_B": "pb", "PLUGIN_C": "pback"}
    (first,) = run_each([(tmp_path, RUN, {"STOP": "1", **env})])
    assert first.split() == ["two", "suspended", "back", "suspended"], first
    back = tmp_path / "f71e_back.py"
    back.write_text(back.read_text().replace("x + 1", "x + 5"))  # the helper the plugin calls back into
    (second,) = run_each([(tmp_path, RUN, {**env, "PLUGIN_B": "pb2"})])
    # two: 11 + 32, b alone ran again (was: a too). back: run again, the new helper's 6.
    assert second.split() == ["two", "value", "43", "back", "value", "6"], second
    assert sorted((tmp_path / "count").read_text().split()) == ["back:a", "back:a", "two:a", "two:b", "two:b"]
