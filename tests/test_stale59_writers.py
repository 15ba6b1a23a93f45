"""A step changing a module-level container that a later step reads, in
ways users write it beyond `LOG.append(x)`: a deque's `appendleft`, a
Counter's `subtract`, an array's `fromlist`, an OrderedDict's
`move_to_end`, a set's `difference_update`; the type's method called on
it (`list.append(LOG, x)`, `dict.update(CFG, k=x)`), an `operator`
function (`setitem`, `iadd`, `methodcaller("setdefault", ...)`), a
bound method handed on (`map(LOG.append, xs)`), a `random.Random`'s
`shuffle`, a local bound to the global (`log = LOG`, then
`log.append(x)`), and the rows of a global list changed in a loop
(`for row in ROWS: row["done"] = True`). A replay does not redo the
change: resumed in a new process, the reading step computed from what the
import left (`value []`). Such a step's record now counts as changed
there (refused); a step that only reads the container still replays."""

from __future__ import annotations

import importlib.util

import pytest

from tests.scripts import suspend_then_resume

pytestmark = pytest.mark.slow  # one interpreter forking the phases

FLOW = """
import array, collections, operator, os, random
import durable
{head}

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
    return {read}

@durable.workflow(run_id="r1")
def wf():
    a(3)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return b()
"""

# pandas' `inplace=True` on a stand-in (importing pandas costs a second a process)
FRAME = """
class Frame(list):
    def dropna(self, inplace=False):
        kept = [v for v in self if v is not None]
        if not inplace:
            return Frame(kept)
        self[:] = kept

DF = Frame([1.0, None])"""
# name: (module head, what `a` does with x, what `b` returns)
WRITERS = {
    "appendleft": ("D = collections.deque()", "D.appendleft(x)", "list(D)"),
    "type_method": ("LOG = []", "list.append(LOG, x)", "LOG"),
    "methodcaller": ("C = {}", 'operator.methodcaller("setdefault", "k", x)(C)', "C"),
    "handed_method": ("LOG = []", "list(map(LOG.append, [x]))", "LOG"),
    "shuffle": ("LOG = list(range(9))\nRNG = random.Random(5)", "RNG.shuffle(LOG)", "LOG"),
    "alias_part": ('CFG = {"xs": []}', 'xs = CFG["xs"]\n    xs.append(x)', "CFG"),
    "enumerated_rows": ('ROWS = [{"n": 1}]', 'for i, row in enumerate(ROWS):\n        row["n"] = x', "ROWS"),
    # numpy's and pandas' ways: `np.copyto`, `inplace=True` (was: `value
    # [0.0, 0.0]`, `value 2`).
    "np_copyto": ("import numpy as np\nARR = np.zeros(2)", "np.copyto(ARR, x)", "ARR.tolist()"),
    "inplace": (FRAME, "DF.dropna(inplace=True)", "len(DF)"),
}
_NEEDS = {"np_copyto": "numpy", "numpy": "numpy"}
# A step only reading the container: its resume replays (no false refusal).
# `np.add` and `np.sort` at module level took numpy's module for a list those
# methods change, counted by its attributes, which differ in each process:
# every resume of such a script was refused ("now np changed").
READERS = {
    "numpy": ("import numpy as np\nS = np.add(np.sort([2, 1]), 0)", "y = np.subtract(S, x)", "int(np.sum(S))"),
    "reads": ("D = collections.deque([1])\nC = {'k': [1]}", "y = list(D) + C.get('k', [])\n    z = C['k'].count(1)", "[list(D), C]"),
    "copies": ("LOG = [1]", "log = list(LOG)\n    log.append(x)", "LOG"),
    "rebound": ('CFG = {"n": 1}', 'n = CFG["n"]\n    n += x', "CFG"),
    "bound_to_a_copy_too": ("LOG = [1]", "log = LOG\n    log = [v for v in log if v]\n    log.append(x)", "LOG"),
    "rows_read": ('ROWS = [{"n": 1}]', 'for row in ROWS:\n        y = row["n"] * x', "ROWS"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str, list[str]]]:
    folders = {}
    for name, (head, write, read) in {**WRITERS, **READERS}.items():
        if name in _NEEDS and importlib.util.find_spec(_NEEDS[name]) is None:
            continue
        folders[name] = folder = tmp_path_factory.mktemp(name)
        (folder / "flow.py").write_text(FLOW.format(head=head, write=write, read=read))
    return suspend_then_resume(folders)


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_step_changing_a_container_another_reads_is_not_replayed_elsewhere(
    runs: dict[str, tuple[str, str, list[str]]], name: str
) -> None:
    if name not in runs:
        pytest.skip(f"{_NEEDS[name]} is not installed")
    first, resumed, count = runs[name]
    assert "suspended" in first, first
    # was: `value ...` of what the import left (`value []`), b run on it
    assert "refused" in resumed and count == ["a"], (resumed, count)


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_step_only_reading_a_container_replays(runs: dict[str, tuple[str, str, list[str]]], name: str) -> None:
    if name not in runs:
        pytest.skip(f"{_NEEDS[name]} is not installed")
    first, resumed, count = runs[name]
    assert "suspended" in first, first
    assert "value" in resumed and count == ["a", "b"], (resumed, count)
