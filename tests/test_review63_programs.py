"""Six small programs as users write them, each killed (`kill -9`) after
its first steps and run again with nothing changed, in a new process: each
resumes, executing every step once, and gives what an uninterrupted run
gives. A retrying HTTP client wrapper keeping a session (headers, a
cookie jar, a backoff it sleeps on), a CSV ETL checking rows against a
module-level schema, an agent loop with a tool registry and a scratchpad
it only logs to, a plugin loader importing `plugins.<name>`, a
configuration object read from a TOML file at import, and an argparse
entry point calling a workflow with its `Namespace` (`python cli.py --n
3`). Made to read what an earlier step left (a last step answering from
the scratchpad `act` logs to; requests sending the header a `login` step
set on the session), a resume is refused, naming what it read: refusals
a user agrees with (a replay cannot redo those writes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each, run_in

pytestmark = pytest.mark.slow  # processes

HEAD = """import os, signal, time, durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

def die_once():
    if os.environ.get("KILL"):
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
"""
HTTP = HEAD + """
class Response:
    def __init__(self, status, body):
        self.status, self.body = status, body

class Session:  # a requests.Session stand-in: headers, cookies, a pool
    def __init__(self):
        self.headers, self.cookies, self.sent = {"User-Agent": "r63"}, {}, 0
    def get(self, url):
        self.sent += 1
        self.cookies["seen"] = url
        return Response(200, url.rpartition("/")[2].upper())

class Client:
    def __init__(self, base, retries=3, backoff=0.001):
        self.base, self.retries, self.backoff = base, retries, backoff
        self.session = Session()
        self.last_error = None
    def fetch(self, path):
        for attempt in range(self.retries):
            try:
                r = self.session.get(self.base + path)
                if r.status == 200:
                    return r.body
            except ConnectionError as e:
                self.last_error = e
            time.sleep(self.backoff * 2 ** attempt)
        raise RuntimeError("gave up")

API = Client("https://api/")

@durable.step
def get(path):
    count("get:" + path)
    return API.fetch(path)

@durable.workflow(run_id="http")
def main():
    a = get("a")
    die_once()
    return a + get("b")
"""
ETL = HEAD + """
import csv
SCHEMA = {"id": int, "price": float, "name": str}
STATS = {"rows": 0, "bad": 0}

def cast(row):
    return {k: SCHEMA[k](v) for k, v in row.items() if k in SCHEMA}

@durable.step
def extract(path):
    count("extract")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))

@durable.step
def transform(rows):
    count("transform")
    out = []
    for row in rows:
        try:
            out.append(cast(row))
            STATS["rows"] += 1
        except ValueError:
            STATS["bad"] += 1
    return out

@durable.step
def load(rows):
    count("load")
    with open("out.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(SCHEMA))
        w.writeheader()
        w.writerows(rows)
    return len(rows)

@durable.workflow(run_id="etl")
def main():
    rows = extract("in.csv")
    die_once()
    return load(transform(rows))
"""
AGENT = HEAD + """
import logging
log = logging.getLogger("agent")
TOOLS = {}
SCRATCH = []

def tool(fn):
    TOOLS[fn.__name__] = fn
    return fn

@tool
def search(q):
    return f"results for {q}"

@tool
def add(q):
    a, b = q.split("+")
    return str(int(a) + int(b))

def note(text):
    SCRATCH.append(text)
    log.debug("note %s", text)

@durable.step
def plan(task):
    count("plan")
    return [("search", task), ("add", "2+3")]

@durable.step
def act(name, arg):
    count("act:" + name)
    out = TOOLS[name](arg)
    note(f"{name}({arg}) -> {out}")
    return out

@durable.workflow(run_id="agent")
def main():
    steps = plan("weather")
    outs = [act(*steps[0])]
    die_once()
    outs += [act(n, a) for n, a in steps[1:]]
    return " | ".join(outs)
"""
PLUGINS = HEAD + """
import importlib
ENABLED = ["upper", "exclaim"]

@durable.step
def apply(name, text):
    count("apply:" + name)
    return importlib.import_module(f"plugins.{name}").run(text)

@durable.workflow(run_id="plugins")
def main():
    text = apply(ENABLED[0], "hi")
    die_once()
    for name in ENABLED[1:]:
        text = apply(name, text)
    return text
"""
CONFIG = HEAD + """
import dataclasses, tomllib

@dataclasses.dataclass(frozen=True)
class Settings:
    model: str
    temperature: float
    retries: int = 2

with open(os.path.join(os.path.dirname(__file__), "settings.toml"), "rb") as f:
    SETTINGS = Settings(**tomllib.load(f)["llm"])

@durable.step
def ask(q):
    count("ask:" + q)
    return f"{SETTINGS.model}@{SETTINGS.temperature}: {q}"

@durable.workflow(run_id="config")
def main():
    a = ask("one")
    die_once()
    return a + " / " + ask("two")
"""
CLI = HEAD + """
import argparse

@durable.step
def square(i):
    count(f"square:{i}")
    return i * i

@durable.workflow
def total(args):
    n = args.n
    out = square(0)
    die_once()
    return out + sum(square(i) for i in range(1, n))

def cli(argv=None):
    parser = argparse.ArgumentParser(prog="cli")
    parser.add_argument("--n", type=int, default=2)
    args = parser.parse_args(argv)
    print("value", total(args))  # the Namespace: its run id and digest by its fields

if __name__ == "__main__":
    cli()
"""
PROGRAMS = {  # name: (its text, what an uninterrupted run gives, the steps it executes)
    "http": (HTTP, "AB", ["get:a", "get:b"]),
    "etl": (ETL, "2", ["extract", "load", "transform"]),
    "agent": (AGENT, "results for weather | 5", ["act:add", "act:search", "plan"]),
    "plugins": (PLUGINS, "HI!", ["apply:exclaim", "apply:upper"]),
    "config": (CONFIG, "m1@0.2: one / m1@0.2: two", ["ask:one", "ask:two"]),
}
RUN = 'import prog\nprint("value", prog.main())'


def test_common_programs_resume_after_a_kill_with_each_step_run_once(tmp_path: Path) -> None:
    texts = {n: t for n, (t, _, _) in PROGRAMS.items()}
    folders = {n: tmp_path / n for n in [*texts, "cli"]}
    for name, place in folders.items():
        place.mkdir()
        (place / ("cli.py" if name == "cli" else "prog.py")).write_text(CLI if name == "cli" else texts[name])
    (folders["etl"] / "in.csv").write_text("id,price,name\n1,2.5,a\n2,3.0,b\n")
    (folders["plugins"] / "plugins").mkdir()
    (folders["plugins"] / "plugins" / "__init__.py").write_text("")
    (folders["plugins"] / "plugins" / "upper.py").write_text("def run(text):\n    return text.upper()\n")
    (folders["plugins"] / "plugins" / "exclaim.py").write_text("def run(text):\n    return text + '!'\n")
    (folders["config"] / "settings.toml").write_text('[llm]\nmodel = "m1"\ntemperature = 0.2\n')
    jobs = [(folders[n], RUN, {"KILL": "1"}) for n in texts]
    killed = run_each(jobs)
    killed.append(run_in(folders["cli"], "cli.py", "--n", "3", KILL="1"))
    assert not any("value" in out for out in killed), killed
    resumed = run_each([(folders[n], RUN, {}) for n in texts])
    resumed.append(run_in(folders["cli"], "cli.py", "--n", "3"))
    said = dict(zip(folders, resumed, strict=True))
    expected = {
        **{n: (f"value {v}", steps) for n, (_, v, steps) in PROGRAMS.items()},
        "cli": ("value 5", ["square:0", "square:1", "square:2"]),
    }
    for name, (value, steps) in expected.items():
        assert said[name].strip() == value, said[name]
        assert sorted((folders[name] / "count").read_text().split()) == steps, name
