"""Stale values the last round left open, each as a user writes it, run
twice in processes of their own with one edit between (`twice`):

- a plugin registered by `setattr` on a namespace made with
  `types.ModuleType("ns")` (no file, not imported: no statement shows
  what it holds), looked up by a name the step builds;
  (also through `from registry import NS`, where it counted as a leaf);
- a dict registry held in a `contextvars.ContextVar`, `REG.get()[name]`;
- `import train` in a branch of the step's body the call does not take,
  `train.py` doing work at import: the fingerprint imported it (its
  top-level work ran) and counted nothing of it once it did not.

Counted by their type alone, an edit of the plugin (or of `train.py`)
replayed the output the old code computed. A flow doing them all, not
edited, replays."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.scripts import EDITED_FLOW, RUN_FLOW, refused_after_edit, twice

pytestmark = pytest.mark.slow

REGISTRY = """
import contextvars, types
NS = types.ModuleType("ns")
REG = contextvars.ContextVar("reg", default={})
"""

PLUGIN = """
import registry

def triple(x):
    return x * 3

setattr(registry.NS, "triple", triple)
registry.REG.get()["triple"] = triple
"""

TRAIN = """
import os
with open(os.path.join(os.path.dirname(__file__), "imported"), "a") as f:
    f.write("train\\n")

def fit(x):
    return x * 3
"""

HEAD = "import registry, plugin\nfrom registry import NS"

# name: what the step returns, the plugin's name from the environment (as a deployment chooses it).
CASES = {
    "module_namespace": 'getattr(registry.NS, os.environ["PLUGIN"])(x)',
    "context_var_dict": 'registry.REG.get()[os.environ["PLUGIN"]](x)',
    # The namespace held by a name of the step's module: it was a leaf there (stop 50).
    "from_namespace": 'getattr(NS, os.environ["PLUGIN"])(x)',
}
# The step's body: x is 10, the branch importing `train` is not taken.
BRANCH = """if x > 100:
        import train
        return train.fit(x)
    return x * 3"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    bodies = {name: f"return {reads}" for name, reads in CASES.items()}
    bodies["import_in_untaken_branch"] = BRANCH
    bodies["same"] = f"return [{CASES['module_namespace']}, {CASES['context_var_dict']}, s_branch(x)]"
    folders = {}
    for name, body in bodies.items():
        folder = tmp_path_factory.mktemp(name)
        flow = EDITED_FLOW.format(head=HEAD, body=body)
        if name == "same":
            flow += "\n\ndef s_branch(x):\n    " + BRANCH + "\n"
        (folder / "flow.py").write_text(flow)
        (folder / "registry.py").write_text(REGISTRY)
        (folder / "plugin.py").write_text(PLUGIN)
        (folder / "train.py").write_text(TRAIN)
        folders[name] = folder

    def between(name: str, folder: Path) -> dict[str, str]:
        if name != "same":
            edited = "train.py" if name == "import_in_untaken_branch" else "plugin.py"
            path = folder / edited
            path.write_text(path.read_text().replace("x * 3", "x * 5"))
        return {"PLUGIN": "triple"}

    return {"runs": twice(folders, RUN_FLOW, between, {"STOP": "1", "PLUGIN": "triple"}), "folders": folders}


@pytest.mark.parametrize("name", [*sorted(CASES), "import_in_untaken_branch"])
def test_an_edited_plugin_is_never_replayed(runs: dict[str, Any], name: str) -> None:
    refused_after_edit(runs["runs"][name])  # was `value 30` (the old output)


def test_a_module_imported_in_a_branch_not_taken_is_not_imported_to_fingerprint(runs: dict[str, Any]) -> None:
    for name in ("import_in_untaken_branch", "same"):  # its work at import never ran
        assert not (runs["folders"][name] / "imported").exists(), name


def test_the_same_registries_replay(runs: dict[str, Any]) -> None:
    first, count, second, after = runs["runs"]["same"]
    assert "suspended" in first and count == ["s"], first
    assert "value [30, 30, 30]" in second and after == ["s"], second


def test_a_completed_run_whose_step_imported_such_a_module_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted by its text while not loaded and by its code once the step's
    body had imported it, the run called again in the same process was
    refused as changed."""
    (tmp_path / "train_s48.py").write_text(TRAIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "train_s48", raising=False)
    ran: list[int] = []

    @durable.step
    def s(x: int) -> int:
        ran.append(x)
        import train_s48

        return int(train_s48.fit(x))

    @durable.workflow(store=f"memory://stale48-{uuid.uuid4().hex}", run_id="r")
    def wf(x: int) -> int:
        return int(s(x))

    assert wf(10) == 30 and wf(10) == 30
    assert ran == [10] and (tmp_path / "imported").read_text() == "train\n"
