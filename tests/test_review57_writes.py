"""A step changing an object through a spelling the write rule did not
see, so that resumed in a new process it replayed without its change and
the next step read what the import left (value 0 for 5 each, where an
uninterrupted run gives 5):

- an object of your class held by another module of yours
  (`otherstore.STORE.remember(x)`), called in the step or in a method of a
  global object of yours (`SVC.go(x)`, the case stale64 left open);
- a plain global a method of a global object of yours writes
  (`SVC.go(x)` doing `LIST.append(x)`, here or in another module, or
  through another method it calls, `self.put(x)`);
- a lambda bound at module level (`ADD = lambda x: LOG.append(x)`), a
  local bound to the object (`s = STORE; s.remember(x)`);
- a method of an object of yours held bound in a dict, a list, a
  namespace, a `functools.partial` (`OPS["add"](x)`,
  `partial(Store.remember, STORE)`), a class (`Ops.add(x)`) or another
  module (`otherstore.ADD(x)`);
- an iterator made by a generator function (`IT = gen()`, `next(IT)`):
  no digest, and left out (value 0 for 1, as for `iter(range(...))`).

Each is now a write: the resume is a changed call, executing nothing.
Read-only use of the same objects stays no refusal: a library model's
`predict`, a frame's `head`, a logger (to a `StringIO` handler too),
`print`, a metrics object of yours the steps only bump, a method of a
global object only counting in a global both steps call it to bump."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import COUNTED_WRITE_READ as CASE
from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes

HEAD = '''import functools, io, logging, os, types
import durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

class Store:
    def __init__(self):
        self.items = []

    def remember(self, x):
        self.items.append(x)
'''

OTHER = '''
class Store:
    def __init__(self):
        self.items = []

    def remember(self, x):
        self.items.append(x)

STORE = Store()
LIST = []
ADD = STORE.remember
'''

LIB = '''
class Model:
    def __init__(self):
        self.w = 0

    def predict(self, x):
        return self.w * x

class Frame:
    def head(self):
        return [0]
'''


def _service(body: str) -> str:
    return f"class Service:\n    def go(self, x):\n        {body}\nSVC = Service()"


# name: (module-level setup, step a's body, step b's expression); OTHER is `o_<name>`.
CASES = {
    "svc_other": ("import OTHER\n" + _service("OTHER.STORE.remember(x)"), "SVC.go(x)", "sum(OTHER.STORE.items)"),
    "direct_other": ("import OTHER", "OTHER.STORE.remember(x)", "sum(OTHER.STORE.items)"),
    "svc_list": ("LIST = []\n" + _service("LIST.append(x)"), "SVC.go(x)", "sum(LIST)"),
    "svc_list_other": ("import OTHER\n" + _service("OTHER.LIST.append(x)"), "SVC.go(x)", "sum(OTHER.LIST)"),
    "dict": ("STORE = Store()\nOPS = {'add': STORE.remember}", "OPS['add'](x)", "sum(STORE.items)"),
    "list": ("STORE = Store()\nOPS = [STORE.remember]", "OPS[0](x)", "sum(STORE.items)"),
    "ns": ("STORE = Store()\nNS = types.SimpleNamespace(add=STORE.remember)", "NS.add(x)", "sum(STORE.items)"),
    "partial": ("STORE = Store()\nADD = functools.partial(Store.remember, STORE)", "ADD(x)", "sum(STORE.items)"),
    "lambda": ("LOG = []\nADD = lambda x: LOG.append(x)", "ADD(x)", "sum(LOG)"),
    "lambda_obj": ("STORE = Store()\nADD = lambda x: STORE.remember(x)", "ADD(x)", "sum(STORE.items)"),
    "local": ("STORE = Store()", "s = STORE\n    s.remember(x)", "sum(STORE.items)"),
    "self_chain": (
        "LIST = []\nclass Service:\n    def go(self, x):\n        self.put(x)\n    def put(self, x):\n        LIST.append(x)\nSVC = Service()",
        "SVC.go(x)",
        "sum(LIST)",
    ),
    "class_held": ("STORE = Store()\nclass Ops:\n    add = STORE.remember", "Ops.add(x)", "sum(STORE.items)"),
    "other_bound": ("import OTHER", "OTHER.ADD(x)", "sum(OTHER.STORE.items)"),
    "gen": ("def gen():\n    yield from range(100)\nIT = gen()", "x = next(IT) + x", "next(IT)"),
}
# Read-only: no refusal, b computes 0 on the resume.
SAME = {
    "predict": ("from fakelib import Model\nMODEL = Model()", "MODEL.predict(x)", "MODEL.predict(1)"),
    "head": ("from fakelib import Frame\nDF = Frame()", "DF.head()", "DF.head()[0]"),
    "logger": (
        "BUF = io.StringIO()\nLOGGER = logging.getLogger('r57')\nLOGGER.addHandler(logging.StreamHandler(BUF))",
        "LOGGER.warning('a %s', x)\n    print('shown', x)",
        "(LOGGER.info('b') or 0)",
    ),
    # A method of a global object of yours only counting in a global (both steps call it).
    "svc_count": (
        "import collections\nHITS = collections.Counter()\n" + _service("HITS['go'] += 1"),
        "SVC.go(x)",
        "(SVC.go(0) or 0)",
    ),
    "metrics": (
        "class Metrics:\n    def __init__(self):\n        self.n = 0\n    def bump(self):\n        self.n += 1\nMET = Metrics()",
        "MET.bump()",
        "(MET.bump() or 0)",
    ),
}


RUN = """
import importlib, sys, durable
sys.path.append("site-packages")
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("r57_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "writes and another step reads" in str(e) else e)
"""


def test_objects_reached_through_modules_methods_containers_partials_and_generators_are_written(tmp_path: Path) -> None:
    lib = tmp_path / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(LIB)
    for n, (s, w, r) in {**CASES, **SAME}.items():  # a module each (and another module each): no shared state
        (tmp_path / f"r57_{n}.py").write_text((HEAD + CASE.format(name=n, setup=s, write=w, read=r)).replace("OTHER", f"o_{n}"))
        (tmp_path / f"o_{n}.py").write_text(OTHER)
    run = RUN.format(names=[*CASES, *SAME])
    first, second = (o.replace("shown 5", "") for o in run_each([(tmp_path, run, {"STOP": "1"}), (tmp_path, run, {})]))
    assert first.split() == [w for n in [*CASES, *SAME] for w in (n, "suspended")], first
    # Was: value 0 for each of CASES (1 for gen).
    expected = [w for n in CASES for w in (n, "refused")] + [w for n in SAME for w in (n, "value", "0")]
    assert second.split() == expected, second
    ran = sorted((tmp_path / "count").read_text().split())
    assert ran == sorted([f"{n}:a" for n in [*CASES, *SAME]] + [f"{n}:b" for n in SAME])
