"""A refusal that comes from which modules a process loaded names them.

A global a step reads counts the statements of every loaded module of the
user's that write it (a function's body too, whether or not it ran), and a
library's state counts the module-level seeds of every loaded module: a
script that seeds and imports a plugin, resumed by `durable run` without
them, is refused (fail closed: nothing tells whether they ran). The
fingerprint is unchanged; the refusal says which modules' code it counted
then and now, where it said only "global helpers.RATES changed" of a file
nobody had edited."""

from __future__ import annotations

from pathlib import Path

import pytest

from .scripts import run_in

pytestmark = pytest.mark.slow

HELPERS = "RATES = [1]\n"
PLUGIN = """
import helpers


def bump():
    helpers.RATES.append(2)
"""
FLOW = """
import os
import random

import durable
import helpers


@durable.step
def draw():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("draw\\n")
    return random.randint(0, 1000) + sum(helpers.RATES)


@durable.workflow(run_id="r1")
def wf():
    out = draw()
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""
SCRIPT = """
import random

import durable
import plugin
from flow import wf

random.seed(1)
try:
    print("value", wf())
except durable.Suspended:
    print("suspended")
"""


def test_a_resume_without_the_modules_that_ran_names_them(tmp_path: Path) -> None:
    for name, text in (("helpers", HELPERS), ("plugin", PLUGIN), ("flow", FLOW), ("script", SCRIPT)):
        (tmp_path / f"{name}.py").write_text(text)
    first = run_in(tmp_path, "script.py", STOP="1")
    assert first.split() == ["suspended"], first
    second = run_in(tmp_path, "-m", "durable", "run", "flow:wf", "--run-id", "r1", "--resume")
    assert "refused" in second, second  # fail closed: whether plugin.bump() ran is not known
    assert "random state is set by code of other loaded modules: script when recorded, none now" in second
    assert "helpers.RATES is set by code of other loaded modules: plugin when recorded, none now" in second
    assert (tmp_path / "count").read_text().split() == ["draw"]  # nothing ran again
