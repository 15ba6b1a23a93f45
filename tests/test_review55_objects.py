"""review55: stale63's object-state rule attacked from both sides, two real
processes (a step changing a global object of the user's class, the run
suspended, resumed in a new process that imports a fresh object).

Misses, each replayed with the fresh object's value (0 for 5, or a
KeyError): a change through `self.__dict__[k] = v`, `type(self).a` or
`self.__class__.a`; through its dunders (`G(x)`, `G << x`, `with G:`),
`getattr(G, "m")(x)`, an object it holds (`G.part.m(x)`) or another global
object's method (`SVC.go(x)` doing `STORE.remember(x)`); a "fill" that is
none (`self.a = self.a + [x]`, `if self.n < 100: self.n = self.n + x`,
`if k not in self.k or x: ...`). Now a changed call.

False refusals, at every resume: another step only writing the attribute
(a progress counter `self.done += 1`, a handler's `self.records.append`),
or printing the object (its `__repr__` reading all of it). Now it goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_in, said, write_read, write_then_read

pytestmark = pytest.mark.slow  # two processes

BASE = '''
class Base:
    def __init__(self):
        self.items = []

    def remember(self, x):
        self.items.append(x)
'''

CLASS = '''
import functools, logging
from base55 import Base

class Store(Base):
    def __init__(self):
        super().__init__()
        self.n = 0
        self._size = 0
        self.done = 0
        self.name = "store"
        self.sub = Base()
        self.k = {"a": 0}

    def plus(self, x):
        self.items = self.items + [x]

    def guarded(self, x):
        if self.n < 100:
            self.n = self.n + x

    def keyed(self, x):
        if "b" not in self.k or x > 0:
            self.k["a"] = x

    def __lshift__(self, x):
        self.items.append(x)
        return self

    def __call__(self, x):
        self.items.append(x)

    def __enter__(self):
        self.items.append(5)

    def __exit__(self, *exc):
        return None

    def total(self):
        return sum(self.items)

    def set_dict(self, x):
        self.__dict__["n"] = x

    def to_class(self, x):
        type(self).shared.append(x)

    def to_dunder_class(self, x):
        self.__class__.shared.append(x)

    shared = []

    def tick(self):
        self.done += 1

    @functools.cached_property
    def summary(self):
        return sum(self.items)

    def __repr__(self):
        return f"Store({self.items}, {self.n}, {self._size}, {self.done}, {self.name})"

class Svc:
    def go(self, x):
        STORE.remember(x)

class Mem(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)

def helper(x):
    STORE.remember(x)
'''

# Step w writes, step r reads: the resume must refuse.
MISSES = {
    "dict": ("STORE.set_dict(x)", "STORE.n"),
    "inherited": ("STORE.remember(x)", "STORE.total()"),
    "type_self": ("STORE.to_class(x)", "sum(STORE.shared)"),
    "dunder_class": ("STORE.to_dunder_class(x)", "sum(STORE.shared)"),
    "other_object": ("SVC.go(x)", "STORE.total()"),
    "getattr": ('getattr(STORE, "remember")(x)', "STORE.total()"),
    "part": ("STORE.sub.remember(x)", "sum(STORE.sub.items)"),
    "operator": ("STORE << x", "STORE.total()"),
    "call": ("STORE(x)", "STORE.total()"),
    "with": ("with STORE:\n        pass", "STORE.total()"),
    "rebound": ("STORE.plus(x)", "STORE.total()"),  # `self.a = self.a + [x]` is no fill
    "guarded": ("STORE.guarded(x)", "STORE.n"),  # under a test of its value, not of its absence
    "keyed": ("STORE.keyed(x)", 'STORE.k["a"]'),  # `k not in self.k or ...`: not only when missing
    "cached": ("STORE.items.append(x)\n    STORE.summary", "STORE.summary"),
}
# Nothing read that changed: the resume goes on (value 0, the read's own).
SAME = {
    "progress": ("STORE.tick()", "STORE.tick() or 0"),
    "getattr_read": ('getattr(STORE, "n", 0)', "STORE.n"),
    "print": ("STORE.tick()", 'print(STORE, f"{STORE}") or 0'),
}



def test_object_state_changes_by_any_spelling_refuse_and_writes_nobody_reads_do_not(tmp_path: Path) -> None:
    (tmp_path / "base55.py").write_text(BASE)
    head = f"import logging, os\nimport durable\n{CLASS}\nSTORE = Store()\nHANDLER = Mem()\nSVC = Svc()\n"
    modules = {f"obj55_{n}": write_read(head, n, w, r) for n, (w, r) in {**MISSES, **SAME}.items()}  # a module each
    second = write_then_read(tmp_path, modules)
    expected = said([f"obj55_{n}" for n in MISSES], [f"obj55_{n}" for n in SAME])
    shown = [line for line in second.splitlines() if line.startswith("Store(")]
    # What the fresh object holds, shown on the terminal: no step result depends on it.
    assert shown == ["Store([], 0, 0, 0, store) Store([], 0, 0, 0, store)"], second
    assert "".join(line + "\n" for line in second.splitlines() if line not in shown).split() == expected, second


def test_a_handler_only_written_does_not_refuse_a_resume_in_a_new_process(tmp_path: Path) -> None:
    """Two processes, each its own import of logging (its own `logging._startTime`, which
    makeLogRecord reads): no refusal since logging counts by which module it is (eb5244c)."""
    (tmp_path / "base55.py").write_text(BASE)
    head = f"import logging, os\nimport durable\n{CLASS}\nSTORE = Store()\nHANDLER = Mem()\nSVC = Svc()\n"
    emit = 'HANDLER.emit(logging.makeLogRecord({"msg": %s}))'
    (tmp_path / "obj55_logger.py").write_text(write_read(head, "logger", emit % "x", emit % "0" + " or 0"))
    run = "import durable, obj55_logger as m\ntry:\n    print(m.wf())\nexcept durable.Suspended:\n    print('suspended')\n"
    assert run_in(tmp_path, "-c", run, STOP="1").split() == ["suspended"]
    second = run_in(tmp_path, "-c", run)  # another process: its own import of logging
    assert second.split() == ["0"], second
