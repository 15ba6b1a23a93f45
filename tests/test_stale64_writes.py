"""A step changing a global in ways the write rule did not see, so that
resumed in a new process it replayed without its change and the step after
it read what the import left:

- a method of an object of your class held bound at module level (`ADD =
  STORE.remember`, then `ADD(x)`), or reaching another object of your
  class through `self` (`SVC.go(x)` doing `self.store.remember(x)`, with
  `SVC = Service(STORE)`), the next step reading `STORE.items` (value 0
  for 5);
- a library's object changed by its methods: a draw from a global
  `random.Random(0)` or `next(IT)` (the next step drew the value the first
  had drawn: 844 for 758, 0 for 1), `BUF.write(s)` on an `io.StringIO`,
  `Q.put(x)` on a `queue.Queue` (which has no digest: counted by which
  process holds it), `MODEL.fit(X)` on a library's model (value 0 for 5);
- a helper binding its parameter in a tuple, then growing it in place
  (`ys, n = xs, 0; ys += [v]`, handed `LOG`).

Each is now a write: the resume is a changed call, executing nothing. A
step drawing from a global generator called twice with the run suspended
between (`draw(0)`, then `draw(1)` in the resumed process) drew what the
first call had drawn (844, 844): the draw reads what it changes, so the
replay of the first is a changed call. A library object's other methods
stay reads (`MODEL.predict(x)`, `FRAME.head()`), and an open file two
steps write to has no digest to count by: no refusal.

And a function an object of your class holds, which `main()` chose as the
script started (`PIPE.tail = two` under a flag), counted by its
statements only: the resume without the flag replayed `two`'s output
(value 2 for 1). It counts by which function it holds now."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import COUNTED_WRITE_READ as CASE
from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes

HEAD = '''import io, os, queue, random
import durable
from fakelib import Frame, Model

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

class Store:
    def __init__(self):
        self.items = []

    def remember(self, x):
        self.items.append(x)

class Service:
    def __init__(self, store):
        self.store = store

    def go(self, x):
        self.store.remember(x)

def add(xs, v):
    ys, n = xs, 0
    ys += [v]
'''

# Stands for a library: installed, in a `site-packages` folder.
LIB = '''
class Model:
    def __init__(self):
        self.w = 0

    def fit(self, x):
        self.w = x
        return self

    def predict(self, x):
        return self.w * x

class Frame:
    def __init__(self):
        self.rows = [0, 0]

    def head(self):
        return self.rows[:1]
'''

# name: (module-level setup, step a's body, step b's expression)
CASES = {
    "bound": ("STORE = Store()\nADD = STORE.remember", "ADD(x)", "sum(STORE.items)"),
    "service": ("STORE = Store()\nSVC = Service(STORE)", "SVC.go(x)", "sum(STORE.items)"),
    "iter": ("IT = iter(range(100))", "x = next(IT) + x", "next(IT)"),
    "rng": ("RNG = random.Random(0)", "x = round(RNG.random() * 1000)", "round(RNG.random() * 1000)"),
    "buf": ("BUF = io.StringIO()", "BUF.write('a' * x)", "len(BUF.getvalue())"),
    "queue": ("Q = queue.Queue()", "Q.put(x)", "Q.qsize()"),
    "model": ("MODEL = Model()", "MODEL.fit(x)", "MODEL.predict(1)"),
    "tuple": ("LOG = []", "add(LOG, x)", "sum(LOG)"),
}
# Read-only calls of a library's objects: no refusal, b computes 0.
SAME = {
    "predict": ("MODEL = Model()", "MODEL.predict(x)", "MODEL.predict(1)"),
    "head": ("FRAME = Frame()", "FRAME.head()", "FRAME.head()[0]"),
    # An open file both steps write to (no digest): what it holds is no step's result.
    "logfile": ("LOGF = open(os.devnull, 'w')", "LOGF.write('a')", "LOGF.write('b') * 0"),
}


# One step drawing twice, the run suspended between the draws.
DRAWS = """
{setup}

@durable.step
def draw(i):
    count("{name}:draw")
    return {read}

@durable.workflow(run_id="r-{name}")
def wf():
    first = draw(0)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return [first, draw(1)]
"""
# A function an object of yours holds, chosen by `main()` as the script starts.
PIPED = """
def one(x):
    return x + 1

def two(x):
    return x + 2

class Pipe:
    def __init__(self):
        self.tail = one

PIPE = Pipe()

@durable.step
def s(x):
    count("piped:s")
    return PIPE.tail(x)

@durable.workflow(run_id="r-piped")
def wf():
    out = s(0)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out

def main():
    if os.environ.get("FAST"):
        PIPE.tail = two

main()
"""
SELF = {"rng_self": CASES["rng"][::2], "iter_self": CASES["iter"][::2]}

RUN = """
import importlib, sys, durable
sys.path.append("site-packages")
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("s64_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "writes and another step reads" in str(e) or "reads back at its next call" in str(e) or "PIPE changed" in str(e) else e)
"""


def test_a_bound_method_a_held_object_a_library_object_or_a_tuple_alias_written_is_written(tmp_path: Path) -> None:
    lib = tmp_path / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(LIB)
    for n, (s, w, r) in {**CASES, **SAME}.items():  # a module each: what one writes is no other's change
        (tmp_path / f"s64_{n}.py").write_text(HEAD + CASE.format(name=n, setup=s, write=w, read=r))
    for n, (s, r) in SELF.items():
        (tmp_path / f"s64_{n}.py").write_text(HEAD + DRAWS.format(name=n, setup=s, read=r))
    (tmp_path / "s64_piped.py").write_text(HEAD + PIPED)
    names = [*CASES, *SAME, *SELF, "piped"]
    run = RUN.format(names=names)
    first, second = run_each([(tmp_path, run, {"STOP": "1", "FAST": "1"}), (tmp_path, run, {})])
    assert first.split() == [w for n in names for w in (n, "suspended")], first
    # Was: value 0 for bound, service, buf, queue, model and tuple; 0 for iter (1 uninterrupted),
    # 844 for rng (758), [844, 844] for rng_self and [0, 0] for iter_self.
    expected = [w for n in CASES for w in (n, "refused")] + [w for n in SAME for w in (n, "value", "0")]
    # And value 2 for piped (`two`'s, where `one` now gives 1).
    assert second.split() == expected + [w for n in [*SELF, "piped"] for w in (n, "refused")], second
    # Each first step ran once; only the read-only cases' b ran, once, on the resume.
    ran = sorted((tmp_path / "count").read_text().split())
    assert ran == sorted([f"{n}:a" for n in [*CASES, *SAME]] + [f"{n}:b" for n in SAME] + [f"{n}:draw" for n in SELF] + ["piped:s"])
