"""Programs as users write them (an agent with a tool registry and a
logger, a pipeline of frame-like objects and a metrics counter, an HTTP
session and a thread pool held globally, a fitted model, config
dataclasses, progress bars, memos, registries, wrappers made per call),
each suspended after its first step and resumed in a new process. A
refusal is one a user agrees with: a model fitted in one step and used in
the next, a memory one step fills and the next recalls. (A library's
progress bar both steps update, and the agent calling a tool its object
holds, `self.tools[name](x)`, were refused too until review60.)

Were refused though nothing the next step computes changed:
- a progress bar of yours printing its count as it ticks (`print(f"{self.n}/{self.total}")`):
  shown on the terminal, no read (as in a step's body);
- a stats object of yours keeping timings (`self.times[name].append(dt)`):
  an item of what it keeps appended to, nothing handed back."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import COUNTED_WRITE_THEN, run_each

pytestmark = pytest.mark.slow  # two processes

HEAD = '''import collections, concurrent.futures, dataclasses, functools, io, logging, os
import durable
from fakelib import Frame, Model, Progress, Session

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
'''
LIB = '''
class Model:
    def __init__(self):
        self.w = 0
    def fit(self, xs):
        self.w = sum(xs)
        return self
    def predict(self, x):
        return self.w * x

class Frame:
    def __init__(self, rows):
        self.rows = list(rows)
    def assign(self, **cols):
        return Frame(self.rows)
    def total(self):
        return sum(self.rows)

class Progress:
    def __init__(self, total):
        self.total, self.n = total, 0
    def update(self, k=1):
        self.n += k

class Session:
    def __init__(self):
        self.headers = {}
        self.sent = 0
    def get(self, url):
        self.sent += 1
        return len(url) * 0
'''
CASES = {
    "agent": ('''TOOLS = {}
def tool(fn):
    TOOLS[fn.__name__] = fn
    return fn
@tool
def double(x):
    return 2 * x
LOG = logging.getLogger("agent")
class Agent:
    def __init__(self, tools):
        self.tools = tools
        self.trace = []
    def act(self, name, x):
        self.trace.append(name)
        LOG.info("tool %s", name)
        return self.tools[name](x)
AGENT = Agent(TOOLS)''', "AGENT.act('double', x)", "AGENT.act('double', 0)"),
    "pipeline": ('''class Metrics:
    def __init__(self):
        self.counts = collections.Counter()
    def bump(self, name):
        self.counts[name] += 1
METRICS = Metrics()''', "Frame([x]).assign(y=1).total()\n    METRICS.bump('a')", "METRICS.bump('b')\n    return Frame([0]).total()"),
    "http": ("SESSION = Session()\nSESSION.headers['ua'] = 'me'", "SESSION.get('http://x')", "SESSION.get('http://y')"),
    "model": ("MODEL = Model()", "MODEL.fit([x])", "MODEL.predict(1)"),  # SHOULD be refused
    "config": ('''@dataclasses.dataclass(frozen=True)
class Config:
    scale: int = 0
    name: str = "n"
CFG = Config()''', "x * CFG.scale", "CFG.scale"),
    "config_mut": ('''@dataclasses.dataclass
class Config:
    scale: int = 0
CFG = Config()''', "x * CFG.scale", "CFG.scale"),
    "progress": ("PBAR = Progress(total=2)", "PBAR.update(1)", "PBAR.update(1)\n    return 0"),
    "my_progress": ('''class Bar:
    def __init__(self, total):
        self.total, self.n = total, 0
    def update(self, k=1):
        self.n += k
        print(f"{self.n}/{self.total}")
BAR = Bar(2)''', "BAR.update(1)", "BAR.update(1)\n    return 0"),
    "ticker": (
        """class Ticker:
    def __init__(self, total):
        self.total, self.n = total, 0
    def tick(self):
        self.n += 1
        print(f"{self.n}/{self.total}")
TICKER = Ticker(2)""",
        "TICKER.tick()",
        "(TICKER.tick() or 0)",
    ),
    "pool": ("POOL = concurrent.futures.ThreadPoolExecutor(2)\ndef sq(v):\n    return v * v", "sum(POOL.map(sq, [x]))", "sum(POOL.map(sq, [0]))"),
    "client_dc": ('''CONFIG = {"base": "http://x", "retries": 3}
@dataclasses.dataclass
class Client:
    cfg: dict
    calls: int = 0
    def get(self, path):
        self.calls += 1
        return len(self.cfg["base"] + path) * 0''', "Client(CONFIG).get('/a')", "Client(CONFIG).get('/b')"),
    "lazy_client": ('''CONFIG = {"base": "http://x"}
class Api:
    def __init__(self, cfg):
        self.cfg = cfg
        self._session = None
    def session(self):
        if self._session is None:
            self._session = Session()
        return self._session
    def get(self, path):
        return self.session().get(self.cfg["base"] + path)
API = Api(CONFIG)''', "API.get('/a')", "API.get('/b')"),
    "lru": ('''@functools.lru_cache(maxsize=None)
def rate(k):
    return 0''', "rate('a') * x", "rate('a')"),
    "registry": ('''HANDLERS = {}
def handles(kind):
    def deco(fn):
        HANDLERS[kind] = fn
        return fn
    return deco
@handles("add")
def add(x):
    return x''', "HANDLERS['add'](x) * 0", "HANDLERS['add'](0)"),
    "stats": ('''class Stats:
    def __init__(self):
        self.times = collections.defaultdict(list)
    def record(self, name, dt):
        self.times[name].append(dt)
STATS = Stats()''', "STATS.record('a', 0.1)", "STATS.record('b', 0.2)\n    return 0"),
    "logger_wrap": ('''BUF = io.StringIO()
class Logger:
    def __init__(self, stream):
        self.stream = stream
    def log(self, msg):
        self.stream.write(msg + "\\n")
LOGW = Logger(BUF)''', "LOGW.log(f'a {x}')", "LOGW.log('b')\n    return 0"),
    "wrapper_per_call": ('''STEPS_ = [abs, int]
class Pipeline:
    def __init__(self, steps):
        self.steps = steps
        self.seen = []
    def run(self, v):
        for s in self.steps:
            v = s(v)
            self.seen.append(v)
        return v''', "Pipeline(STEPS_).run(x)", "Pipeline(STEPS_).run(0)"),
    "memory": ('''class Memory:
    def __init__(self):
        self.items = []
    def remember(self, x):
        self.items.append(x)
    def recall(self):
        return sum(self.items)
MEMORY = Memory()''', "MEMORY.remember(x)", "MEMORY.recall()"),  # SHOULD be refused
}

REFUSED = {"model", "memory"}

CASE = COUNTED_WRITE_THEN

RUN = """
import importlib, sys, durable
sys.path.append("site-packages")
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("r59u_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "writes and another step reads" in str(e) else e)
"""


def test_programs_users_write_resume_unless_a_step_reads_what_another_changed(tmp_path: Path) -> None:
    lib = tmp_path / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(LIB)
    for n, (s, w, r) in CASES.items():
        read = r if "return" in r else f"return {r} + x"
        (tmp_path / f"r59u_{n}.py").write_text(HEAD + CASE.format(name=n, setup=s, write=w, read=read))
    run = RUN.format(names=list(CASES))
    first, second = run_each([(tmp_path, run, {"STOP": "1"}), (tmp_path, run, {})])
    first, second = (" ".join(w for w in o.split() if w not in ("1/2", "2/2")) for o in (first, second))
    assert first.split() == [w for n in CASES for w in (n, "suspended")], first
    # Were refused: ticker, stats.
    expected = [w for n in CASES for w in ((n, "refused") if n in REFUSED else (n, "value", "0"))]
    assert second.split() == expected, second
    ran = sorted((tmp_path / "count").read_text().split())
    assert ran == sorted([f"{n}:a" for n in CASES] + [f"{n}:b" for n in CASES if n not in REFUSED])
