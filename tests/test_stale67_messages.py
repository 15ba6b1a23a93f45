"""What a refusal names as its cause.

- A step whose registry tool (`TOOLS[name](q)`, a decorator filled it)
  reads a memory the first step writes, in a module whose logger the
  process used before the run (`LOG.info("starting")`): the resume in a
  new process is refused, as it must be, but as "definition changed" with
  "the contents of flow.LOG changed", since a logger counted by its
  attributes counted `_cache`, the levels it was asked about, which each
  `LOG.info` fills. A logger counts without it now, and the refusal names
  what the first step wrote (`MEM, which a writes and another step
  reads`).
- Two steps named `a` in two modules, one writing a global another step
  reads: a refusal of the other's changed arguments named the first's
  global (`WRITERS` was keyed by the bare name); keyed by the step's
  name and fingerprint now."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes

FLOW = """
import durable, logging, os
LOG = logging.getLogger("s67agent")
MEM = []
TOOLS = {}
def tool(fn):
    TOOLS[fn.__name__] = fn
    return fn
@tool
def recall(q):
    LOG.info("recall %s", q)
    return len(MEM)

@durable.step
def a(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("a\\n")
    LOG.info("a %s", x)
    MEM.append(x)
    return x

@durable.step
def b(q):
    return TOOLS["recall"](q)

@durable.workflow(run_id="r1")
def wf():
    a(5)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return b("q")
"""

# Two modules with a step `a`: w1's writes STATE, which its b reads; w2's writes nothing.
WRITER = """
import durable
STATE = {}
@durable.step
def a(x):
    STATE["k"] = x
    return x
@durable.step
def b():
    return STATE.get("k")
@durable.workflow
def w1(x):
    return a(x), b()
"""
PLAIN = """
import durable, os
@durable.step
def a(x):
    return x
@durable.workflow(run_id="r2")
def w2():
    v = a(os.environ["ARG"])
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return v
"""

RUN = """
import os, durable, flow, writer, plain
if os.environ.get("STOP"):
    flow.LOG.info("starting")
for name, wf in (("flow", flow.wf), ("plain", plain.w2)):
    try:
        print(name, "value", wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused", repr(str(e).splitlines()[:2]))
    if name == "flow":
        writer.w1(3)  # its `a` noted what it writes
"""


def test_a_refusal_names_the_write_of_the_step_it_is_about(tmp_path: Path) -> None:
    for name, text in (("flow", FLOW), ("writer", WRITER), ("plain", PLAIN)):
        (tmp_path / f"{name}.py").write_text(text)
    first, second = run_each([(tmp_path, RUN, {"STOP": "1", "ARG": "one"}), (tmp_path, RUN, {"ARG": "two"})])
    assert first.split() == ["flow", "suspended", "plain", "suspended"], first
    flow, plain = second.splitlines()
    # Was: "... was recorded with definition ... changed:", "- a: the contents of flow.LOG changed: ...".
    assert flow.startswith("flow refused ") and "is not the call made there now" in flow, flow
    assert "MEM, which a writes and another step reads" in flow and "LOG" not in flow, flow
    # Was: "- a: STATE, which a writes and another step reads, ... Or its arguments changed".
    assert plain.startswith("plain refused ") and "STATE" not in plain, plain
    assert "- a: arguments changed: called now as a('two')" in plain, plain
    assert (tmp_path / "count").read_text().split() == ["a"]
