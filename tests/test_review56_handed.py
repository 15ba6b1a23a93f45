"""review56: a global handed to a library's call together with a function
of yours that writes its parameter: the library calls it with the global
(`pool.submit(add, LOG, x)`, `ex.map(add, [LOG], [x])`,
`threading.Thread(target=add, args=(LOG, x))`, `asyncio.to_thread(add,
LOG, x)`, `functools.partial(add, LOG)(x)`). `add(LOG, x)` called directly
was a write (review50/52's hand-off rule); through the library it was not,
so resumed in a new process the step replayed without its append and the
next step summed the list the import left (value 0 for 5). Now a write: the
resume is refused as changed. A function handed along that writes none of
its parameters (`sorted(ROWS, key=score)`, `ex.map(score, ROWS)`) still
reads only: that resume goes on.

Also a write through the module itself (`import flow as me;
me.LOG.append(x)`, `sys.modules[__name__].LOG.append(x)`): replayed alike
(value 0); now refused as `LOG.append(x)` is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes

POOL = "with concurrent.futures.ThreadPoolExecutor() as ex:\n        "
WRITES = {
    "submit": POOL + "ex.submit(add, {g}, x).result()",
    "pool_map": POOL + "list(ex.map(add, [{g}], [x]))",
    "thread": "t = threading.Thread(target=add, args=({g}, x))\n    t.start()\n    t.join()",
    "to_thread": "asyncio.run(asyncio.to_thread(add, {g}, x))",
    "partial": "functools.partial(add, {g})(x)",
    # Through the module itself: another spelling of `{g}.append(x)`.
    "self_import": "import flow56_self_import as me\n    me.{g}.append(x)",
    "sys_modules": "sys.modules[__name__].{g}.append(x)",
}
READS = {
    "sorted_key": "sorted({g}, key=score)",
    "pool_reads": POOL + "list(ex.map(score, {g}))",
}

CASE = """import asyncio, concurrent.futures, functools, os, sys, threading
import durable

{g} = {start}


def add(xs, x):
    xs.append(x)


def score(r):
    return r * 2


def counted(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")


@durable.step
def {name}_w(x):
    counted("{name}_w")
    {write}
    return x


@durable.step
def {name}_r(x):
    counted("{name}_r")
    return sum({g}) + x


@durable.workflow(run_id="r-{name}")
def wf():
    {name}_w(5)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return {name}_r(0)
"""

RUN = """
import importlib, durable
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("flow56_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "writes and another step reads" in str(e) else e)
"""


def test_a_global_a_library_hands_to_a_function_writing_it_is_written(tmp_path: Path) -> None:
    cases = {**WRITES, **READS}
    for n, write in cases.items():  # a module each: what one writes is no other's change
        g, start = n.upper(), "[]" if n in WRITES else "[1, 2]"
        text = CASE.format(name=n, g=g, start=start, write=write.format(g=g))
        (tmp_path / f"flow56_{n}.py").write_text(text)
    run = RUN.format(names=list(cases))
    first, second = run_each([(tmp_path, run, {"STOP": "1"}), (tmp_path, run, {})])
    assert first.split() == [w for n in cases for w in (n, "suspended")], first
    said = dict(line.split(" ", 1) for line in second.splitlines() if line.split(" ")[0] in cases)
    assert said == {**dict.fromkeys(WRITES, "refused"), **dict.fromkeys(READS, "value 3")}, second
    # Each writer ran once (the refused resume ran nothing); each reader's r ran once, on the resume.
    ran = (tmp_path / "count").read_text().split()
    assert sorted(ran) == sorted([f"{n}_w" for n in cases] + [f"{n}_r" for n in READS])
