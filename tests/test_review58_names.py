"""review58: a step given its tool's module by name through a configuration
object that is neither a dict nor a plain object of the user's: an
`argparse.Namespace` (`args.tool` of a command line), a
`types.SimpleNamespace`, a dataclass with `slots=True` (no `__dict__`), a
`MappingProxyType` or a `ChainMap` (Hydra's DictConfig is a Mapping, not a
dict). The names in them were not read (`givennames._strings`): the tool
edited, the completed run was answered with the old tool's output. Now
refused, and run again under "rerun". The same for a plugin looked up by
its entry point's name (`entry_points(group=g, name=name)`), the module it
loads declared in a distribution's metadata. In-process; the step counts
its executions."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import durable
from tests.review58_steps import CALLS, agent, plugin

KINDS = ["argparse", "simple_namespace", "slots", "mapping_proxy", "chain_map"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_named_in_a_configuration_object_counts_by_its_code(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # an edit of the same size in the same second
    module = f"tools58_{kind}"
    path = tmp_path / f"{module}.py"
    path.write_text('def search(q):\n    return q + "-v1"\n')
    monkeypatch.setitem(CALLS, "by_config", 0)
    assert agent(kind, module, "x") == "x-v1"
    assert agent(kind, module, "x") == "x-v1"  # unedited: answered from the record
    assert CALLS["by_config"] == 1
    path.write_text('def search(q):\n    return q + "-v2"\n')
    importlib.reload(sys.modules[module])  # as the next process imports it
    with pytest.raises(durable.DefinitionChangedError) as refused:
        agent(kind, module, "x")  # was "x-v1": the old tool's answer
    assert module in str(refused.value)
    assert CALLS["by_config"] == 1
    assert agent.with_options(on_change="rerun")(kind, module, "x") == "x-v2"
    assert CALLS["by_config"] == 2


def test_a_plugin_named_by_its_entry_point_counts_by_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    info = tmp_path / "review58_plugins-1.0.dist-info"  # as `pip install -e .` declares it
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: review58-plugins\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[review58.tools]\nsearch = tools58_plugin:search\n")
    path = tmp_path / "tools58_plugin.py"
    path.write_text('def search(q):\n    return q + "-v1"\n')
    monkeypatch.setitem(CALLS, "by_entry_point", 0)
    assert plugin("search", "x") == plugin("search", "x") == "x-v1"
    assert CALLS["by_entry_point"] == 1
    path.write_text('def search(q):\n    return q + "-v2"\n')
    importlib.reload(sys.modules["tools58_plugin"])
    with pytest.raises(durable.DefinitionChangedError, match="tools58_plugin"):
        plugin("search", "x")  # was "x-v1"
    assert plugin.with_options(on_change="rerun")("search", "x") == "x-v2"
    assert CALLS["by_entry_point"] == 2
