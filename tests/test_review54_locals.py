"""A step writing a module-level container through a local bound to (a part
of) it in ways `localbound.bound_locals` did not follow: a tuple
assignment (`a, b = CFG["a"], CFG["b"]`), a local bound to another local
(`cfg = CFG`, `xs = cfg["xs"]`; the rows of `for rows in TABLE: for row in
rows`), an annotated or chained assignment (`log: list = LOG`, `log = alias
= LOG`), a walrus (`(log := LOG).append(x)`), a choice (`LOG if x else
OTHER`, `LOG or []`), or handed from such a local to a function of
the user's that writes it (`xs = CFG["a"]`, then `add(xs, x)`). A later step reads the container; resumed in a new
process, the write is not redone and it computed from what the import left
(`value {'a': []}`): such a step now counts as a writer there (refused), as
`log = LOG` does. Copies (`list(LOG)`, `LOG.copy()`) stay reads."""

from __future__ import annotations

import ast
import textwrap

import pytest

from durable._fingerprint.written import written_in
from tests.scripts import suspend_then_resume

FLOW = """
import os
import durable
CFG = {{"a": [], "b": []}}

def add(items, x):
    items.append(x)

@durable.step
def a(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("a\\n")
    {write}
    return x

@durable.step
def b():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("b\\n")
    return CFG

@durable.workflow(run_id="r1")
def wf():
    a(3)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return b()
"""


# Run end to end (the rest below through `written_in` alone); `add` writes the list it is given.
ENDS = {
    "tuple": 'a, b = CFG["a"], CFG["b"]\n    a.append(x)',
    "handed": 'xs = CFG["a"]\n    add(xs, x)',
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str, list[str]]]:
    folders = {name: tmp_path_factory.mktemp(name) for name in ENDS}
    for name, folder in folders.items():
        (folder / "flow.py").write_text(FLOW.format(write=ENDS[name]))
    return suspend_then_resume(folders)


@pytest.mark.slow  # one interpreter forking the phases
@pytest.mark.parametrize("name", sorted(ENDS))
def test_a_step_writing_through_a_bound_local_is_not_replayed_elsewhere(
    runs: dict[str, tuple[str, str, list[str]]], name: str
) -> None:
    first, resumed, count = runs[name]
    assert "suspended" in first, first
    # was: `value {'a': [], 'b': []}`, b run on what the import left
    assert "refused" in resumed and count == ["a"], (resumed, count)


WRITES = {
    "tuple": 'a, b = CFG["a"], CFG["b"]\na.append(x)',
    "chain": 'cfg = CFG\nxs = cfg["xs"]\nxs.append(x)',
    "nested_rows": 'for rows in CFG:\n    for row in rows:\n        row["n"] = 1',
    "annotated": "log: list = CFG\nlog.append(x)",
    "chained": "log = alias = CFG\nlog.append(x)",
    "walrus": "(log := CFG).append(x)",
    "choice": "log = CFG if x else OTHER\nlog.append(x)",
    "or": "log = CFG or []\nlog.append(x)",
}
COPIES = {"list": "log = list(CFG)\nlog.append(x)", "copy": "log = CFG.copy()\nlog.append(x)"}


def _written(body: str) -> frozenset[str]:
    return written_in([ast.parse("def a(x):\n" + textwrap.indent(body, "    ")).body[0]])


@pytest.mark.parametrize("name", sorted(WRITES))
def test_a_write_through_a_bound_local_writes_the_global(name: str) -> None:
    assert "CFG" in _written(WRITES[name]), name  # was: only the locals


@pytest.mark.parametrize("name", sorted(COPIES))
def test_a_write_into_a_copy_is_no_write(name: str) -> None:
    assert "CFG" not in _written(COPIES[name])


# A name stored into a container (`SHARED["file"] = CFG`) is not written by
# that store: the container is. Counted as the container's, a step of a
# factory storing its closure's cell (`version`) counted the cell as read
# back at its next call and ran again on a resume (test_child_rerun).
STORED = {"global": 'SHARED["file"] = CFG', "index": "out[x] = CFG", "attribute": "SHARED.file = CFG"}
# Written below the container's level, what it holds there is written.
STORED_WRITTEN = {"item": 'box = {}\nbox["k"] = CFG\nbox["k"].append(x)', "attr": "o.cfg = CFG\no.cfg.append(x)"}


@pytest.mark.parametrize("name", sorted(STORED))
def test_a_name_stored_into_a_container_is_not_written(name: str) -> None:
    assert "CFG" not in _written(STORED[name]) and "x" not in _written(STORED[name])


@pytest.mark.parametrize("name", sorted(STORED_WRITTEN))
def test_a_write_into_what_a_container_holds_writes_it(name: str) -> None:
    assert "CFG" in _written(STORED_WRITTEN[name])
