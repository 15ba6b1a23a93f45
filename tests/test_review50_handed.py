"""A step handing a module-level list or number to a function of the user's
that changes only its own copy (`items = list(items)` then
`items.append(x)`; `v *= k` of a number, which rebinds the parameter), while
another step reads that global. review49's `helperreads._handed` took each
such hand-off for a write of the global by the step (a log, kept per
process), so every resume in a new process was refused ('arguments changed
... Or LOG, which a writes'), though the step writes nothing. A parameter
rebound to a copy only at some calls (`if ...: items = list(items)`), or to
what may be the same object (`items = items or []`), still writes it."""

from __future__ import annotations

import pytest

from tests.scripts import RUN_WF, run_each

pytestmark = pytest.mark.slow  # one interpreter forking the phases

FLOW = """
import os, durable
{head}

@durable.step
def a(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("a\\n")
    return {call}

@durable.step
def b(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("b\\n")
    return {read}

@durable.workflow(run_id="r1")
def wf():
    out = (a(10), b(10))
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""

COPIED = "LOG = [1]\ndef fmt(items, x):\n    {first}\n    items.append(x)\n    return len(items)"
# name: (module head, a's call, b's read, whether the resume replays)
CASES = {
    "list_copy": (COPIED.format(first="items = list(items)"), "fmt(LOG, x)", "len(LOG)", True),
    "sorted_copy": (COPIED.format(first="items = sorted(items)"), "fmt(LOG, x)", "len(LOG)", True),
    "method_copy": (COPIED.format(first='"""Doc."""\n    items = items.copy()'), "fmt(items=LOG, x=x)", "len(LOG)", True),
    "number": ("RATE = 2\ndef scaled(v, k):\n    v *= k\n    return v", "scaled(RATE, x)", "RATE", True),
    # Still a write of LOG: a copy at some calls only, or maybe the same list.
    "copy_at_some_calls": (COPIED.format(first="if x > 100:\n        items = list(items)"), "fmt(LOG, x)", "len(LOG)", False),
    "maybe_same": (COPIED.format(first="items = items or []"), "fmt(LOG, x)", "len(LOG)", False),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str, list[str]]]:
    jobs, folders = [], []
    for head, call, read, _ in CASES.values():
        folder = tmp_path_factory.mktemp("handed")
        (folder / "flow.py").write_text(FLOW.format(head=head, call=call, read=read))
        jobs += [(folder, RUN_WF, {"STOP": "1"}), (folder, RUN_WF, {})]
        folders.append(folder)
    outs = run_each(jobs)
    return {
        name: (outs[2 * i], outs[2 * i + 1], (folder / "count").read_text().split())
        for i, (name, folder) in enumerate(zip(CASES, folders, strict=True))
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_global_handed_to_a_function_changing_its_own_copy_is_not_written(
    runs: dict[str, tuple[str, str, list[str]]], name: str
) -> None:
    first, resumed, count = runs[name]
    assert "suspended" in first and count[:2] == ["a", "b"], first
    if CASES[name][3]:  # was: refused, "arguments changed ... Or LOG, which a writes"
        assert "value (" in resumed and count == ["a", "b"], (resumed, count)
    else:
        assert "refused" in resumed and count == ["a", "b"], (resumed, count)
