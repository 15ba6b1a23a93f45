"""A step writing a global of its own module through the module, imported
relatively under another name in a package (`from . import rel as me;
me.LOG.append(x)`), and another step reading it: resumed in a new process,
the writer replayed, the reader read what the import made and gave `0`
where running gives `1`. The absolute form (`from pk import abs as me`)
was refused as a write another step reads; the relative one was not seen
(`stepreach._imported_as` skipped relative imports)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # processes, forked

FLOW = """
import os, durable
LOG = []

@durable.step
def w(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("{form}:w\\n")
    {imp}
    me.LOG.append(x)
    return x

@durable.step
def r(x):
    return len(LOG) + x

@durable.workflow(run_id="r-{form}")
def wf():
    w(5)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return r(0)
"""
RUN = """
import importlib, durable
for name in ("abs", "rel"):
    try:
        print(name, "value", importlib.import_module("pk." + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "LOG, which w writes and another step reads" in str(e) else str(e))
"""


def test_a_write_through_the_module_imported_relatively_is_one_another_step_reads(tmp_path: Path) -> None:
    (tmp_path / "pk").mkdir()
    (tmp_path / "pk/__init__.py").write_text("")
    for form, imp in (("abs", "from pk import abs as me"), ("rel", "from . import rel as me")):
        (tmp_path / f"pk/{form}.py").write_text(FLOW.format(form=form, imp=imp))
    first, second = run_each([(tmp_path, RUN, {"STOP": "1"}), (tmp_path, RUN, {})])
    assert first.split() == ["abs", "suspended", "rel", "suspended"], first
    assert second.split() == ["abs", "refused", "rel", "refused"], second  # was: "rel value 0"
    assert sorted((tmp_path / "count").read_text().split()) == ["abs:w", "rel:w"]  # nothing ran again
