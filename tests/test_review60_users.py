"""Code users commonly write, suspended after its first step and resumed
in a new process with nothing changed: each resumes, executing each step
once. Were refused (the rule that refused, in `durable/_fingerprint`):

- an agent calling a tool its object holds (`self.tools[name](x)`,
  `objectstate._uses`: the tools are plain `def`s of its module, given
  no `self`), keeping a memory another object holds (`AGENT.memory` of
  `AGENT = Agent(TOOLS, MEM)`, `heldreads`: no step reads the memory);
- a library's progress bar both steps `update()`, and `set_description`,
  `close` (`written.drawn_in`, `stepreach.written_only`: a method called as
  a statement gives the step nothing of the object); one of yours alike
  (`objectstate.only_called`: what its methods change and read, told by
  their code, not by a method's name);
- an `io.StringIO` two steps only write to; a `collections.Counter` one
  step `.update()`s and another bumps (the same);
- `v = C.get(k); if v is None: v = C[k] = compute(k)` (`selffills.memo_only`);
- `if cls._conn is None: cls._conn = connect()` (`classwrites.changes_own_class`);
- a step looking a module up by a name it is given (`import_module(kind)`),
  given also a label naming another module of yours by chance: that module
  edited (`givennames.given_parameters`: only the parameters reaching a
  lookup count).

Each with the variant that stays refused (`REFUSED`): the next step reads
what the first changed (the memory recalled, a tool reading it, `PBAR.n`,
`BUF.getvalue()`, `C.most_common()`), a tool writing a global the next step
reads (a `def`, a lambda), a memo or class client filled with a
parameter's value (the first caller's) or handed out and changed. An
LLM client whose rate limiter reads the time its last call left only to
sleep was refused here too; review63 resumes it (`effects`: what the
step computes does not depend on it, test_review63_users).

Were stale: a tool a decorator puts in a registry (`TOOLS = {}`, `@tool`),
called through it (`TOOLS[name](x)`, `AGENT.act(name, x)`), writing a
global the next step reads, or reading one the first step wrote: no
step's reach of the names saw it (`heldreads.reached_held`); and a
closure a factory made over a global (`REMEMBER = make(NOTES)`, doing
`notes.append(x)`), called by name or as an agent's tool
(`helperreads._cells_written`). Now refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import COUNTED_WRITE_THEN, RATE_LIMITER, run_each

pytestmark = pytest.mark.slow  # two processes

HEAD = """import collections, dataclasses, functools, io, logging, os, sys, time
import durable
from fakelib import tqdm

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
"""
LIB = """
class tqdm:
    def __init__(self, total=None):
        self.total, self.n, self.desc = total, 0, ""
    def update(self, k=1):
        self.n += k
    def set_description(self, d):
        self.desc = d
    def close(self):
        pass
"""
AGENT = """TOOLS = {}
def tool(fn):
    TOOLS[fn.__name__] = fn
    return fn
@tool
def search(q):
    return len(q) * 0
@tool
def calc(q):
    return CALC
LOG = logging.getLogger("agent")
class Memory:
    def __init__(self):
        self.turns = []
    def add(self, role, text):
        self.turns.append((role, text))
    def size(self):
        return len(self.turns)
class Agent:
    def __init__(self, tools, memory):
        self.tools = tools
        self.memory = memory
        self.trace = []
    def act(self, name, q):
        self.trace.append(name)
        LOG.info("tool %s", name)
        out = self.tools[name](q)
        self.memory.add("tool", str(out))
        return out
    def recall(self):
        return self.memory.size()
MEM = Memory()
AGENT = Agent(TOOLS, MEM)"""
MEMO = """C = {}
def compute(k):
    return len(k) * 0
def get(k):
    v = C.get(k)
    if v is None:
        v = C[k] = compute(k)
    return v"""
LAZY = """class Conn:
    def __init__(self, url):
        self.url = url
    def query(self, q):
        return 0
def connect(url="db"):
    return Conn(url)
class Repo:
    _conn = None
    @classmethod
    def conn(cls):
        if cls._conn is None:
            cls._conn = connect()
        return cls._conn"""
LLM = RATE_LIMITER + """class LLM:
    def __init__(self, model, retries=3):
        self.model, self.retries, self.calls = model, retries, 0
        self.limiter = RateLimiter(1000)
    def complete(self, prompt):
        for _ in range(self.retries):
            self.limiter.wait()
            self.calls += 1
            try:
                return self._send(prompt)
            except ConnectionError:
                continue
        raise RuntimeError("gave up")
    def _send(self, prompt):
        return len(prompt) * 0
CLIENT = LLM("m")"""
REGISTRY = """NOTES = []
TOOLS = {}
def tool(fn):
    TOOLS[fn.__name__] = fn
    return fn
@tool
def remember(x):
    NOTES.append(x)
@tool
def seen(q):
    return len(NOTES)"""
FACTORY = """NOTES = []
def make(notes):
    def remember(x):
        notes.append(x)
    return remember
"""
CASES = {  # name: (module-level code, the first step's statements, the second's)
    "agent": (AGENT.replace("CALC", "0"), "AGENT.act('search', 'hi')", "return AGENT.act('calc', 'x')"),
    "pbar": ("PBAR = tqdm(total=2)", "PBAR.update(1)\n    PBAR.set_description('a')", "PBAR.update(1)\n    PBAR.close()\n    return 0"),
    "my_bar": (LIB + "BAR = tqdm(total=2)", "BAR.update(1)\n    BAR.set_description('a')", "BAR.update(1)\n    BAR.close()\n    return 0"),
    "stringio": ("BUF = io.StringIO()", "BUF.write('a')", "BUF.write('b')\n    return 0"),
    "counter": ("SEEN = collections.Counter()", "SEEN.update(['a'])", "SEEN['b'] += 1\n    return 0"),
    "memo": (MEMO, "get('a')", "return get('a')"),
    "lazy_cls": (LAZY, "Repo.conn().query('a')", "return Repo.conn().query('b')"),
    "etl": ("""class Metrics:
    def __init__(self):
        self.rows, self.timings = 0, {}
    def count(self, n):
        self.rows += n
    def timed(self, name, dt):
        self.timings[name] = dt
METRICS = Metrics()""", "METRICS.count(3)\n    METRICS.timed('e', 0.1)", "METRICS.count(2)\n    METRICS.timed('l', 0.2)\n    return 0"),
    "logger": ('log = logging.getLogger("etl")\nlog.setLevel(logging.INFO)\nlog.addHandler(logging.StreamHandler(sys.stdout))', "log.info('a %s', x)", "log.info('b')\n    return 0"),
    "llm": (LLM, "CLIENT.complete('hi')", "return CLIENT.complete('yo')"),
    # The variants that stay refused.
    "agent_recalls": (AGENT.replace("CALC", "0"), "AGENT.act('search', 'hi')", "return AGENT.recall()"),
    "agent_tool_reads": (AGENT.replace("CALC", "len(MEM.turns)"), "AGENT.act('search', 'hi')", "return AGENT.act('calc', 'x')"),
    "tool_writes": ("""NOTES = []
def note(x):
    NOTES.append(x)
class Agent:
    def __init__(self, tools):
        self.tools, self.trace = tools, []
    def act(self, name, x):
        self.trace.append(name)
        return self.tools[name](x)
AGENT = Agent({"note": note, "len": len})""", "AGENT.act('note', x)", "return len(NOTES)"),
    "lambda_tool": ("""class Agent:
    def __init__(self, tools):
        self.tools, self.trace = tools, []
    def act(self, name, x):
        return self.tools[name](x)
AGENT = Agent({"note": lambda x: AGENT.trace.append(x)})""", "AGENT.act('note', x)", "return len(AGENT.trace)"),
    "pbar_n": ("PBAR = tqdm(total=2)", "PBAR.update(1)", "return PBAR.n"),
    "stringio_read": ("BUF = io.StringIO()", "BUF.write('a')", "return len(BUF.getvalue())"),
    "counter_read": ("SEEN = collections.Counter()", "SEEN.update(['a'])", "return len(SEEN.most_common())"),
    "memo_param": (MEMO.replace("def get(k):", "def get(k, x=0):").replace("compute(k)\n", "x\n"), "get('a', x)", "return get('a')"),
    "memo_changed": (MEMO.replace("len(k) * 0", "[]"), "get('a').append(x)", "return len(get('a'))"),
    "lazy_cls_param": (LAZY.replace("conn(cls)", "conn(cls, url)").replace("connect()", "connect(url)"), "Repo.conn('db%d' % x)", "return len(Repo.conn('db').url)"),
    # Were stale (value 0, where an uninterrupted run gives 1): a tool a decorator registered,
    # writing or reading a global the other step reads or writes, called through the registry.
    "registry_writes": (REGISTRY, "TOOLS['remember'](x)", "return len(NOTES)"),
    "registry_reads": (REGISTRY, "NOTES.append(x)", "return TOOLS['seen'](0)"),
    # And a closure a factory made over a global (`REMEMBER = make(NOTES)`), called by name or
    # as an agent's tool: its cell's writes are the global's.
    "closure_writes": (FACTORY + "REMEMBER = make(NOTES)", "REMEMBER(x)", "return len(NOTES)"),
    "closure_tool": (FACTORY + "class Agent:\n    def __init__(self, tools):\n        self.tools = tools\n"
                     "    def act(self, name, x):\n        return self.tools[name](x)\nAGENT = Agent({'note': make(NOTES)})",
                     "AGENT.act('note', x)", "return len(NOTES)"),
    "agent_registry_writes": (REGISTRY + "\n" + AGENT.replace("TOOLS = {}", "").replace("CALC", "0"), "AGENT.act('remember', x)", "return len(NOTES)"),
}
REFUSED = [n for n in CASES if list(CASES).index(n) >= list(CASES).index("agent_recalls")]

CASE = COUNTED_WRITE_THEN
# A step looking a module up by the name `kind` it is given, and given a label naming another
# module of yours by chance: that module edited, the call is the same; the one it looks up
# edited, the call is another (peers47's rule, `givennames.given_parameters`).
NAMED = """import importlib, os
import durable

@durable.step
def a(kind, label):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("{name}:a\\n")
    return importlib.import_module(kind).run(0)

@durable.workflow(run_id="r-{name}")
def wf():
    out = a("r60tool_{name}", "r60label")
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""
RUN = """
import importlib, sys, durable
sys.path.append("site-packages")
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("r60u_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused")
"""


def test_common_code_resumes_unless_a_step_reads_what_another_changed(tmp_path: Path) -> None:
    (tmp_path / "site-packages").mkdir()  # a library's: not the user's code
    (tmp_path / "site-packages" / "fakelib.py").write_text(LIB)
    for n, (setup, write, read) in CASES.items():
        (tmp_path / f"r60u_{n}.py").write_text(HEAD + CASE.format(name=n, setup=setup, write=write, read=read))
    for n in ("label", "tool"):
        (tmp_path / f"r60u_{n}.py").write_text(NAMED.format(name=n))
        (tmp_path / f"r60tool_{n}.py").write_text("def run(x):\n    return x\n")
    (tmp_path / "r60label.py").write_text("def run(x):\n    return x\n")
    run = RUN.format(names=[*CASES, "label", "tool"])
    (first,) = run_each([(tmp_path, run, {"STOP": "1"})])
    for edited in ("r60label", "r60tool_tool"):
        (tmp_path / f"{edited}.py").write_text("def run(x):\n    return x * 2\n")
    (second,) = run_each([(tmp_path, run, {})])
    first, second = (" ".join(w for w in o.split() if w not in ("a", "b", "5")) for o in (first, second))
    assert first.split() == [w for n in [*CASES, "label", "tool"] for w in (n, "suspended")], first
    # Were refused before: agent, pbar, my_bar, stringio, counter, memo, lazy_cls.
    expected = [w for n in CASES for w in ((n, "refused") if n in REFUSED else (n, "value", "0"))]
    # The label's module edited: was refused before.
    assert second.split() == [*expected, "label", "value", "0", "tool", "refused"], second
    ran = sorted((tmp_path / "count").read_text().split())
    assert ran == sorted([f"{n}:a" for n in [*CASES, "label", "tool"]] + [f"{n}:b" for n in CASES if n not in REFUSED])
