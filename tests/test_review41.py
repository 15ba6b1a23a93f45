"""Review of round 41's changes: faults found, each with its reproduction."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable
from durable._fingerprint.fingerprint import fingerprint_function

FLOW = """
import os, random
import durable

@durable.step
def where(name):
    with open(os.environ["R41_COUNT"], "a") as f:
        f.write("where\\n")
    return os.path.join("out", name)

@durable.step
def drawn():
    return random.random()

@durable.workflow
def located(name):
    return where(name)
"""


@pytest.fixture(autouse=True)
def _forget_modules() -> Iterator[None]:
    """The modules a test imports leave with it: one seeding `random` at
    import, left loaded, made every later step drawing from `random` in
    this worker count its seed (a resume in a child process refused)."""
    yield
    for name in [n for n in sys.modules if n.startswith("r41_")]:
        del sys.modules[name]


def _load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **files: str) -> None:
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text)
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)


def test_a_module_imported_later_that_calls_os_leaves_a_step_using_os_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper module of the user's imported after a run completed calls
    `os.makedirs(...)` at import: no seed of any library a step draws
    from, yet the completed run of a step using `os.path` was refused
    ("where: now uses global os state"), in the process that ran it (a
    notebook importing another module) and in any process loading another
    set of modules (a resume from the CLI, without the script). A seed set
    there still counts for a step drawing from `random`."""
    _load(tmp_path, monkeypatch, r41_flow=FLOW)
    monkeypatch.setenv("R41_COUNT", str(tmp_path / "count"))
    import r41_flow  # type: ignore[import-not-found]

    flow = r41_flow.located.with_options(store=str(tmp_path / "store"))
    before, drew = fingerprint_function(r41_flow.where), fingerprint_function(r41_flow.drawn)
    assert flow("a") == "out/a"
    (tmp_path / "r41_helper.py").write_text("import os\nos.makedirs('made', exist_ok=True)\n")
    (tmp_path / "r41_seeds.py").write_text("import random\nrandom.seed(3)\n")
    monkeypatch.chdir(tmp_path)
    for name in ("r41_helper", "r41_seeds"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    __import__("r41_helper")
    assert fingerprint_function(r41_flow.where) == before
    assert flow("a") == "out/a"  # was DefinitionChangedError
    assert (tmp_path / "count").read_text().split() == ["where"]
    __import__("r41_seeds")
    assert fingerprint_function(r41_flow.drawn) != drew


LOGGED = """
import os
import durable

LOG = []

def counted(name):
    with open(os.environ["R41_COUNT"], "a") as f:
        f.write(name + "\\n")

@durable.step
def hear(msg):
    counted("hear")
    LOG.append(msg)
    return msg

@durable.step
def gate():
    if os.path.exists(os.environ["R41_FAIL"]):
        raise RuntimeError("crash")

@durable.step
def summary():
    return f"{len(LOG)}: {' '.join(LOG)}"

@durable.workflow(run_id="chat")
def chat():
    hear("a")
    hear("b")
    gate()
    return summary()

KEPT = {}

@durable.step
def keep(key):
    if key == "y" and os.path.exists(os.environ["R41_FAIL"]):
        raise RuntimeError("crash")
    counted("keep")
    KEPT[key] = 1
    return key

@durable.step
def kept():
    return ",".join(sorted(KEPT))

@durable.workflow(run_id="items")
def each():
    durable.loop_over(keep, ["x", "y"], checkpoint_items=True)
    return kept()

N = 0

@durable.step
def bump():
    global N
    counted("bump")
    N += 1

@durable.step
def total():
    return N

@durable.workflow(run_id="count")
def count():
    bump()
    bump()
    gate()
    return total()
"""


def test_a_log_a_module_executed_again_left_empty_is_not_replayed_in_the_same_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The steps' log (`LOG.append`) that a later step reads replays only in
    the process that made the record: a new process's import left it empty.
    The module executed again in that same process (a notebook's cell run
    again, `importlib.reload`) leaves it empty too: the run failed after
    both `hear`s, the reload, then the resume replayed them and returned
    "0: " (what no run returns), and the item `x` kept by `loop_over` was
    taken with `KEPT` empty: "y"; a count (`global N; N += 1`) the import set
    to 0 again was replayed: 0. Now each is a call of another log: the
    resume is refused, and under rerun they run again."""
    _load(tmp_path, monkeypatch, r41_logged=LOGGED)
    fail, count = tmp_path / "fail", tmp_path / "count"
    monkeypatch.setenv("R41_COUNT", str(count))
    monkeypatch.setenv("R41_FAIL", str(fail))
    import r41_logged  # type: ignore[import-not-found]

    store = str(tmp_path / "store")
    fail.touch()
    for wf in (r41_logged.chat, r41_logged.each, r41_logged.count):
        with pytest.raises(RuntimeError, match="crash"):
            wf.with_options(store=store)()
    fail.unlink()
    flow = importlib.reload(r41_logged)
    with pytest.raises(durable.DefinitionChangedError, match="LOG"):
        flow.chat.with_options(store=store)()  # was "0: "
    assert flow.chat.with_options(store=store, on_change="rerun")() == "2: a b"
    assert flow.each.with_options(store=store)() == "x,y"  # was "y"
    with pytest.raises(durable.DefinitionChangedError, match="N"):
        flow.count.with_options(store=store)()  # was 0
    assert flow.count.with_options(store=store, on_change="rerun")() == 2
    assert [count.read_text().split().count(n) for n in ("hear", "keep", "bump")] == [4, 3, 4]


def test_an_error_raised_in_durables_code_below_a_refusal_keeps_its_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The traceback of an exception leaving a workflow call loses durable's
    frames, but one raised in durable's code that is no `DurableError`
    keeps them from the user's last frame down to the raise. The cause of
    a `StorageError` (the `IsADirectoryError` of reading the manifest) has
    no frame of the user's: it lost all of them, and the traceback (and
    `durable run --debug`) showed it with no line at all."""
    monkeypatch.delenv("DURABLE_TRACEBACK", raising=False)
    store = tmp_path / "store"

    @durable.workflow(name="cut", run_id="r", store=str(store))
    def cut() -> int:
        return 1

    (store / "cut" / "r" / "run").mkdir(parents=True)
    with pytest.raises(durable.StorageError) as caught:
        cut()
    error = caught.value
    own = os.path.dirname(durable.__file__)
    cause = error.__cause__
    assert isinstance(cause, IsADirectoryError)
    assert any(f.filename.startswith(own) for f in traceback.extract_tb(cause.__traceback__))
    assert [f.name for f in traceback.extract_tb(error.__traceback__)][-2:] == ["__call__", "drive_sync"]
