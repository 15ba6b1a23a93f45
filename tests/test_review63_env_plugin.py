"""A step importing the module the environment names
(`importlib.import_module(os.environ["PLUGIN_1"])`) counted every module
of the user's (`built-names:*`): any edit of any module refused its
resume. Now the name the variable holds as the call is made is the
pattern (`builtnames._environment`): that module's text counts, and the
variable naming another module is another call; an edit elsewhere is no
change."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes

# One module a flow: a step that looks modules up counts its own module whole.
FLOW = """import importlib, os
import durable

@durable.step
def s(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("s{i}\\n")
    return importlib.import_module(os.environ["PLUGIN_{i}"]).run(x)

@durable.workflow(run_id="r{i}")
def wf():
    out = s(10)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""
RUN = """
import importlib, durable
for i in (1, 2, 3):
    try:
        print(i, "value", importlib.import_module(f"flow{i}").wf())
    except durable.Suspended:
        print(i, "suspended")
    except durable.DefinitionChangedError as e:
        print(i, "refused")
"""


def test_a_module_named_by_the_environment_counts_alone(tmp_path: Path) -> None:
    for i in (1, 2, 3):
        (tmp_path / f"flow{i}.py").write_text(FLOW.replace("{i}", str(i)))
    for mod in ("plug_a", "plug_b", "plug_c", "plug_d", "other"):
        (tmp_path / f"{mod}.py").write_text("def run(x):\n    return x + 1\n")
    names = {"PLUGIN_1": "plug_a", "PLUGIN_2": "plug_b", "PLUGIN_3": "plug_c"}
    (first,) = run_each([(tmp_path, RUN, {"STOP": "1", **names})])
    assert first.split() == ["1", "suspended", "2", "suspended", "3", "suspended"], first
    for edited in ("other", "plug_b"):  # no module flow1 names; the one flow2 names
        (tmp_path / f"{edited}.py").write_text("def run(x):\n    return x + 2\n")
    (second,) = run_each([(tmp_path, RUN, {**names, "PLUGIN_3": "plug_d"})])  # flow3's names another
    # Was: 1 refused ("built-names * changed").
    assert second.split() == ["1", "value", "11", "2", "refused", "3", "refused"], second
    assert sorted((tmp_path / "count").read_text().split()) == ["s1", "s2", "s3"]
