"""A process pool's worker imports the item function's module itself: when
the file was edited after the workflow process imported it (a user's edit
while a long fan-out runs), a worker started later (`max_tasks_per_child`,
a replaced worker, a Dask worker restarted) computed its items with the
edited code, and the block was recorded under the fingerprint of the code
the run had loaded: the edit undone, a re-call replayed values of code that
no longer exists. A worker now checks that the code it loaded has the
fingerprint the workflow process took; other code refuses the item."""

from __future__ import annotations

import concurrent.futures as cf
import importlib
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.scripts import twice

pytestmark = pytest.mark.slow

WORK = '''
import os
from pathlib import Path
from helpers import h

def f(x):
    with open(os.environ["COUNT_FILE"], "a") as fh:
        fh.write("f\\n")
    if os.environ.get("EDIT"):  # the user's edit, made while the block runs
        Path("helpers.py").write_text("def h(x):\\n    return x * 7\\n")
    return h(x)
'''

FLOW = '''
import concurrent.futures as cf, multiprocessing as mp
import durable, work

@durable.workflow(run_id="r1")
def wf():
    # A worker for each item, started from scratch: it imports work.py anew.
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(1, mp_context=ctx, max_tasks_per_child=1) as pool:
        return durable.loop_over(work.f, [1, 2], executor=pool, max_concurrency=1)
'''

RUN = '''
import durable, flow
try:
    print("value", flow.wf())
except durable.DefinitionChangedError as e:
    print("refused", e)
'''


def test_a_worker_that_loaded_edited_code_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "work.py").write_text(WORK)
    (folder / "flow.py").write_text(FLOW)
    helpers = folder / "helpers.py"
    helpers.write_text("def h(x):\n    return x * 2\n")

    def undo(name: str, where: Path) -> dict[str, str]:
        helpers.write_text("def h(x):\n    return x * 2\n")
        return {}

    first, after_first, second, after_second = twice({"p": folder}, RUN, undo, {"EDIT": "1"})["p"]
    # Item 2's worker loaded h as `x * 7`: its value was recorded as [2, 14].
    assert "value [2, 14]" not in first and "refused" in first, first
    assert "worker" in first and "work.f" in first, first
    assert after_first == ["f"]  # item 2 never ran its edited code
    # The code as the run loaded it, run afresh: what a fresh run computes.
    assert "value [2, 4]" in second, second
    assert after_second == ["f", "f", "f"]


STEP_WORK = '''
import os, durable
from helpers import h

@durable.step
def s(x):
    with open(os.environ["COUNT_FILE"], "a") as fh:
        fh.write("s\\n")
    return h(x)
'''

STEP_FLOW = '''
import concurrent.futures as cf, multiprocessing as mp, os
from pathlib import Path
import durable, work

@durable.step
def first():
    if os.environ.get("EDIT"):  # the user's edit, after the run started
        Path("helpers.py").write_text("def h(x):\\n    return x * 7\\n")
    return 0

@durable.workflow(run_id="r1")
def wf():
    first()
    with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        return durable.loop_over(work.s, [1, 2], executor=pool)
'''


def test_a_step_whose_file_was_edited_since_the_run_started_is_refused_on_a_worker(tmp_path: Path) -> None:
    """The block of a step takes the step's fingerprint as of the run's
    start; this process can no longer fingerprint the edited file, and no
    check was made: the worker's items came from the edited code."""
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "work.py").write_text(STEP_WORK)
    (folder / "flow.py").write_text(STEP_FLOW)
    helpers = folder / "helpers.py"
    helpers.write_text("def h(x):\n    return x * 2\n")

    def undo(name: str, where: Path) -> dict[str, str]:
        helpers.write_text("def h(x):\n    return x * 2\n")
        return {}

    first, after_first, second, after_second = twice({"p": folder}, RUN, undo, {"EDIT": "1"})["p"]
    assert "value [7, 14]" not in first and "refused" in first, first
    assert after_first == []
    assert "value [2, 4]" in second, second
    assert after_second == ["s", "s"]


class Inline(cf.Executor):
    """An executor that is not a thread pool (the items travel pickled, as
    to a process) and runs each task here at once: counts the tasks."""

    def __init__(self) -> None:
        self.tasks = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        self.tasks += 1
        done: cf.Future[Any] = cf.Future()
        done.set_result(fn(*args, **kwargs))
        return done


def test_a_worker_refusing_its_code_is_not_tried_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal says the same on every try: the item's retries are not
    spent on it (a resume with the code as wanted gets them whole)."""
    (tmp_path / "wmod46.py").write_text(
        "import durable\n\n@durable.step(retries=2)\ndef s(x):\n    RAN.append(x)\n    return x * 2\n\nRAN = []\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    wmod = importlib.import_module("wmod46")
    step, pool = wmod.s, Inline()

    @durable.step
    def first() -> int:  # the user's edit, after the run started
        (tmp_path / "wmod46.py").write_text((tmp_path / "wmod46.py").read_text().replace("x * 2", "x * 7"))
        return 0

    @durable.workflow(store=str(tmp_path / "store"))
    def wf() -> list[int]:
        first()
        return durable.loop_over(step, [1], executor=pool)

    with pytest.raises(durable.DefinitionChangedError, match=r"loop_over worker loaded wmod46\.s"):
        wf()
    assert wmod.RAN == [] and pool.tasks == 1


ITEM_WORK = '''
import os
from pathlib import Path

def f(item):
    with open(os.environ["COUNT_FILE"], "a") as fh:
        fh.write("f\\n")
    if os.environ.get("EDIT"):  # the user's edit of the items' class, while the block runs
        Path("items.py").write_text(Path("items.py").read_text().replace("* 2", "* 7"))
    return item.value()
'''

ITEMS = '''
class Item:
    def __init__(self, x):
        self.x = x

    def value(self):
        return self.x * 2
'''

ITEM_FLOW = '''
import concurrent.futures as cf, multiprocessing as mp
import durable, work
from items import Item

@durable.workflow(run_id="r1")
def wf():
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(1, mp_context=ctx, max_tasks_per_child=1) as pool:
        return durable.loop_over(work.f, [Item(1), Item(2)], executor=pool, max_concurrency=1)
'''


def test_an_item_whose_class_a_worker_loaded_edited_is_refused(tmp_path: Path) -> None:
    """The item's class travels by reference too: its methods count in the
    item's digest (the identity of the call), and the worker imported them
    from the edited file."""
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "work.py").write_text(ITEM_WORK)
    (folder / "flow.py").write_text(ITEM_FLOW)
    (folder / "items.py").write_text(ITEMS)

    def undo(name: str, where: Path) -> dict[str, str]:
        (folder / "items.py").write_text(ITEMS)
        return {}

    first, after_first, second, after_second = twice({"p": folder}, RUN, undo, {"EDIT": "1"})["p"]
    assert "value [2, 14]" not in first and "refused" in first, first
    assert after_first == ["f"]
    assert "value [2, 4]" in second, second
    assert after_second == ["f", "f", "f"]


PARTIAL_WORK = '''
import os
from pathlib import Path

def f(x, cfg):
    with open(os.environ["COUNT_FILE"], "a") as fh:
        fh.write("f\\n")
    if os.environ.get("EDIT"):  # the user's edit of the bound object's class, while the block runs
        Path("items.py").write_text(Path("items.py").read_text().replace("* 2", "* 7"))
    return cfg.value() * x
'''

PARTIAL_FLOW = '''
import concurrent.futures as cf, functools, multiprocessing as mp
import durable, work
from items import Item

@durable.workflow(run_id="r1")
def wf():
    ctx = mp.get_context("spawn")
    fn = functools.partial(work.f, cfg=Item(1))
    with cf.ProcessPoolExecutor(1, mp_context=ctx, max_tasks_per_child=1) as pool:
        return durable.loop_over(fn, [1, 2], executor=pool, max_concurrency=1)
'''


def test_a_bound_object_whose_class_a_worker_loaded_edited_is_refused(tmp_path: Path) -> None:
    """What a partial binds travels with the function: its class's code
    counts in the digest of the bound values, taken on both sides."""
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "work.py").write_text(PARTIAL_WORK)
    (folder / "flow.py").write_text(PARTIAL_FLOW)
    (folder / "items.py").write_text(ITEMS)

    def undo(name: str, where: Path) -> dict[str, str]:
        (folder / "items.py").write_text(ITEMS)
        return {}

    first, after_first, second, after_second = twice({"p": folder}, RUN, undo, {"EDIT": "1"})["p"]
    assert "value [2, 14]" not in first and "refused" in first, first
    assert after_first == ["f"]
    assert "value [2, 4]" in second, second
    assert after_second == ["f", "f", "f"]
