"""Step `a` logs into a module's list through a helper that only appends
(`log(x)`); step `b` logs too, then reads the list by another way than its
name in a function it calls: a module-level lambda (`TOTAL = lambda:
sum(LOG)`) or `globals()["LOG"]`. stepreach.written_only took the list as
only written by `b` (its one named use, in `log`, appends), so `a`'s append
was no read: resumed in a new process, `a` replayed without appending and
`b` summed the list the import left (`value 0`, not 3). The brief's cases
(a helper appending and returning `len(LOG)`, `LOG += [x]`, `LOG[:] = ...`,
`LOG.extend`, then `sum(LOG)`) are kept as controls."""

from __future__ import annotations

import pytest

from tests.scripts import suspend_then_resume

pytestmark = pytest.mark.slow  # one interpreter forking the phases

FLOW = """
import os, durable
LOG = []

def log(x):
    {write}
{extra}

@durable.step
def a(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("a\\n")
    log(x)
    return x

@durable.step
def b():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("b\\n")
    log(0)
    return {ret}

@durable.workflow(run_id="r1")
def wf():
    a(1)
    a(2)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return b()
"""


CASES = {
    "lambda_reader": ("LOG.append(x)", "TOTAL = lambda: sum(LOG)", "TOTAL()"),
    "globals_reader": ("LOG.append(x)", "def total():\n    return sum(globals()['LOG'])", "total()"),
    "method_reader": ("LOG.append(x)", "class Report:\n    @staticmethod\n    def total():\n        return sum(LOG)", "Report.total()"),
    "instance_method_reader": ("LOG.append(x)", "class Report:\n    def total(self):\n        return sum(LOG)", "Report().total()"),
    "helper_under_try": ("LOG.append(x)", "try:\n    import no_such_module_r48\nexcept ImportError:\n    def total():\n        return sum(LOG)", "total()"),
    "returns_len": ("LOG.append(x)\n    return len(LOG)", "", "log(0) - 1"),
    "augmented": ("global LOG\n    LOG += [x]", "", "sum(LOG)"),
    "slice": ("LOG[:] = [*LOG, x]", "", "sum(LOG)"),
    "extend": ("LOG.extend([x])", "", "sum(LOG)"),
}
# Logged into through a class's method alone and never read: no read, replayed as it is.
CONTROLS = {
    "method_writer": ("Report.note(x)", "class Report:\n    @staticmethod\n    def note(x):\n        LOG.append(x)", "7"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str, list[str]]]:
    folders = {}
    for name, (write, extra, ret) in {**CASES, **CONTROLS}.items():
        folders[name] = folder = tmp_path_factory.mktemp("written")
        (folder / "flow.py").write_text(FLOW.format(write=write, extra=extra, ret=ret))
    return suspend_then_resume(folders)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_list_read_by_a_step_that_also_logs_into_it_is_not_replayed_without_the_appends(
    runs: dict[str, tuple[str, str, list[str]]], name: str
) -> None:
    first, resumed, count = runs[name]
    assert "suspended" in first, first
    assert "value 0" not in resumed, resumed  # was: value 0 (the import's empty list)
    if "refused" in resumed:
        assert count == ["a", "a"], count
    else:
        assert "value 3" in resumed and count == ["a", "a", "a", "a", "b"], (resumed, count)


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_a_list_only_logged_into_is_replayed_without_a_word(runs: dict[str, tuple[str, str, list[str]]], name: str) -> None:
    first, resumed, count = runs[name]
    assert "suspended" in first, first
    assert "value 7" in resumed and count == ["a", "a", "b"], (resumed, count)
