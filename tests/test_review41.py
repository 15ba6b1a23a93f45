"""Review of round 41's changes: faults found, each with its reproduction."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from durable._fingerprint.fingerprint import fingerprint_function

FLOW = """
import os, random

@durable.step
def where(name):
    with open(os.environ["R41_COUNT"], "a") as f:
        f.write("where\\n")
    return os.path.join("out", name)

@durable.step
def drawn():
    return random.random()

@durable.workflow
def located(name):
    return where(name)
"""


def _load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **files: str) -> None:
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text)
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)


def test_a_module_imported_later_that_calls_os_leaves_a_step_using_os_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper module of the user's imported after a run completed calls
    `os.makedirs(...)` at import: no seed of any library a step draws
    from, yet the completed run of a step using `os.path` was refused
    ("where: now uses global os state"), in the process that ran it (a
    notebook importing another module) and in any process loading another
    set of modules (a resume from the CLI, without the script). A seed set
    there still counts for a step drawing from `random`."""
    _load(tmp_path, monkeypatch, r41_flow=FLOW)
    monkeypatch.setenv("R41_COUNT", str(tmp_path / "count"))
    import r41_flow  # type: ignore[import-not-found]

    flow = r41_flow.located.with_options(store=str(tmp_path / "store"))
    before, drew = fingerprint_function(r41_flow.where), fingerprint_function(r41_flow.drawn)
    assert flow("a") == "out/a"
    (tmp_path / "r41_helper.py").write_text("import os\nos.makedirs('made', exist_ok=True)\n")
    (tmp_path / "r41_seeds.py").write_text("import random\nrandom.seed(3)\n")
    monkeypatch.chdir(tmp_path)
    for name in ("r41_helper", "r41_seeds"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    __import__("r41_helper")
    assert fingerprint_function(r41_flow.where) == before
    assert flow("a") == "out/a"  # was DefinitionChangedError
    assert (tmp_path / "count").read_text().split() == ["where"]
    __import__("r41_seeds")
    assert fingerprint_function(r41_flow.drawn) != drew
