"""A function sent to a process pool by value (a notebook cell's: its code
travels in the bytes, and a worker started afresh cannot read the cell)
was let through a worker unchecked, though what it calls by reference
(`helpers.h`) the worker imports from the file as it is now: edited while
the block ran, item 2 was computed with the edited helper and the block
recorded as [2, 14] under the fingerprint of the code the run loaded. The
workflow process now sends the fingerprints of those helpers with the
function, and the worker compares its own (fail closed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import twice

pytestmark = pytest.mark.slow

# As IPython runs a cell: its text in linecache under a name no file has, run in `__main__`.
CELLS = '''
import linecache, sys

def run_cell(text, name):
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    exec(compile(text, name, "exec"), vars(sys.modules["__main__"]))
'''

CELL = """
import os
from pathlib import Path
import helpers

def f(x):
    with open(os.environ["COUNT_FILE"], "a") as fh:
        fh.write("f\\n")
    if os.environ.get("EDIT"):  # the user's edit, made while the block runs
        Path("helpers.py").write_text("def h(x):\\n    return x * 7\\n")
    return helpers.h(x)
"""

FLOW = """
import concurrent.futures as cf, multiprocessing as mp
import __main__, durable

@durable.workflow(run_id="r1")
def wf():
    # A worker for each item, started from scratch: it cannot read the cell.
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(1, mp_context=ctx, max_tasks_per_child=1) as pool:
        return durable.loop_over(__main__.f, [1, 2], executor=pool, max_concurrency=1)
"""

RUN = f"""
import cells
cells.run_cell({CELL!r}, "<ipython-input-1-0a1b2c>")
import durable, flow
try:
    print("value", flow.wf())
except durable.DefinitionChangedError as e:
    print("refused", e)
"""


def test_a_helper_of_a_function_sent_by_value_edited_meanwhile_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "cells.py").write_text(CELLS)
    (folder / "flow.py").write_text(FLOW)
    helpers = folder / "helpers.py"
    helpers.write_text("def h(x):\n    return x * 2\n")

    def undo(name: str, where: Path) -> dict[str, str]:
        helpers.write_text("def h(x):\n    return x * 2\n")
        return {}

    first, after_first, second, after_second = twice({"p": folder}, RUN, undo, {"EDIT": "1"})["p"]
    assert "value [2, 14]" not in first and "refused" in first, first  # was `value [2, 14]`
    assert "worker" in first and "__main__.f" in first, first
    assert after_first == ["f"]  # item 2 never ran with the edited helper
    assert "value [2, 4]" in second, second
    assert after_second == ["f", "f", "f"]
