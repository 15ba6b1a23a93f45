"""A step calling a tool from a registry a decorator filled at import
(`TOOLS[fn.__name__] = fn; return fn`) does not write the registry: the
decorator ran at import, not at the call. So it does not read back its own
write when it looks the tool up again (stale69's rule refused every agent
with a tool registry, found by test_review63_programs). A tool writing what
the step reads back, and a decorator whose wrapper the global holds, still
count."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

import pytest

from durable._fingerprint.stepstate import state_reread

REGISTRY = """
import durable
TOOLS = {}
SCRATCH = []

def tool(fn):
    TOOLS[fn.__name__] = fn
    return fn

@tool
def search(q):
    return "results for " + q

def note(text):
    SCRATCH.append(text)

@durable.step
def act(name, arg):
    out = TOOLS[name](arg)
    note(out)
    return out

@durable.workflow
def agent():
    return [act("search", "a"), act("search", "b")]
"""

# The tool now writes what the step reads back (`len(SCRATCH)`): refused.
READS_BACK = REGISTRY.replace("    return out\n", "    return out + str(len(SCRATCH))\n")
# The decorator hands back a wrapper that logs each call, which the step reads back: counted.
WRAPPED = (
    REGISTRY.replace("SCRATCH = []", "SCRATCH = []\nCALLS = []")
    .replace(
        "def tool(fn):\n    TOOLS[fn.__name__] = fn\n    return fn\n",
        "def tool(fn):\n    def wrapper(q):\n        CALLS.append(q)\n        return fn(q)\n    TOOLS[fn.__name__] = wrapper\n    return wrapper\n",
    )
    .replace("    out = TOOLS[name](arg)\n", "    out = search(arg) + str(len(CALLS))\n")
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [(REGISTRY, ()), (READS_BACK, ("SCRATCH",)), (WRAPPED, ("CALLS",))],
    ids=["registry", "reads-back", "wrapped"],
)
def test_a_registry_filled_at_import_is_not_the_steps_write(tmp_path: Path, text: str, expected: tuple[str, ...]) -> None:
    name = f"reread_registry_{len(text)}_{abs(hash(text)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(text)
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module(name)
        found = state_reread(inspect.unwrap(module.act))
        assert set(expected) <= set(found) and bool(found) == bool(expected), found
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)
