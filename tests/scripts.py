"""A test's own script run in a fresh interpreter, as a user runs it: the
script's folder and this checkout importable, the store (`DURABLE_STORE`,
`STORE`) and the count file its step bodies append to (`COUNT_FILE`) in that
folder. Bytecode is not written: the tests edit the files between runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from . import forkcli

ROOT = Path(__file__).resolve().parents[1]


def run_in(folder: Path, *argv: str, **env: str) -> str:
    """`python ARGV` in `folder`, `env` added: its stdout and stderr. A
    process of its own, forked from one that imported durable once
    (`forkcli`), or a fresh Python (`forkcli.forkable`)."""
    full = {
        **os.environ,
        "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "STORE": str(folder / "store"),
        "DURABLE_STORE": str(folder / "store"),
        "COUNT_FILE": str(folder / "count"),
        **env,
    }
    if not forkcli.forkable(argv, full):
        done = subprocess.run(
            [sys.executable, *argv], cwd=folder, env=full, capture_output=True, text=True, timeout=120, check=False
        )
    else:
        done = forkcli.run(argv, folder, full, 120)
    return done.stdout + done.stderr


def suspending(call: str, params: str = "x", given: str = "10") -> str:
    """The end of a script: its workflow `wf(params)` returns `call` (one
    step's), suspending after it when STOP is set, and prints `value ...`
    or `suspended`."""
    return f"""
@durable.workflow(run_id="r1")
def wf({params}):
    out = {call}
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out

try:
    print("value", wf({given}))
except durable.Suspended:
    print("suspended")
"""


def counted(name: str, returns: str) -> str:
    """A step `name(x)` that appends its name to COUNT_FILE and returns `returns`."""
    return f"""
@durable.step
def {name}(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("{name}\\n")
    return {returns}
"""


def edited_env(folder: Path) -> str:
    """flow.py run with K=2 until it suspends after its step, then with K=3:
    what the second run printed."""
    assert "suspended" in run_in(folder, "flow.py", K="2", STOP="1")
    return run_in(folder, "flow.py", K="3")


def refused_then_replayed(folder: Path, old: str) -> None:
    """K edited from 2 to 3 refuses the run (it printed `value {old}` before
    the fix); K back to 2, the same value, replays it."""
    out = edited_env(folder)
    assert "DefinitionChangedError" in out and f"value {old}" not in out
    assert f"value {old}" in run_in(folder, "flow.py", K="2")


def run_each(jobs: Sequence[tuple[Path, str, Mapping[str, str]]]) -> list[str]:
    """`run_in(folder, "-c", code, **env)` for each job, one after another:
    what each printed. One interpreter imports durable's engine and forks
    a process for each job, which runs its code as a fresh `python -c`
    would from there (its folder first on the path, its `__main__`, a
    normal exit): a real process each, without the ~0.2 s of CPU each
    child spent importing the engine again (tests that run on every
    Python started 45 such children a module). Forked from `forkcli`'s
    servers where it may (no interpreter started for the driver either,
    and jobs one after another in other hash seeds), else so."""
    envs = [
        {
            **os.environ,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}",
            "STORE": f"{folder}/store",
            "DURABLE_STORE": f"{folder}/store",
            "COUNT_FILE": f"{folder}/count",
            **env,
        }
        for folder, _, env in jobs
    ]
    if all(forkcli.forkable(["-c"], env) for env in envs):
        done = [forkcli.run(["-c", code], folder, env, 90) for (folder, code, _), env in zip(jobs, envs, strict=True)]
        return [d.stdout + d.stderr for d in done]
    with tempfile.TemporaryDirectory() as scratch:
        spec = Path(scratch) / "jobs.json"
        spec.write_text(json.dumps([[str(folder), code, dict(env)] for folder, code, env in jobs]))
        done = subprocess.run(
            [sys.executable, "-c", _DRIVER, str(spec), str(ROOT)],
            cwd=scratch,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
            capture_output=True,
            text=True,
            timeout=60 + 30 * len(jobs),
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return [Path(f"{spec}.{i}.out").read_text() + Path(f"{spec}.{i}.err").read_text() for i in range(len(jobs))]



def twice(
    folders: Mapping[str, Path],
    code: str,
    between: Callable[[str, Path], Mapping[str, str]],
    first: Mapping[str, str] | None = None,
) -> dict[str, tuple[str, list[str], str, list[str]]]:
    """`code` run in each folder (`first` added to its environment), then
    `between(name, folder)` (which edits the files and gives the second
    run's environment), then `code` again: what each run printed and the
    count file's lines after it, by name. Each run a process of its own
    (`run_each`: two interpreters in all)."""
    firsts = run_each([(folder, code, first or {}) for folder in folders.values()])
    counts = {name: _counted(folder) for name, folder in folders.items()}
    envs = [between(name, folder) for name, folder in folders.items()]
    seconds = run_each([(folder, code, env) for folder, env in zip(folders.values(), envs, strict=True)])
    return {
        name: (firsts[i], counts[name], seconds[i], _counted(folder))
        for i, (name, folder) in enumerate(folders.items())
    }


# flow.py of an edited-or-same pair (`twice`): `{head}` at module level, a
# counted step `s(x)` whose body ends with `{body}`, and the workflow `wf`
# calling it, suspended under STOP so that the second run resumes it.
# The workflow of a flow whose step `s` stands above it: suspended after
# `s` when STOP is set (the first of a pair of runs).
SUSPENDING_WF = """

@durable.workflow(run_id="r1")
def wf(x):
    out = s(x)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""

EDITED_FLOW = """
import os, durable
{head}

@durable.step
def s(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("s\\n")
    {body}
""" + SUSPENDING_WF

# What each run of such a pair does: call `wf`, print how it went.
RUN_FLOW = """
import durable, flow
try:
    print("value", flow.wf(10))
except durable.Suspended:
    print("suspended")
except durable.DefinitionChangedError as e:
    print("refused", e)
"""

# The same for a workflow taking no arguments.
RUN_WF = RUN_FLOW.replace("flow.wf(10)", "flow.wf()")


def _counted(folder: Path) -> list[str]:
    count = folder / "count"
    return count.read_text().split() if count.exists() else []


# The forked child leaves the loop only by an exception: its code's own
# (printed and exit status 1, as `python -c` does), or the SystemExit
# raised when the code ends, so that the interpreter exits as usual
# (atexit handlers, threads joined, buffers flushed).
_DRIVER = """
import json, os, sys, types
import durable._api.step, durable._api.workflow  # once, before the forks

spec, root = sys.argv[1], sys.argv[2]
for i, (folder, code, env) in enumerate(json.loads(open(spec).read())):
    pid = os.fork()
    if pid == 0:
        os.chdir(folder)
        os.environ.update({"PYTHONPATH": folder + os.pathsep + root, "STORE": folder + "/store",
                           "DURABLE_STORE": folder + "/store", "COUNT_FILE": folder + "/count", **env})
        sys.path.insert(0, folder)
        for fd, suffix in ((1, "out"), (2, "err")):
            os.dup2(os.open(f"{spec}.{i}.{suffix}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        sys.argv = ["-c"]
        main = sys.modules["__main__"] = types.ModuleType("__main__")
        exec(compile(code, "<string>", "exec"), main.__dict__)
        sys.exit(0)
    os.waitpid(pid, 0)
"""


# The end of a write-then-read case's module (`write_then_read`): step `w`
# writes (`write`), the workflow `wf` suspends after it under STOP, step
# `r` reads (`read`). Resumed in a new process, `w` replayed, `r` would
# read what the import made: the resume must be refused, or, where nothing
# `r` reads changed, go on with the value 0 (the read's own).
WRITE_READ = """

@durable.step
def w(x):
    {write}
    return x

@durable.step
def r(x):
    return {read} + x

@durable.workflow(run_id="r-{name}")
def wf():
    w(5)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return r(0)
"""

# Two counted steps (`count(name)`, which the module's head defines) around a
# suspend: `a` writes, `b`'s statement `{read}` (a `return ...`) reads; how
# often each ran across the suspend and the resume.
# A client's rate limiter: it reads the time its last call left only to sleep
# (test_review60_users, test_review63_users: resumed, not refused).
RATE_LIMITER = """class RateLimiter:
    def __init__(self, per_sec):
        self.interval, self.last = 1.0 / per_sec, 0.0
    def wait(self):
        delay = self.last + self.interval - time.monotonic()
        if delay > 0:
            time.sleep(min(delay, 0.001))
        self.last = time.monotonic()
"""

COUNTED_WRITE_THEN = """
{setup}

@durable.step
def a(x):
    count("{name}:a")
    {write}
    return x

@durable.step
def b(x):
    count("{name}:b")
    {read}

@durable.workflow(run_id="r-{name}")
def wf():
    a(5)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return b(0)
"""
# WRITE_READ with each step body counted: `b` returns `{read} + x`.
COUNTED_WRITE_READ = COUNTED_WRITE_THEN.replace("    {read}\n", "    return {read} + x\n")

_WRITE_READ_RUN = """
import importlib, durable
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module(name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "writes and another step reads" in str(e) else repr(str(e)[:200]))
"""


def write_then_read(folder: Path, modules: Mapping[str, str], tail: str = "", more: Sequence[str] = ()) -> str:
    """Each module (name -> its text: `write_read`) written to `folder`, its
    `wf` run with STOP, then resumed, `tail` (code printing the cases
    `more` in the same words) run after them, one process a phase
    (`run_each`). The first phase must have suspended every case: what
    the resume printed."""
    for name, text in modules.items():
        (folder / f"{name}.py").write_text(text)
    run = _WRITE_READ_RUN.format(names=list(modules)) + tail
    first, second = run_each([(folder, run, {"STOP": "1"}), (folder, run, {})])
    assert first.split() == [w for n in [*modules, *more] for w in (n, "suspended")], first
    return second


def write_read(head: str, name: str, write: str, read: str) -> str:
    """A write-then-read module: `head`, then WRITE_READ with its step `w`
    doing `write` and `r` returning `read` plus its argument."""
    return head + WRITE_READ.format(name=name, write=write, read=read)


def said(refused: Sequence[str], going_on: Sequence[str] = ()) -> list[str]:
    """What the resume of `write_then_read` prints, word by word: each of
    `refused` refused, each of `going_on` its value 0."""
    return [w for n in refused for w in (n, "refused")] + [w for n in going_on for w in (n, "value", "0")]


def registry_runs(
    folder: Callable[[str], Path],
    cases: Mapping[str, tuple[str, str]],
    registry: str,
    plugins: tuple[str, str],
    is_function: Callable[[str], bool],
) -> dict[str, tuple[str, list[str], str, list[str]]]:
    """A registry module (`registry`) that a decorator in `plugins.py`
    fills, and per case a flow whose step returns what one registry gives
    (`cases`: name -> (the registry's name, the step's expression)), its
    plugin (`plugins`: the class's source, the function's) edited between
    its two runs (`twice`); "same" reads them all, nothing edited."""
    heads = {name: f"import plugins\nfrom registry import {reg}" for name, (reg, _) in cases.items()}
    flows = {name: EDITED_FLOW.format(head=heads[name], body=f"return {reads}") for name, (_, reads) in cases.items()}
    flows["same"] = EDITED_FLOW.format(
        head="\n".join(heads.values()), body=f"return [{', '.join(reads for _, reads in cases.values())}]"
    )
    folders = {}
    for name, flow in flows.items():
        folders[name] = place = folder(name)
        (place / "flow.py").write_text(flow)
        (place / "registry.py").write_text(registry)
        source = "".join(plugins) if name == "same" else plugins[1] if is_function(name) else plugins[0]
        (place / "plugins.py").write_text(source)

    def between(name: str, place: Path) -> dict[str, str]:
        if name != "same":
            path = place / "plugins.py"
            old = "x * 9" if is_function(name) else "x * 7"
            path.write_text(path.read_text().replace(old, "x * 5"))
        return {}

    return twice(folders, RUN_FLOW, between, {"STOP": "1"})


def refused_after_edit(run: tuple[str, list[str], str, list[str]]) -> None:
    """What `twice` gave for a case edited between its runs: the first run
    suspended after its step ran once, the second was refused as changed
    and ran nothing (a replay would print the old output)."""
    first, count, second, after = run
    assert "suspended" in first and count == ["s"], first
    assert "refused" in second and "changed" in second, second
    assert after == ["s"]


# A case of `file_case_runs`: (its files by name, the flow's imports, the
# step's expression, the change between its runs: (a file, old, new), or
# ("ENV", name, value) for an environment variable the second run gets).
FileCase = tuple[Mapping[str, str], str, str, tuple[str, str, str]]


def file_case_runs(
    folder: Callable[[str], Path], cases: Mapping[str, FileCase]
) -> dict[str, tuple[str, list[str], str, list[str]]]:
    """Per case a flow whose step returns its expression, run `twice` with
    its change between the runs; "same" has every case's files and
    expression, nothing changed."""
    folders = {}
    for name, (files, head, reads, _) in cases.items():
        folders[name] = place = folder(name)
        (place / "flow.py").write_text(EDITED_FLOW.format(head=head, body=f"return {reads}"))
        for file, text in files.items():
            (place / file).write_text(text)
    same = folders["same"] = folder("same")
    heads = "\n".join(dict.fromkeys(head for _, head, _, _ in cases.values()))
    body = f"return [{', '.join(reads for _, _, reads, _ in cases.values())}]"
    (same / "flow.py").write_text(EDITED_FLOW.format(head=heads, body=body))
    for files, *_ in cases.values():
        for file, text in files.items():
            (same / file).write_text(text)

    def between(name: str, place: Path) -> dict[str, str]:
        if name == "same":
            return {}
        file, old, new = cases[name][3]
        if file == "ENV":
            return {old: new}
        path = place / file
        path.write_text(path.read_text().replace(old, new))
        return {}

    return twice(folders, RUN_FLOW, between, {"STOP": "1"})


def suspend_then_resume(folders: Mapping[str, Path]) -> dict[str, tuple[str, str, list[str]]]:
    """Per case, its folder's flow.py (a `wf` suspending when STOP is set) run
    with STOP, then resumed without it, forked from one interpreter: the two
    outputs and the lines its steps wrote to `count`."""
    jobs = [job for f in folders.values() for job in ((f, RUN_WF, {"STOP": "1"}), (f, RUN_WF, {}))]
    outs = run_each(jobs)
    return {
        name: (outs[2 * i], outs[2 * i + 1], (folder / "count").read_text().split())
        for i, (name, folder) in enumerate(folders.items())
    }


def install_distribution(site: Path, name: str, version: str, group: str, names: tuple[str, ...]) -> None:
    """A distribution `name` at `version` in the folder `site`, its module
    `name` (a `search` function) offered as the entry points `names` of
    `group`; an older version of it removed, as an upgrade does."""
    for old in site.glob(f"{name}-*.dist-info"):
        shutil.rmtree(old)
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n" + "".join(f"{n} = {name}:search\n" for n in names))
    (site / f"{name}.py").write_text("def search(q):\n    return q\n")
