"""A step writes a class attribute of another module of the user's
(`Cfg.mode = "fast"`, `Cfg` from `config.py`); the workflow reads it only
through a helper of a third module that is a method of a class there
(`helpers.Describer.describe()`, a static method, or `Describer().describe()`).
A replay does not redo the write: resumed in a new process, the workflow
went on with the value the import left (`value slow`): `helperreads`
followed functions called by name alone, as test_stale51_readers's cases
are."""

from __future__ import annotations

import pytest

from tests.scripts import suspend_then_resume

pytestmark = pytest.mark.slow  # one interpreter forking the phases

CONFIG = """
class Cfg:
    mode = "slow"
"""

HELPERS = """
from config import Cfg

class Describer:
    @staticmethod
    def describe():
        return Cfg.mode

    def mode(self):
        return Cfg.mode
"""

FLOW = """
import os, durable, helpers
from config import Cfg
from helpers import Describer

@durable.step
def set_fast():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("set_fast\\n")
    Cfg.mode = "fast"

@durable.workflow(run_id="r1")
def wf():
    set_fast()
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return {ret}
"""


CASES = {
    "static_method_through_module": "helpers.Describer.describe()",
    "method_of_an_instance": "Describer().mode()",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str, list[str]]]:
    folders = {}
    for name, ret in CASES.items():
        folders[name] = folder = tmp_path_factory.mktemp("readers")
        for file, text in (("config.py", CONFIG), ("helpers.py", HELPERS), ("flow.py", FLOW.format(ret=ret))):
            (folder / file).write_text(text)
    return suspend_then_resume(folders)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_a_step_writes_read_through_a_method_of_another_module_is_not_replayed_without_it(
    runs: dict[str, tuple[str, str, list[str]]], name: str
) -> None:
    first, resumed, count = runs[name]
    assert "suspended" in first, first
    assert "refused" in resumed and "value slow" not in resumed, resumed  # was: value slow
    assert count == ["set_fast"]
