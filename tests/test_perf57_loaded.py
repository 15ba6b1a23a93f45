"""What the rules looking through every loaded module of the user's keep
for each module from one set of loaded modules to the next
(`loaded.EachModule`; `elsewhere`'s index of their writes, made up to date
rather than anew at each import) is never stale: a module imported after
the first call that sets a global a step reads counts (a resume after its
edit is refused), a module reloaded with other text counts by its new
text, and a module deleted from `sys.modules` no longer counts, each as a
fingerprint computed with nothing kept. In-process; executions counted by
the step's body."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable
from durable._fingerprint import elsewhere
from durable._fingerprint.fingerprint import fingerprint_function
from durable._fingerprint.memo import memo_fingerprint

FLOW = """\
import durable
import {settings}

LOG = {log!r}


@durable.step
def work(x):
    with open(LOG, "a") as f:
        f.write("x")
    return x * {settings}.CFG["k"]


@durable.workflow
def flow(x):
    out = work(x)
    durable.suspend("looked at")
    return out
"""
# The same value either way: only the statement's text tells them apart.
PLUGIN = 'import {settings}\n\n{settings}.CFG["k"] = {rate}\n'


@pytest.fixture
def mods(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, object]]:
    suffix = tmp_path.name.replace("-", "_")
    names = {key: f"p57_{key}_{suffix}" for key in ("settings", "flow", "plugin")}
    log = tmp_path / "calls.log"
    (tmp_path / f"{names['settings']}.py").write_text('CFG = {"k": 1}\n')
    (tmp_path / f"{names['flow']}.py").write_text(FLOW.format(settings=names["settings"], log=str(log)))
    (tmp_path / f"{names['plugin']}.py").write_text(PLUGIN.format(settings=names["settings"], rate="2"))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # an edit of the same size in the same second
    flow = importlib.import_module(names["flow"])
    yield {"flow": flow, "names": names, "path": tmp_path, "log": log}
    for name in names.values():
        sys.modules.pop(name, None)


def _plugin(mods: dict[str, object]) -> types.ModuleType:
    return importlib.import_module(mods["names"]["plugin"])  # type: ignore[index]


def _edit(mods: dict[str, object]) -> None:
    """The plugin's statement edited, the value it sets the same, and reloaded (as the next process imports it)."""
    names, path = mods["names"], Path(mods["path"])  # type: ignore[arg-type]
    (path / f"{names['plugin']}.py").write_text(PLUGIN.format(settings=names["settings"], rate="1 + 1"))  # type: ignore[index]
    importlib.reload(sys.modules[names["plugin"]])  # type: ignore[index]


def _kept(step: object) -> str:
    """The step's fingerprint as a call checks it: memoised, computed again when what it read changed."""
    return memo_fingerprint(step.__wrapped__).value  # type: ignore[attr-defined]


def _afresh(step: object) -> str:
    """The step's fingerprint with nothing kept for the loaded modules: the index made from every one."""
    elsewhere._INDEX[0] = elsewhere._Index(None)
    elsewhere._PLACED.clear()
    return fingerprint_function(step.__wrapped__).value  # type: ignore[attr-defined,no-any-return]


def test_a_module_imported_after_the_first_call_counts(mods: dict[str, object]) -> None:
    flow = mods["flow"].flow  # type: ignore[attr-defined]
    with pytest.raises(durable.Suspended):
        flow.with_options(run_id="first")(3)  # the index made before the plugin is imported
    _plugin(mods)  # sets CFG["k"], which the step reads
    with pytest.raises(durable.Suspended):
        flow.with_options(run_id="r")(3)
    assert Path(mods["log"]).read_text() == "xx"  # type: ignore[arg-type]
    _edit(mods)
    with pytest.raises(durable.DefinitionChangedError, match="work"):
        flow.resume("r")
    assert Path(mods["log"]).read_text() == "xx"  # type: ignore[arg-type]


def test_a_reloaded_module_counts_by_its_new_text(mods: dict[str, object]) -> None:
    step = mods["flow"].work  # type: ignore[attr-defined]
    _plugin(mods)
    before = _kept(step)
    _edit(mods)
    assert _kept(step) != before
    assert _kept(step) == _afresh(step)


def test_a_module_deleted_from_sys_modules_no_longer_counts(mods: dict[str, object]) -> None:
    step = mods["flow"].work  # type: ignore[attr-defined]
    _kept(step)  # the index made before the plugin is imported
    _plugin(mods)
    with_plugin = _kept(step)
    del sys.modules[mods["names"]["plugin"]]  # type: ignore[index]
    # CFG["k"] is still 2 (its value counts): the plugin's statement no longer does
    assert _kept(step) != with_plugin
    assert _kept(step) == _afresh(step)
