"""A function sent to a process pool by value (a notebook cell's, a
script's) calling a class of the user's modules (`helpers.Scaler(2).apply(x)`)
was refused on every run, on the first block too: the worker check took
the class for a function and could not fingerprint it. The class now
counts by its methods' fingerprints and its `class` statement, on both
sides; a kept worker holding the class as it was before a reload in the
kernel still refuses. And a Dask client a global holds, which the body
hands to `loop_over`, is no input of the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from durable._fingerprint.fingerprint import fingerprint_function
from tests.scripts import run_each
from tests.test_stale58_workers import CELLS

pytestmark = pytest.mark.slow  # a process pool's worker

DEFINE = """
import concurrent.futures as cf, multiprocessing as mp, os
import durable, helpers

# One worker, kept for the session: forked (and so importing helpers) at the first block.
pool = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("fork"))

def item(x):
    with open(os.environ["COUNT_FILE"], "a") as fh:
        fh.write("f\\n")
    return helpers.Scaler(2).apply(x)

@durable.workflow
def wf(n):
    return durable.loop_over(item, list(range(1, n + 1)), executor=pool, max_concurrency=1)

def show(n):
    try:
        print(n, "value", wf(n))
    except durable.DefinitionChangedError as e:
        print(n, "refused", e)
"""

CHANGE = """
import importlib, pathlib
pathlib.Path("helpers.py").write_text(pathlib.Path("helpers.py").read_text().replace("x * self.k", "x * self.k * 10"))
importlib.reload(helpers)  # as autoreload does: the kept worker still has the old class
"""

RUN = f"""
import cells
cells.run_cell({DEFINE!r}, "<ipython-input-1-0a1b2c>")
cells.run_cell("show(2)", "<ipython-input-2-1b2c3d>")
cells.run_cell("show(2)", "<ipython-input-3-2c3d4e>")
cells.run_cell({CHANGE!r}, "<ipython-input-4-3d4e5f>")
cells.run_cell("show(3)", "<ipython-input-5-4e5f60>")
cells.run_cell("pool.shutdown()", "<ipython-input-6-5f6071>")
"""

HELPERS = """
class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return x * self.k
"""


def test_a_class_of_your_modules_called_in_a_pool_worker_counts_by_its_code(tmp_path: Path) -> None:
    (tmp_path / "cells.py").write_text(CELLS)
    (tmp_path / "helpers.py").write_text(HELPERS)
    (out,) = run_each([(tmp_path, RUN, {"COUNT_FILE": str(tmp_path / "count")})])
    assert out.count("2 value [2, 4]") == 2, out  # was `2 refused`, every time
    assert "3 refused" in out and "worker" in out, out  # the kept worker's Scaler is the old one
    assert (tmp_path / "count").read_text().split() == ["f", "f"]  # once each; the refused never ran


# A Dask client in a global the body hands to loop_over, bound by two
# statements (None, then the client a script connects): made without a
# cluster, as its id is all that differs from process to process.
CLIENTS = """
    import uuid

    import distributed


    def connect():
        client = distributed.Client.__new__(distributed.Client)
        client.id, client.status = f"Client-{uuid.uuid4()}", "running"
        return client


    CLIENT = None
    CLIENT = connect()


    def body(xs):
        return CLIENT, xs
"""


def test_a_dask_client_a_global_holds_is_no_input(load: Any) -> None:
    """Where code runs is not what it computes: a client has a new id in
    each process and was counted by its attributes, so every resume of a
    workflow handing it to loop_over was refused ("now CLIENT changed");
    it counts by its statements, as an executor's other uses do."""
    first = fingerprint_function(load("clients60", CLIENTS).body).value
    assert fingerprint_function(load("clients60", CLIENTS).body).value == first  # another client
