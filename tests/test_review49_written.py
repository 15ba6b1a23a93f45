"""Step `a` appends to a module-level list `LOG`; step `b` reads it by a
way no rule saw, so `a`'s append was no read: resumed in a new process, `a`
replayed without appending and `b` summed the list the import left (`value
0`, not 3). Through the module's namespace rather than the name
(`sys.modules[__name__].LOG`, a function's `__globals__["LOG"]`, `vars(...)`
of the module; `stepreach`'s reads by string knew `globals()` alone), and
through another module's helper `b` does not call by its name (held in a
dict, a partial, or handed to a call: `helperreads` followed calls alone);
and `a` logging into the list through another module's helper
(`helpers.log(x)`): the writes of its own module's helpers alone were seen;
or handing it to a helper that appends to its parameter (`logto(LOG, x)`):
a name handed to a call was taken as read only."""

from __future__ import annotations

import pytest

from tests.scripts import suspend_then_resume

pytestmark = pytest.mark.slow  # one interpreter forking the phases

FLOW = """
import os, sys, durable
{head}

def log(x):
    LOG.append(x)
{extra}

@durable.step
def a(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("a\\n")
    {write}
    return x

@durable.step
def b():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("b\\n")
    return {ret}

@durable.workflow(run_id="r1")
def wf():
    a(1)
    a(2)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return b()
"""

OWN = "LOG = []"
# Another module's helper reading the list both import.
FOREIGN = "import functools\nfrom config import LOG\nfrom helpers import total"
CASES = {
    "sys_modules": (OWN, "", "sum(sys.modules[__name__].LOG)"),
    "getattr_module": (OWN, "def total():\n    return sum(getattr(sys.modules[__name__], 'LOG'))", "total()"),
    "vars_module": (OWN, "def total():\n    return sum(vars(sys.modules[__name__])['LOG'])", "total()"),
    "function_globals": (OWN, "def total():\n    return sum(total.__globals__['LOG'])", "total()"),
    "helper_in_dict": (FOREIGN, "OPS = {'total': total}", "OPS['total']()"),
    "helper_in_partial": (FOREIGN, "T = functools.partial(total)", "T()"),
    "helper_handed": (FOREIGN, "def call(f):\n    return f()", "call(total)"),
    # Logged into by another module's helper: `helpers.log(x)`, `log(x)` imported.
    "foreign_writer": ("from config import LOG\nimport helpers", "", "sum(LOG)", "helpers.log(x)"),
    "foreign_writer_imported": ("from config import LOG\nfrom helpers import log as put", "", "sum(LOG)", "put(x)"),
    # Handed to a helper that appends to its parameter: `logto(LOG, x)`.
    "handed_to_writer": (OWN, "def logto(items, x):\n    items.append(x)", "sum(LOG)", "logto(LOG, x)"),
    "handed_to_foreign_writer": ("from config import LOG\nimport helpers", "", "sum(LOG)", "helpers.logto(items=LOG, x=x)"),
}
HELPERS = """from config import LOG

def total():
    return sum(LOG)

def log(x):
    LOG.append(x)

def logto(items, x):
    items.append(x)
"""
FILES = {"config.py": "LOG = []\n", "helpers.py": HELPERS}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str, list[str]]]:
    folders = {}
    for case, (head, extra, ret, *write) in CASES.items():
        folders[case] = folder = tmp_path_factory.mktemp("written")
        (folder / "flow.py").write_text(FLOW.format(head=head, extra=extra, ret=ret, write=(write or ["log(x)"])[0]))
        for name, text in FILES.items():
            (folder / name).write_text(text)
    return suspend_then_resume(folders)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_list_read_by_no_name_of_it_is_not_replayed_without_the_appends(
    runs: dict[str, tuple[str, str, list[str]]], name: str
) -> None:
    first, resumed, count = runs[name]
    assert "suspended" in first, first
    assert "value 0" not in resumed, resumed  # was: value 0 (the import's empty list)
    if "refused" in resumed:
        assert count == ["a", "a"], count
    else:
        assert "value 3" in resumed and count == ["a", "a", "a", "a", "b"], (resumed, count)
