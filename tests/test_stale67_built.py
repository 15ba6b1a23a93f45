"""A step importing a handler by a module name it builds at run time with
no package before it (`import_module("handlers_" + kind)`,
`f"fhandlers_{kind}"`, `__import__("%s_handler" % kind)`,
`importlib.util.find_spec("spec_" + kind)` then `exec_module`, a name
read from the environment), the handler a module of the user's beside
the flow: neither the code's constants (`"handlers_"`) nor the
arguments (`"csv"`) name a module, so the handlers edited between the
run and its re-call, the completed run was answered with the old
handlers' output (`value 2` each, no body run again). Every module file
of the user's folders that the built name's pattern matches (`handlers_*`)
counts by its text now (`_fingerprint/builtnames.py`); a name that cannot
be told, any of them. A step whose pattern matches no edited file is
still answered from its record. And a step running every plugin of an
entry point group its code names (`entry_points(group="s67.plugins")`,
no argument naming one): the plugin's module edited, the completed run
was answered with the old output; every entry point of a group a string
constant of its code names counts now (`givennames.entry_constants`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # three processes, forked

FLOW = """
import importlib, importlib.util, os, durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

@durable.step
def plus(kind, x):
    count("plus")
    return importlib.import_module("handlers_" + kind).run(x)

@durable.step
def fstr(kind, x):
    count("fstr")
    return importlib.import_module(f"fhandlers_{kind}").run(x)

@durable.step
def pct(kind, x):
    count("pct")
    return __import__("%s_handler" % kind).run(x)

@durable.step
def spec(kind, x):
    count("spec")
    found = importlib.util.find_spec("spec_" + kind)
    mod = importlib.util.module_from_spec(found)
    found.loader.exec_module(mod)
    return mod.run(x)

@durable.step
def env(kind, x):
    count("env")
    return importlib.import_module(os.environ["HANDLER"]).run(x)

@durable.workflow
def wf(step, kind, x):
    return globals()[step](kind, x)
"""

# In a module of its own: a step importing modules by name reads its own module whole (`flow.plus` too).
OTHER = """
import importlib, os, durable

@durable.step
def other(kind, x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("other\\n")
    return importlib.import_module("others_" + kind).run(x)

@durable.workflow
def wf(step, kind, x):
    return other(kind, x)
"""

# Every plugin of a group, declared by a distribution on the path (`s67site`), loading `s67ep:run`.
GROUP = """
import os, sys, durable
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "s67site"))
from importlib.metadata import entry_points

@durable.step
def group(x):  # no argument names the plugin
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("group\\n")
    return sum(ep.load()(x) for ep in entry_points(group="s67.plugins"))

@durable.workflow
def wf(step, kind, x):
    return group(x)
"""

HANDLERS = ("handlers_csv", "fhandlers_csv", "csv_handler", "spec_csv", "env_csv", "s67ep")

EDIT = """
for name in {handlers!r}:
    with open(name + ".py", "w") as f:
        f.write("def run(x):\\n    return x + 2\\n")
"""

RUN = """
import durable, flow, other, grouped
for step in ("plus", "fstr", "pct", "spec", "env", "group", "other"):
    try:
        print(step, {"other": other, "group": grouped}.get(step, flow).wf(step, "csv", 1))
    except durable.DefinitionChangedError:
        print(step, "refused")
"""


def test_a_handler_named_by_a_name_built_at_run_time_counts_by_its_code(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    (tmp_path / "other.py").write_text(OTHER)
    (tmp_path / "grouped.py").write_text(GROUP)
    info = tmp_path / "s67site" / "s67ep-1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: s67ep\nVersion: 1\n")
    (info / "entry_points.txt").write_text("[s67.plugins]\ncsv = s67ep:run\n")
    for name in (*HANDLERS, "others_csv"):
        (tmp_path / f"{name}.py").write_text("def run(x):\n    return x + 1\n")
    env = {"HANDLER": "env_csv"}
    edit = EDIT.format(handlers=HANDLERS)
    first, edited, again = run_each([(tmp_path, RUN, env), (tmp_path, edit + RUN, env), (tmp_path, RUN, env)])
    assert first.split() == "plus 2 fstr 2 pct 2 spec 2 env 2 group 2 other 2".split(), first
    # Was: plus 2 fstr 2 pct 2 spec 2 env 2 group 2 other 2 (the old handlers' answers, no body run).
    expected = "plus refused fstr refused pct refused spec refused env refused group refused other 2".split()
    assert edited.split() == expected, edited
    assert again.split() == expected, again
    assert sorted((tmp_path / "count").read_text().split()) == sorted(["plus", "fstr", "pct", "spec", "env", "group", "other"])
