"""Helpers for tests that drive the real `durable` command in child processes."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
import types
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import forkcli

REPO = Path(__file__).resolve().parents[1]

# `durable` as its console script starts it, so that the commands it prints
# start `durable ...` as the tests expect; started as `python -m durable`,
# they start so (`_errortext.program`).
DURABLE = (sys.executable, "-c", "import sys; from durable._cli import main; sys.exit(main())")

# A workflow file as a user would write it. Each step notes its execution in
# $FLOW_COUNTS; the step numbered $FLOW_BLOCK_AT announces itself on stdout
# and then waits for a line on stdin (the test's handshake).
FLOW = '''
import os
import sys

import durable


def note(name):
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write(name + "\\n")


def checkpoint(n):
    if os.environ.get("FLOW_BLOCK_AT") == str(n):
        print(f"step {n} started", flush=True)
        sys.stdin.readline()


@durable.step
def s1(n):
    note("s1"); checkpoint(1); return n + 1


@durable.step
def s2(n):
    note("s2"); checkpoint(2); return n * 2


@durable.step
def s3(n):
    note("s3"); checkpoint(3); return n + 10


@durable.step
def s4(n):
    note("s4"); checkpoint(4); return n * 3


@durable.step
def s5(n):
    note("s5"); checkpoint(5); return n - 1


@durable.workflow
def pipeline(n: int) -> int:
    return s5(s4(s3(s2(s1(n)))))


@durable.step
def draft(topic):
    note("draft")
    return f"draft about {topic}"


@durable.workflow
def approval(topic: str, reviewer_decision: str | None = None) -> str:
    text = draft(topic)
    if reviewer_decision is None:
        durable.suspend("waiting for reviewer_decision")
    return f"{text}: {reviewer_decision}"


@durable.step
def explode(x):
    note("explode")
    raise ValueError(f"bad input {x}")


@durable.workflow
def broken(x: int) -> int:
    return explode(s1(x))


@durable.workflow
def napping(n: int) -> int:
    n = s1(n)
    durable.sleep(3600)
    return s2(n)


if __name__ == "__main__":
    note("main-block")
    print(pipeline.with_options(run_id="from-main")(1))
'''

PIPELINE_RESULT = ((1 + 1) * 2 + 10) * 3 - 1  # s1..s5 applied to 1


def child_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DURABLE_", "FLOW_"))}
    env["PYTHONPATH"] = str(REPO)
    env["FLOW_COUNTS"] = str(tmp / "counts.txt")
    env["DURABLE_STORE"] = str(tmp / "store")
    env.update(extra)
    return env


def write_flow(tmp: Path, source: str = FLOW, name: str = "flow.py") -> Path:
    path = tmp / name
    path.write_text(source)
    return path


def durable(
    tmp: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`durable ARGS` as a child process, in tmp: forked from an interpreter
    that imported the command line once (`forkcli`), or a fresh Python
    (`forkcli.forkable`)."""
    env = env or child_env(tmp)
    if forkcli.forkable(DURABLE[1:], env):
        return forkcli.run([*DURABLE[1:], *args], tmp, env, timeout)
    return subprocess.run(
        [*DURABLE, *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )


def spawn(tmp: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*DURABLE, *args],
        cwd=tmp,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def held_and_waiting(
    tmp: Path, wait: str, *options: str
) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]:
    """A `durable run` holding run `held` of flow.py (blocked at step 2
    until it reads a line), and a second one started with `--wait WAIT`
    once the first holds it; both given `options` (`--store URL`)."""
    args = (*options, "run", "flow.py:pipeline", "--run-id", "held", "--var", "n=1")
    holder = spawn(tmp, *args, env=child_env(tmp, FLOW_BLOCK_AT="2"))
    try:
        read_until(holder.stdout, "step 2 started")
        return holder, spawn(tmp, *args, "--wait", wait, env=child_env(tmp))
    except BaseException:
        holder.kill()
        holder.wait()
        raise


def read_until(stream: Any, needle: str, timeout: float = 60) -> str:
    """Read a child's pipe until `needle` shows up (a handshake, not a sleep);
    fail if the child closes it or says nothing for `timeout` seconds."""
    seen = b""
    deadline = time.monotonic() + timeout
    fd = stream.fileno()
    while needle.encode() not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise AssertionError(f"timed out waiting for {needle!r}; got {seen.decode()!r}")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise AssertionError(f"pipe closed before {needle!r}; got {seen.decode()!r}")
        seen += chunk
    return seen.decode()


def report_lines(stderr: str) -> list[str]:
    """What `durable run` says on stderr besides its line per operation
    (`  [0] s1 executed`), stripped."""
    return [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("  [")]


def counts(tmp: Path) -> Counter[str]:
    path = tmp / "counts.txt"
    return Counter(path.read_text().split()) if path.exists() else Counter()


def runs_json(tmp: Path, *args: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    done = durable(tmp, "runs", "--json", *args, env=env)
    # Exit 2 with `[]` when the store's folder is not there (nothing was ever written).
    missing = done.returncode == 2 and "there is no such folder" in done.stderr
    assert done.returncode == 0 or missing, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def show_json(tmp: Path, run_id: str, *args: str) -> dict[str, Any]:
    done = durable(tmp, "show", run_id, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def on_a_terminal(cmd: list[str], env: dict[str, str]) -> tuple[str, str]:
    """Run cmd with its stderr on a pseudo-terminal (what a progress bar
    looks for); its stdout and what it wrote to the terminal."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    stdout, _ = proc.communicate(timeout=60)
    return stdout.decode(), b"".join(chunks).decode()


# Each step of FLOW once: what a run that executed everything noted.
ALL_STEPS = {"s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 1}


# Runs cells (a JSON list of sources) one after another in a real IPython shell,
# as a notebook kernel runs them.
IPYTHON_SHELL = """\
import json, sys
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
for cell in json.load(open(sys.argv[1])):
    shell.run_cell(cell, store_history=True)
"""


def run_cells(tmp: Path, cells: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """The cells in a real IPython shell in a child process (tmp its working
    folder, DURABLE_STORE tmp/store, env added), which must end well."""
    (tmp / "cells.json").write_text(json.dumps(cells))
    (tmp / "shell.py").write_text(IPYTHON_SHELL)
    full = {**os.environ, "PYTHONPATH": str(REPO), "DURABLE_STORE": str(tmp / "store"),
            "IPYTHONDIR": str(tmp / "ipython"), **env}  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(tmp / "shell.py"), str(tmp / "cells.json")],
        cwd=tmp, env=full, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def import_memo_module(
    tmp: Path, monkeypatch: Any, prefix: str, source: str, cfg: str, store: str
) -> Iterator[types.ModuleType]:
    """The memo tests' module: `source` written under a fresh name beside a
    config module `cfg` (`FACTOR = 1`), imported with no .pyc (the tests
    edit both within a second), with DURABLE_STORE at `store`; both are
    forgotten afterwards. A generator, for a fixture to yield from."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    (tmp / f"{name}.py").write_text(source)
    (tmp / f"{cfg}.py").write_text("FACTOR = 1\n")
    monkeypatch.syspath_prepend(str(tmp))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.delitem(sys.modules, cfg, raising=False)
    monkeypatch.setenv("DURABLE_STORE", store)
    yield __import__(name)
    for gone in (name, cfg):
        sys.modules.pop(gone, None)


def memo_source(head: str, extra: str, tail: str) -> str:
    """The source of a module for the memo tests (a step's fingerprint memo,
    a re-call's definition memo): head (imports), then the helpers,
    constants, closures and tables those tests change one by one, with
    `extra` lines among the constants, then tail (the steps and workflows)."""
    return head + _MEMO_HELPERS.replace("{extra}", extra) + tail


_MEMO_HELPERS = """\
RUNS = []
LIMIT = 2
{extra}globals()["TABLE"] = [1, 2]  # no statement binds it: counted by its value


def helper(x):
    return x + LIMIT


def other_helper(x):
    return x - LIMIT


def handle_a(x):
    return x


def handle_b(x):
    return -x


HANDLERS = {"a": handle_a}


class Cfg:
    SCALE = 1


def make_scaler(k):
    def scale(x):
        return x * k

    return scale


scaler = make_scaler(1)
"""


# The changes to `memo_source`'s helpers that every memo must see.
def _rebind_helper(m: types.ModuleType) -> None:
    m.helper = m.other_helper


def _replace_helper_code(m: types.ModuleType) -> None:
    m.helper.__code__ = m.other_helper.__code__


def _rebind_constant(m: types.ModuleType) -> None:
    m.LIMIT = 3


def _set_module_attribute(m: types.ModuleType) -> None:
    m.cfg.FACTOR = 2  # `cfg.FACTOR`, read through another module


def _swap_handler(m: types.ModuleType) -> None:
    m.HANDLERS["a"] = m.handle_b  # the dict is changed in place, not rebound


def _grow_table(m: types.ModuleType) -> None:
    m.TABLE.append(3)  # in place; counted by value (no statement binds it)


def _set_class_attribute(m: types.ModuleType) -> None:
    m.Cfg.SCALE = 2


def _change_closure_cell(m: types.ModuleType) -> None:
    m.scaler.__closure__[0].cell_contents = 3


MEMO_HELPER_CHANGES: dict[str, Callable[[types.ModuleType], None]] = {
    "helper rebound": _rebind_helper,
    "helper __code__ replaced": _replace_helper_code,
    "constant rebound": _rebind_constant,
    "another module's constant set": _set_module_attribute,
    "dict of helpers changed in place": _swap_handler,
    "list counted by value mutated in place": _grow_table,
    "class attribute set": _set_class_attribute,
    "closure cell changed": _change_closure_cell,
}


# The start of a child script that counts what it runs: `note(what)` appends
# a line to the file named by its first argument.
NOTE_HEAD = """
import asyncio, os, signal, sys
import durable

LOG = sys.argv[1]

def note(what):
    with open(LOG, "a") as f:
        f.write(what + "\\n")
"""


class Poke:
    """Stands for another thread adding to a dict while durable reads it
    (an item or a step's captured state, digested): it adds to the dict it
    is in as it is pickled, once `into["filling"]` is set."""

    def __init__(self, into: dict[object, object]) -> None:
        self.into = into

    def __getstate__(self) -> dict[str, object]:
        if self.into.get("filling"):
            self.into[len(self.into)] = 0
        return {}


def killed_at(script: str, at: int, *args: str) -> bool:
    """Run a CLI command through `script`, which kills its own process at
    its `at`-th write (`-c script at args...`): whether it was killed (True)
    or finished (False); any other end fails the test."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(at), *args], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode in (0, -9), done.stderr
    return done.returncode == -9
