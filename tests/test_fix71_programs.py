"""Six small programs as users write them, each killed (`kill -9`) after
its first step and run again with nothing changed, in a new process: each
resumes, executing every step once, and gives what an uninterrupted run
gives. A scraper keeping a requests-like session and a cache of each
host's robots.txt; a command line built with typer-like decorators
registering its commands in a dict; a frozen dataclass configuration read
from the environment at import; a logging set-up whose helper adds
handlers to a module-level logger; an LLM wrapper with a retry decorator
of the user's and a token counter; a batch job writing rows to a sqlite3
file through a helper class."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # processes

HEAD = """import os, signal, time, durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

def die_once():
    if os.environ.get("KILL"):
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
"""
SCRAPER = HEAD + """
from urllib.parse import urlsplit

PAGES = {"/a": "<a href='/b'>b</a>", "/b": "<p>bee</p>", "/private": "no"}

class Session:  # a requests.Session stand-in
    def __init__(self):
        self.headers = {"User-Agent": "f71-bot"}
        self.sent = 0
    def get(self, url):
        self.sent += 1
        path = urlsplit(url).path
        return "Disallow: /private" if path == "/robots.txt" else PAGES.get(path, "")

SESSION = Session()
ROBOTS = {}

def allowed(url):
    host = urlsplit(url).netloc
    if host not in ROBOTS:
        ROBOTS[host] = SESSION.get(f"https://{host}/robots.txt")
    return not any(urlsplit(url).path.startswith(line.split(": ")[1])
                   for line in ROBOTS[host].splitlines() if line.startswith("Disallow"))

@durable.step
def fetch(url):
    count("fetch:" + urlsplit(url).path)
    return SESSION.get(url) if allowed(url) else None

@durable.workflow(run_id="scraper")
def main():
    pages = [fetch("https://site/a")]
    die_once()
    pages += [fetch("https://site/b"), fetch("https://site/private")]
    return sum(len(p) for p in pages if p)
"""
COMMANDS = HEAD + """
class App:  # a typer.Typer stand-in
    def __init__(self):
        self.commands = {}
    def command(self, name=None):
        def register(fn):
            self.commands[name or fn.__name__] = fn
            return fn
        return register
    def __call__(self, argv):
        return self.commands[argv[0]](*argv[1:])

app = App()

@durable.step
def double(i):
    count(f"double:{i}")
    return 2 * i

@durable.workflow(run_id=lambda n: f"batch-{n}")
def batch(n):
    out = double(0)
    die_once()
    return out + sum(double(i) for i in range(1, n))

@app.command()
def run(n):
    return batch(int(n))

@app.command("hello")
def hello(name):
    return f"hi {name}"

def main():
    return app(["run", "3"])
"""
CONFIG = HEAD + """
import dataclasses

@dataclasses.dataclass(frozen=True)
class Config:
    batch: int
    model: str
    verbose: bool = False

    @classmethod
    def from_env(cls):
        return cls(int(os.environ.get("APP_BATCH", "2")), os.environ.get("APP_MODEL", "m1"),
                   os.environ.get("APP_VERBOSE") == "1")

CONFIG = Config.from_env()

@durable.step
def chunk(i):
    count(f"chunk:{i}")
    return f"{CONFIG.model}[{i * CONFIG.batch}:{(i + 1) * CONFIG.batch}]"

@durable.workflow(run_id="config")
def main():
    out = [chunk(0)]
    die_once()
    return " ".join(out + [chunk(1)])
"""
LOGGING = HEAD + """
import logging, sys

log = logging.getLogger("job")

def setup_logging(level=logging.INFO):
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        log.addHandler(handler)
    log.setLevel(level)

setup_logging()

@durable.step
def work(i):
    count(f"work:{i}")
    log.info("working on %d", i)
    return i * 10

@durable.workflow(run_id="logging")
def main():
    total = work(1)
    die_once()
    total += work(2)
    log.warning("done: %d", total)
    return total
"""
LLM = HEAD + """
import functools, sys

TOKENS = {"prompt": 0, "completion": 0}

def retry(times=3, delay=0.001):
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            for attempt in range(times):
                try:
                    return fn(*args, **kwargs)
                except TimeoutError:
                    time.sleep(delay * 2 ** attempt)
            raise RuntimeError("gave up")
        return inner
    return wrap

@retry(times=3)
def complete(prompt):
    TOKENS["prompt"] += len(prompt.split())
    answer = prompt.upper()
    TOKENS["completion"] += len(answer.split())
    return answer

@durable.step
def ask(q):
    count("ask:" + q)
    return complete(f"say {q}")

@durable.workflow(run_id="llm")
def main():
    a = ask("one")
    die_once()
    b = ask("two")
    print("tokens", TOKENS, file=sys.stderr)
    return a + " " + b
"""
SQLITE = HEAD + """
import sqlite3

class Store:
    def __init__(self, path):
        self.path = path
    def _connect(self):
        conn = sqlite3.connect(self.path)
        conn.execute("CREATE TABLE IF NOT EXISTS rows (batch INTEGER, value INTEGER)")
        return conn
    def insert(self, batch, values):
        with self._connect() as conn:
            conn.execute("DELETE FROM rows WHERE batch = ?", (batch,))  # a retry writes no twice
            conn.executemany("INSERT INTO rows VALUES (?, ?)", [(batch, v) for v in values])
        return len(values)

STORE = Store(os.path.join(os.path.dirname(os.path.abspath(__file__)), "job.db"))

@durable.step
def load(batch):
    count(f"load:{batch}")
    return STORE.insert(batch, [batch * 10 + i for i in range(3)])

@durable.workflow(run_id="sqlite")
def main():
    n = load(0)
    die_once()
    return n + load(1)
"""
PROGRAMS = {  # name: (its text, what an uninterrupted run gives, the steps it executes)
    "scraper": (SCRAPER, "28", ["fetch:/a", "fetch:/b", "fetch:/private"]),
    "commands": (COMMANDS, "6", ["double:0", "double:1", "double:2"]),
    "config": (CONFIG, "m1[0:2] m1[2:4]", ["chunk:0", "chunk:1"]),
    "logging": (LOGGING, "30", ["work:1", "work:2"]),
    "llm": (LLM, "SAY ONE SAY TWO", ["ask:one", "ask:two"]),
    "sqlite": (SQLITE, "6", ["load:0", "load:1"]),
}
RUN = 'import prog\nprint("value", prog.main())'


def test_more_common_programs_resume_after_a_kill_with_each_step_run_once(tmp_path: Path) -> None:
    folders = {n: tmp_path / n for n in PROGRAMS}
    for name, place in folders.items():
        place.mkdir()
        (place / "prog.py").write_text(PROGRAMS[name][0])
    killed = run_each([(folders[n], RUN, {"KILL": "1"}) for n in PROGRAMS])
    assert not any("value" in out for out in killed), killed
    resumed = run_each([(folders[n], RUN, {}) for n in PROGRAMS])
    for (name, (_, value, steps)), out in zip(PROGRAMS.items(), resumed, strict=True):
        assert f"value {value}" in out.splitlines(), (name, out)
        assert sorted((folders[name] / "count").read_text().split()) == steps, name
