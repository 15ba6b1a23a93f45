"""A step writes a class attribute or a dict another module of the user's
holds (`Cfg.mode = "fast"`, `STATE["mode"] = "fast"`, both from
`config.py`); the workflow reads it only through a helper of a third module
(`helpers.describe()`, or `describe()` imported from it). A replay does not
redo the write: resumed in a new process, the workflow went on with the
value the import left and returned `value slow` (review45's `_readers`
followed the helpers of the workflow's own module alone). Refused now, as
a helper of its own module is; a helper reading nothing the step writes
replays."""

from __future__ import annotations

import pytest

from tests.scripts import RUN_WF, run_each

pytestmark = pytest.mark.slow  # one interpreter forking the phases

CONFIG = """
class Cfg:
    mode = "slow"

STATE = {"mode": "slow"}
"""

HELPERS = """
import os
import config
from config import Cfg, STATE

def describe():
    return _mode()

def _mode():
    via = os.environ["VIA"]
    return Cfg.mode if via == "class" else config.STATE["mode"] if via == "module" else STATE["mode"]

def other():
    return "other"
"""

FLOW = """
import os, durable, helpers
from config import Cfg, STATE
from helpers import describe

@durable.step
def set_fast():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("set_fast\\n")
    Cfg.mode = "fast"
    STATE["mode"] = "fast"

@durable.workflow(run_id="r1")
def wf():
    set_fast()
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return {ret}
"""


CASES = {  # name: (VIA, what the workflow returns)
    "class_via_module_attribute": ("class", "helpers.describe()"),
    "dict_via_imported_helper": ("dict", "describe()"),
    "dict_through_module_via_attribute": ("module", "helpers.describe()"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str, list[str]]]:
    jobs = []
    names = [*CASES, "unrelated"]
    folders = []
    for name in names:
        folder = tmp_path_factory.mktemp(name)
        via, ret = CASES.get(name, ("class", "helpers.other()"))
        for file, text in (("config.py", CONFIG), ("helpers.py", HELPERS), ("flow.py", FLOW.format(ret=ret))):
            (folder / file).write_text(text)
        jobs += [(folder, RUN_WF, {"VIA": via, **stop}) for stop in ({"STOP": "1"}, {})]
        folders.append(folder)
    outs = run_each(jobs)
    return {
        name: (outs[2 * i], outs[2 * i + 1], (folder / "count").read_text().split())
        for i, (name, folder) in enumerate(zip(names, folders, strict=True))
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_a_step_writes_read_through_another_modules_helper_is_not_replayed_without_it(
    runs: dict[str, tuple[str, str, list[str]]], name: str
) -> None:
    first, resumed, count = runs[name]
    assert "suspended" in first, first
    # A new process: the import left mode "slow"; replaying the setter would say so.
    assert "refused" in resumed and "value slow" not in resumed, resumed  # was: value slow
    assert count == ["set_fast"]


def test_a_helper_reading_none_of_it_replays(runs: dict[str, tuple[str, str, list[str]]]) -> None:
    first, resumed, count = runs["unrelated"]
    assert "suspended" in first and "value other" in resumed, resumed
    assert count == ["set_fast"]
