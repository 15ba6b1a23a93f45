"""A notebook's item function travels to a process pool by value, but what
it reads of the user's modules through an attribute (`helpers.SCALE`,
`helpers.CFG["k"]`), also through a module or helper a default, a
closure or a partial holds, a worker reads from its own import. A worker kept alive
across blocks (a pool or Dask cluster a notebook keeps) still held the
values it imported, while a cell had changed them (or autoreload had loaded
the edited file) in the kernel: the block returned `[2, 4]`, computed with
the old values, and recorded it under the fingerprint of the new ones.
Only the functions such a function calls were compared; now the values it
reads of those modules are too (and what it calls through a submodule,
`pkg.sub.h`, which was not looked at), and a worker holding others refuses.
So is what a partial of a function of a module (sent by reference) reads
through a module it binds (`partial(tools.times, helpers)` reading
`m.CFG["k"]`), which the fingerprint the worker compared did not count."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # a process pool's worker

# As IPython runs a cell: its text in linecache under a name no file has, run in `__main__`.
CELLS = '''
import linecache, sys

def run_cell(text, name):
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    exec(compile(text, name, "exec"), vars(sys.modules["__main__"]))
'''

TOOLS = """
import os

def times(m, x):
    with open(os.environ["COUNT_FILE"], "a") as fh:
        fh.write("f\\n")
    return x * m.CFG["k"]
"""

DEFINE = """
import concurrent.futures as cf, functools, multiprocessing as mp, os
import durable, helpers, pkg.sub, tools

# One worker, kept for the session: forked (and so importing helpers) at the first block.
pool = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("fork"))

def count():
    with open(os.environ["COUNT_FILE"], "a") as fh:
        fh.write("f\\n")

def f(x):
    count()
    return x * helpers.SCALE

def g(x):
    count()
    return x * helpers.CFG["k"]

def p(x):
    count()
    return pkg.sub.h(x)

# What it reads through a default, a closure or a partial's argument.
def a(x, m=helpers):
    count()
    return x * m.SCALE

def b(x, h=helpers.h):
    count()
    return h(x)

def make(m):
    def c(x):
        count()
        return x * m.SCALE
    return c

def times(m, x):
    count()
    return x * m.SCALE

FNS = {"f": f, "f0": f, "g": g, "p": p, "a": a, "b": b, "c": make(helpers), "d": functools.partial(times, helpers)}
FNS["e"] = functools.partial(tools.times, helpers)  # a function of a module: sent by reference

@durable.workflow
def wf(which):
    return durable.loop_over(FNS[which], [1, 2], executor=pool, max_concurrency=1)

def show(which):
    try:
        print(which, "value", wf(which))
    except durable.DefinitionChangedError as e:
        print(which, "refused", e)
"""

CHANGE = """
import importlib, pathlib
helpers.SCALE = 10
helpers.CFG["k"] = 10
pathlib.Path("pkg/sub.py").write_text("def h(x):\\n    return x * 7\\n")
importlib.reload(pkg.sub)  # as autoreload does
"""

RUN = f"""
import cells
cells.run_cell({DEFINE!r}, "<ipython-input-1-0a1b2c>")
cells.run_cell("show('f0')", "<ipython-input-2-1b2c3d>")
cells.run_cell({CHANGE!r}, "<ipython-input-3-2c3d4e>")
cells.run_cell("for k in 'fgpabcde': show(k)", "<ipython-input-4-3d4e5f>")
cells.run_cell("pool.shutdown()", "<ipython-input-5-4e5f60>")
"""


def test_a_module_value_a_cell_changed_is_not_read_old_by_a_kept_worker(tmp_path: Path) -> None:
    (tmp_path / "cells.py").write_text(CELLS)
    (tmp_path / "helpers.py").write_text("SCALE = 2\nCFG = {'k': 2}\n\ndef h(x):\n    return x * SCALE\n")
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub.py").write_text("def h(x):\n    return x * 2\n")
    (out,) = run_each([(tmp_path, RUN, {})])
    assert "f0 value [2, 4]" in out, out
    # Each was `value [2, 4]`: computed with the worker's SCALE, CFG and pkg.sub.h.
    assert [f"{k} refused" in out for k in "fgpabcde"] == [True] * 8, out
    assert "worker" in out, out
    assert (tmp_path / "count").read_text().split() == ["f", "f"]  # the refused items never ran
