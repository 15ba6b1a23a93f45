"""Code users write, suspended after its first step and resumed in a new
process with nothing changed: each resumes, executing each step once.
Were refused (the rule that refused, in `durable/_fingerprint`):

- a rate limiter keeping its schedule from its last value (`self.last =
  max(now, self.last + self.gap)`, sleeping on it), on the client, on a
  limiter it holds, or in a global: the read going only into its own new
  value is `+=` spelled out (`effects.fed_back`), and the limiter's set-up
  (`self.gap`), which no method of its class changes, read by a call
  handing its caller nothing (`methoduses._reads_nothing`);
- a helper class writing to sqlite3 whose method is named `insert`, as a
  list's is, though it changes nothing of the object (`objectstate.
  calls_change_nothing`: what a method of your class changes is told by
  its code, `object_writes`, not by its name);
- a scraper's session whose `get` bumps a counter, reached through a
  helper (`allowed(url)` calling `SESSION.get(robots)`): reached so, the
  session counted as read whole (`heldreads._helpers_unread`: the helper's
  code tells, as the step's does);
- a cache of each host's robots.txt whose entry is handed to a method of
  text (`ROBOTS[host].splitlines()`: `selffills._text_of`), a new object;
- a token count printed to `sys.stderr` (`effects.shows`: to the terminal,
  as without `file=`).

Each with the variants that stay refused: the wait handed back, the
schedule copied to another attribute the step's result reads, a step
reading the schedule itself, a step changing the set-up its wait returns;
a method keeping a count a step reads back; a class handing `insert` on
to a list it holds; a helper reading the counter; the session reached
through a table; an entry popped; the count printed to a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import COUNTED_WRITE_THEN, run_each

pytestmark = pytest.mark.slow  # two processes

HEAD = """import io, os, sys, time
import durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
"""
DB = """class Store:
    def __init__(self):
        self.rows = 0
    def insert(self, values):
        return len(values)
    def size(self):
        return self.rows
STORE = Store()
"""
LISTED = """class Store:
    def __init__(self):
        self.items = []
    def __getattr__(self, name):
        return getattr(self.items, name)
STORE = Store()
"""
LIMITER = """class RateLimiter:
    def __init__(self, per_sec):
        self.gap, self.last = 1.0 / per_sec, 0.0
    def wait(self):
        now = time.monotonic()
        self.last = max(now, self.last + self.gap)
        time.sleep(min(self.last - now, 0.001))
class LLM:
    def __init__(self):
        self.limiter = RateLimiter(1000)
    def complete(self, prompt):
        self.limiter.wait()
        return len(prompt) * 0
CLIENT = LLM()
"""
OWN = """class LLM:
    def __init__(self):
        self.gap, self.last = 0.001, 0.0
    def complete(self, prompt):
        now = time.monotonic()
        self.last = max(now, self.last + self.gap)
        time.sleep(min(self.last - now, 0.001))
        return len(prompt) * 0
CLIENT = LLM()
"""
GLOBAL = """GAP, _LAST = 0.001, 0.0
def pace():
    global _LAST
    now = time.monotonic()
    _LAST = max(now, _LAST + GAP)
    time.sleep(min(_LAST - now, 0.001))
"""
CALLS = ("CLIENT.complete('hi')", "return CLIENT.complete('yo')")
SESSION = """class Session:
    def __init__(self):
        self.sent = 0
    def get(self, url):
        self.sent += 1
        return url.upper()
SESSION = Session()
def fetched(url):
    return SESSION.get(url)
def sent():
    return SESSION.sent
CLIENTS = {"s": SESSION}
def pick():
    return CLIENTS["s"]
"""
ROBOTS = """_R = {}
def robots(host):
    if host not in _R:
        _R[host] = "Disallow: /" + host
    return len(_R[host].splitlines())
"""
POPPED = ROBOTS + """def popped(host):
    if host not in _R:
        _R[host] = "Disallow: /" + host
    return len(_R[host].pop())
"""
TOKENS = 'TOKENS = {"n": 0}\n'
CASES = {  # name: (module-level code, the first step's statements, the second's)
    "held": (LIMITER, *CALLS),
    "own": (OWN, *CALLS),
    "module": (GLOBAL, "pace()", "pace()\n    return 0"),
    "db_insert": (DB, "STORE.insert([1, 2])", "return STORE.insert([3]) - 1"),
    "helper": (SESSION, "fetched('a')", "return len(fetched('b')) - 1"),
    "robots": (ROBOTS, "robots('h')", "return robots('h') - 1"),
    "stderr": (TOKENS, "TOKENS['n'] += 1", "print('tokens', TOKENS, file=sys.stderr)\n    return 0"),
    # The variants that stay refused.
    "returned": (LIMITER.replace("time.sleep(min(self.last - now, 0.001))", "return self.last - now")
                 .replace("        self.limiter.wait()\n        return len(prompt) * 0", "        return int(self.limiter.wait() > 1)"), *CALLS),
    "copied": (OWN.replace("time.sleep(", "self.slot = self.last\n        time.sleep(")
               .replace("return len(prompt) * 0", "return int(self.slot < 0)"), *CALLS),
    "read": (LIMITER, CALLS[0], "return int(CLIENT.limiter.last < 0)"),
    "set_up": (LIMITER.replace("time.sleep(", "return self.gap\n        time.sleep(")
               .replace("        self.limiter.wait()\n        return len(prompt) * 0", "        return int(self.limiter.wait() > 1)"),
               "CLIENT.limiter.gap = 5.0", "return CLIENT.complete('yo')"),
    "db_kept": (DB.replace("return len(values)", "self.rows += len(values)\n        return 0"), "STORE.insert([1, 2])", "return STORE.size() - 2"),
    "db_listed": (LISTED, "STORE.insert(0, 5)", "return len(STORE.items) - 1"),
    "helper_reads": (SESSION, "fetched('a')", "return sent() - 1"),
    "helper_table": (SESSION, "fetched('a')", "return pick().sent - 1"),
    "robots_popped": (POPPED, "robots('h')", "return popped('h') - 1"),
    "to_file": (TOKENS, "TOKENS['n'] += 1", "buf = io.StringIO()\n    print(TOKENS['n'], file=buf)\n    return int(buf.getvalue()) - 1"),
}
REFUSED = [n for n in CASES if list(CASES).index(n) >= list(CASES).index("returned")]
RUN = """
import importlib, durable
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("f71s_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "writes and another step reads" in str(e) else repr(str(e)[:300]))
"""


def test_what_a_step_only_paces_shows_or_calls_for_nothing_resumes(tmp_path: Path) -> None:
    for n, (setup, write, read) in CASES.items():
        (tmp_path / f"f71s_{n}.py").write_text(HEAD + COUNTED_WRITE_THEN.format(name=n, setup=setup, write=write, read=read))
    run = RUN.format(names=list(CASES))
    first, second = run_each([(tmp_path, run, {"STOP": "1"}), (tmp_path, run, {})])
    first = " ".join(w for w in first.split() if not w.startswith(("tokens", "{")))
    assert first.split() == [w for n in CASES for w in (n, "suspended")], first
    second = " ".join(w for line in second.splitlines() if not line.startswith("tokens") for w in line.split())
    # Were refused before: held, own, module, helper, robots, stderr (db_insert where a step's next call reads back: the programs' sqlite).
    assert second.split() == [w for n in CASES for w in ((n, "refused") if n in REFUSED else (n, "value", "0"))], second
    ran = sorted((tmp_path / "count").read_text().split())
    assert ran == sorted([f"{n}:a" for n in CASES] + [f"{n}:b" for n in CASES if n not in REFUSED])
