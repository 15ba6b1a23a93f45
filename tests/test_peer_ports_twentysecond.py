"""A twenty-second round of the peers' own test cases: code a step is
given by name. PraisonAI resolves an agent's tools from a module named by
a string (`ToolOverrideLoader.load_from_module("mypackage.tools")` in
praisonai/templates/tool_override.py, `resolve_tools(["internet_search"])`
in examples/tools/example_tools_resolve.py); LangGraph users build a
graph's nodes from `f"{package}.{node}"`; Hydra's and Prefect's users name
a target in configuration (`{"_target_": "models.net"}`,
`entrypoint="flows.py:my_flow"`) resolved with `pydoc.locate` or
`pkgutil.resolve_name`; joblib's test_memory.py
(`test_memory_func_with_kwonly_args`-style reuse) and Prefect's
`INPUTS + TASK_SOURCE` keep a cached call's output until its code changes;
LangGraph's `Send` fans out one branch per tool; PraisonAI's handoffs
pass the question to another agent, a child run.
The step's code names no module, the name is its argument: the tool's
module edited (and reloaded, as the next process imports it afresh), the
completed run called again was answered from its record, the resumed
call replayed, and the cached call was a hit, each with what the old
tool computed. Now the modules the arguments' strings name count in the
call's identity by their code: refused under "refuse", run again under
"rerun", a miss in the cache; unedited, the call replays. In-process;
executions are counted by the step bodies."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.peer22_agents import (
    CALLS,
    Agent,
    by_entrypoint,
    by_import,
    by_node,
    by_target,
    cached_tool,
    send,
    specialist,
)


def _tool_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, package: bool) -> Path:
    """A module `name` (or a package `name` with a module `search`) whose
    `search(q)` tags its answer with "v1"; the file to edit."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # an edit of the same size in the same second
    folder = tmp_path / name if package else tmp_path
    folder.mkdir(exist_ok=True)
    if package:
        (folder / "__init__.py").write_text("")
    path = folder / ("search.py" if package else f"{name}.py")
    path.write_text('def search(q):\n    return q + "-v1"\n')
    return path


def _edit(path: Path, module: str) -> None:
    path.write_text('def search(q):\n    return q + "-v2"\n')
    importlib.reload(sys.modules[module])  # as the next process imports it


def _call(shape: str, name: str) -> tuple[Any, ...]:
    if shape == "by_import":
        return (by_import, name, "x")
    if shape == "by_entrypoint":
        return (by_entrypoint, f"{name}:search", "x")
    if shape == "by_target":
        return (by_target, {"_target_": f"{name}.search"}, "x")
    return (by_node, name, "search", "x")


SHAPES = ["by_import", "by_entrypoint", "by_target", "by_node"]


@pytest.mark.parametrize("shape", SHAPES)
def test_an_agents_tool_module_named_by_an_argument_counts_by_its_code(
    shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    name = f"tools22_{shape}"
    path = _tool_module(tmp_path, monkeypatch, name, package=shape == "by_node")
    monkeypatch.setitem(CALLS, shape, 0)
    step, *args = _call(shape, name)

    @durable.workflow(run_id="agent")
    def agent() -> str:
        return str(step(*args))

    assert agent() == "x-v1"
    assert agent() == "x-v1"  # the completed run, unedited: answered, not run again
    assert CALLS[shape] == 1
    _edit(path, f"{name}.search" if shape == "by_node" else name)
    with pytest.raises(durable.DefinitionChangedError) as refused:
        agent()  # was "x-v1": the old tool's answer
    assert name in str(refused.value) and shape in str(refused.value)
    assert CALLS[shape] == 1
    assert agent.with_options(on_change="rerun")() == "x-v2"
    assert agent() == "x-v2"
    assert CALLS[shape] == 2


def test_a_resumed_agent_reruns_only_the_tool_call_whose_module_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangGraph's interrupt before a human's decision: the run suspends
    after the tool call; the tool edited meanwhile, the resume under
    "rerun" runs that call again (it replayed the old answer) and not the
    step before it, which names no module."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    path = _tool_module(tmp_path, monkeypatch, "tools22_resumed", package=False)
    monkeypatch.setitem(CALLS, "by_import", 0)
    plans: list[str] = []

    @durable.step
    def plan(q: str) -> str:
        plans.append(q)
        return q.upper()

    @durable.workflow(run_id="graph", on_change="rerun")
    def graph(q: str, decision: str | None = None) -> str:
        found = by_import("tools22_resumed", plan(q))
        if decision is None:
            durable.suspend("waiting for a human")
        return f"{found} {decision}"

    with pytest.raises(durable.Suspended):
        graph("x")
    _edit(path, "tools22_resumed")
    assert graph.resume("graph", decision="ok").value == "X-v2 ok"  # was "X-v1 ok"
    assert (plans, CALLS["by_import"]) == (["x"], 2)


def test_a_send_fan_out_over_tool_names_counts_their_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangGraph's `Send` fan-out, one branch per tool: `loop_over` over
    the tools' names, recorded once; the completed run replayed the old
    answers after a tool was edited."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    path = _tool_module(tmp_path, monkeypatch, "tools22_fanout", package=False)
    monkeypatch.setitem(CALLS, "send", 0)

    @durable.workflow(run_id="fan")
    def fan(targets: list[str]) -> list[str]:
        return durable.loop_over(send, targets)

    targets = ["tools22_fanout:search", "tools22_fanout.search"]
    assert fan(targets) == fan(targets) == ["x-v1", "x-v1"]
    assert CALLS["send"] == 2
    _edit(path, "tools22_fanout")
    with pytest.raises(durable.DefinitionChangedError):
        fan(targets)  # was ["x-v1", "x-v1"]
    assert fan.with_options(on_change="rerun")(targets) == ["x-v2", "x-v2"]
    assert CALLS["send"] == 4


def test_a_handoff_to_an_agent_given_its_tools_module_counts_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PraisonAI's handoffs: the triage agent hands the question to a
    specialist agent, a child run, naming its tools' module. The parent's
    record of the child was replayed after the tool was edited."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    path = _tool_module(tmp_path, monkeypatch, "tools22_handoff", package=False)
    monkeypatch.setitem(CALLS, "by_import", 0)

    @durable.workflow(run_id="triage")
    def triage(q: str) -> str:
        return specialist("tools22_handoff", q)

    assert triage("x") == triage("x") == "x-v1"
    assert CALLS["by_import"] == 1
    _edit(path, "tools22_handoff")
    with pytest.raises(durable.DefinitionChangedError):
        triage("x")  # was "x-v1"
    assert triage.with_options(on_change="rerun")("x") == "x-v2"
    assert CALLS["by_import"] == 2


def test_an_agent_holding_its_tools_module_name_counts_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name on the agent (`self.tools_module`), the step its method:
    the instance is an argument of every call, and its strings count."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    path = _tool_module(tmp_path, monkeypatch, "tools22_method", package=False)
    monkeypatch.setitem(CALLS, "act", 0)
    researcher = Agent("researcher", "tools22_method")

    @durable.workflow(run_id="researcher")
    def research(q: str) -> str:
        return researcher.act(q)

    assert research("x") == research("x") == "x-v1"
    assert CALLS["act"] == 1
    _edit(path, "tools22_method")
    with pytest.raises(durable.DefinitionChangedError):
        research("x")  # was "x-v1"
    assert research.with_options(on_change="rerun")("x") == "x-v2"
    assert CALLS["act"] == 2


def test_a_cached_tool_call_misses_once_the_named_module_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefect's INPUTS + TASK_SOURCE, joblib's Memory: called outside any
    run, a hit until the module its argument names is edited."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    path = _tool_module(tmp_path, monkeypatch, "tools22_cached", package=False)
    monkeypatch.setitem(CALLS, "cached_tool", 0)
    assert cached_tool("tools22_cached", "x") == "x-v1"
    assert cached_tool("tools22_cached", "x") == "x-v1"
    assert CALLS["cached_tool"] == 1
    _edit(path, "tools22_cached")
    assert cached_tool("tools22_cached", "x") == "x-v2"  # was a hit: "x-v1"
    assert cached_tool("tools22_cached", "x") == "x-v2"
    assert CALLS["cached_tool"] == 2


def _embed(texts: list[str]) -> int:  # a library looked up by a constant: no name given
    return len(importlib.import_module("json").dumps(texts))


def test_a_lookup_by_a_constant_takes_no_name_from_the_arguments() -> None:
    """A step embedding thousands of texts that imports a library by a
    constant name is no step given a module: its arguments are not looked
    through (past 4096 strings, one given names would count as changed
    in every new process)."""
    from durable._core.named import names_modules

    assert [names_modules(f) for f in (_embed, by_import, by_node, by_target, send)] == [False, *[True] * 4]
