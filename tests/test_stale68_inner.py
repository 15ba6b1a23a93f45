"""A step called where steps run plainly (in another step's body, in a
`loop_over` item's function) has no record of its own: what it writes that
another step reads is written by the call that runs it, whose record must
count it, as that record counts what its own code writes (`written`). It did
not: `outer` calling `add`, which appends to `TOTAL` that `total` reads,
recorded nothing of `TOTAL`, so a resume in a new process replayed `outer`
without the appends and `total()` read the `TOTAL` the import left (`value 0`
for 6); so did `loop_over(lambda x: add(x), ...)` and `loop_over(via, ...)`
(where `loop_over(add, ...)` was refused), a step running a workflow of its
own whose steps do (`outer_run`), and items of such a block kept
by another process were restored without their appends (`value 3`). So
did a step calling `call_tool(kind, x)`, which imports the module `kind`
names: the tool edited, the completed run called again answered what the
old tool computed (`value 2` for 101), where `call_tool` itself is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes, forked

FLOW = """
import importlib, os, durable

CURRENT = ""  # the flow being run: what `add` counts under

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

TOTAL = []

@durable.step
def add(x):
    count(CURRENT)
    TOTAL.append(x)
    return x

@durable.step
def total():
    return sum(TOTAL)

def via(x):
    return add(x)

@durable.step
def outer(xs):
    return [add(x) for x in xs]

@durable.step
def outer_via(xs):
    return [via(x) for x in xs]

@durable.workflow
def sub(xs):
    return [add(x) for x in xs]

@durable.step
def outer_run(xs):
    return sub.with_options(run_id="sub68")(xs)

def flaky(x):
    if x == 3 and os.environ.get("FAIL"):
        raise RuntimeError("item 3 fails in the first process")
    return add(x)

@durable.step
def call_tool(kind, x):
    return importlib.import_module(kind).run(x)

@durable.step
def agent(kind, x):
    return call_tool(kind, x)

@durable.workflow
def wf(mode):
    if mode == "tool":
        return agent("tools68", 1)
    if mode == "step":
        outer([1, 2, 3])
    elif mode == "helper":
        outer_via([1, 2, 3])
    elif mode == "lambda":
        durable.loop_over(lambda x: add(x), [1, 2, 3])
    elif mode == "items":
        durable.loop_over(via, [1, 2, 3])
    elif mode == "run":
        outer_run([1, 2, 3])
    else:
        durable.loop_over(flaky, [1, 2, 3], checkpoint_items=True)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return total()
"""

RUN = """
import durable, flow, os
for mode in os.environ["MODES"].split():
    flow.CURRENT = mode
    try:
        print(mode, "value", flow.wf.with_options(run_id=mode)(mode))
    except durable.Suspended:
        print(mode, "suspended")
    except durable.DefinitionChangedError as e:
        print(mode, "refused", " ".join(str(e).split()))
    except RuntimeError as e:
        print(mode, "failed", e)
"""

MODES = ("step", "helper", "lambda", "items", "run", "kept", "tool")


def _said(out: str) -> dict[str, str]:
    return {line.split(" ", 1)[0]: line for line in out.splitlines() if line.split(" ", 1)[0] in MODES}


def test_what_a_step_run_plainly_writes_counts_for_the_call_running_it(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    tool = tmp_path / "tools68.py"
    tool.write_text("def run(x):\n    return x + 1\n")
    modes = " ".join(MODES)
    first = run_each([(tmp_path, RUN, {"MODES": modes, "STOP": "1", "FAIL": "1"})])[0]
    tool.write_text("def run(x):\n    return x + 100\n")
    second = run_each([(tmp_path, RUN, {"MODES": modes})])[0]
    before, after = _said(first), _said(second)
    counts = (tmp_path / "count").read_text().split()
    for mode in MODES[:5]:
        assert "suspended" in before[mode], first
        # The appends `outer` (or the block, or the run `outer_run` ran) made are not in a new
        # process: refused, as `loop_over(add, ...)` is, never the import's TOTAL read (`value 0`).
        assert "refused" in after[mode] and "TOTAL" in after[mode], second
        assert counts.count(mode) == 3, counts
    # Items 1 and 2 kept by the first process are not restored without their appends:
    # every item runs again here (`value 3` before, items 1 and 2 restored).
    assert "failed" in before["kept"] and after["kept"] == "kept value 6", (first, second)
    assert counts.count("kept") == 5, counts
    # The tool `agent` ran through `call_tool` was edited: refused, naming it.
    assert before["tool"] == "tool value 2", first
    assert "refused" in after["tool"] and "tools68" in after["tool"], second
