"""The step cache across real processes: what invalidates an entry when the
script is edited between runs, two processes computing one key at once, two
"machines" sharing an S3 store, and the `durable cache` commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkcli
from tests.clikit import REPO, durable, read_until

SCRIPT = """
import os
import sys

import durable

RATE = 2


def helper(x):
    return x * RATE


@durable.step(cache=True)
def compute(x):
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    if os.environ.get("HOLD"):  # a handshake: wait for the test's word
        print("STARTED", flush=True)
        sys.stdin.readline()
    return (os.getpid(), helper(x))


@durable.workflow
def flow(x):
    return compute(x)


if __name__ == "__main__":
    target = flow if os.environ.get("IN_RUN") else compute
    print(json.dumps(target(json.loads(sys.argv[1]))), flush=True)
""".replace("import os\n", "import json\nimport os\n", 1)


def env_for(tmp: Path, store: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_")}
    env.update(PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", DURABLE_STORE=store)
    env["COUNT_LOG"] = str(tmp / "executions.log")
    env.update(extra)
    return env


def run(script: Path, arg: object, env: dict[str, str], cwd: Path | None = None) -> object:
    # forked from an interpreter that imported durable once (`forkcli`)
    done = forkcli.call([str(script), json.dumps(arg)], cwd or script.parent, env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def executions(tmp: Path) -> int:
    log = tmp / "executions.log"
    return len(log.read_text().split()) if log.exists() else 0


def test_edits_that_change_what_runs_invalidate_and_others_do_not(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    env = env_for(tmp_path, str(tmp_path / "store"))
    seen = []

    def call(arg: object = 3, **extra: str) -> int:
        seen.append(run(script, arg, dict(env, **extra)))
        return executions(tmp_path)

    assert call() == 1
    assert call() == 1  # another process: a hit
    assert call(IN_RUN="1") == 1  # a run of a workflow: a hit too
    assert len({tuple(v) for v in seen}) == 1  # the same value (the first pid) every time
    edits = [
        ("    return x * RATE\n", "    # a comment\n    return (x *  RATE)\n", 1),  # no change
        ("    return (x *  RATE)\n", "    return (x * RATE) + 0\n", 2),  # a helper edit
        ("RATE = 2\n", "RATE = 5\n", 3),  # a constant
    ]
    for old, new, expected in edits:
        script.write_text(script.read_text().replace(old, new))
        assert call() == expected, (old, new)
    assert call(3.0) == 4  # 3 and 3.0 are different arguments
    assert seen[-2][1] == 15 and seen[-1][1] == 15.0


CARRIED = """
import json
import os
import sys

import durable
from tools import Model, double


def note(name):
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(name + "\\n")


@durable.step(cache=True)
def apply(fn, x):
    note("apply")
    return fn(x)


@durable.step(cache=True)
def predict(model, x):
    note("predict")
    return model.predict(x)


@durable.step(cache=True)
def build(cls, x):
    note("build")
    return cls(2).predict(x)


@durable.step(cache=durable.Cache(key=lambda fn, x: (fn, x)))
def keyed(fn, x):
    note("keyed")
    return fn(x)


class Scaler:
    def __init__(self, k):
        self.k = k

    def scale(self, x):
        return self.k * x

    @durable.step(cache=True)
    def run(self, x):
        note("run")
        return self.scale(x)


print(json.dumps([
    apply(double, 3), predict(Model(2), 3), build(Model, 3), Scaler(2).run(3), keyed(double, 3)
]))
"""

TOOLS = """
class Model:
    SCALE = 1

    def __init__(self, k):
        self.k = k

    def predict(self, x):
        return self.k * x * self.SCALE


def double(x):
    return x * 2
"""


def test_code_an_argument_carries_is_part_of_the_key(tmp_path: Path) -> None:
    """A function passed by name, an object's or a class's methods, the
    methods a method step calls on `self`: their digest is a name and a
    state, so an edit of their code must still make the call compute."""
    script, tools = tmp_path / "job.py", tmp_path / "tools.py"
    script.write_text(CARRIED)
    tools.write_text(TOOLS)
    env = env_for(tmp_path, str(tmp_path / "store"), PYTHONDONTWRITEBYTECODE="1")
    assert run(script, 0, env) == [6, 6, 6, 6, 6]
    assert run(script, 0, env) == [6, 6, 6, 6, 6] and executions(tmp_path) == 5  # hits
    tools.write_text(TOOLS.replace("        return", "        # a comment\n        return"))
    assert run(script, 0, env) == [6, 6, 6, 6, 6] and executions(tmp_path) == 5  # still hits
    tools.write_text(TOOLS.replace("return x * 2", "return x * 3"))
    assert run(script, 0, env) == [9, 6, 6, 6, 9] and executions(tmp_path) == 7
    tools.write_text(TOOLS.replace("return self.k * x", "return self.k + x"))
    assert run(script, 0, env) == [6, 5, 5, 6, 6] and executions(tmp_path) == 9  # 6s: hits
    script.write_text(CARRIED.replace("return self.k * x", "return self.k - x"))
    assert run(script, 0, env) == [6, 5, 5, -1, 6] and executions(tmp_path) == 10
    # A class constant a method reads (`self.SCALE`) counts as written.
    tools.write_text(TOOLS.replace("return self.k * x", "return self.k + x").replace(
        "SCALE = 1", "SCALE = 2"))  # fmt: skip
    assert run(script, 0, env) == [6, 8, 8, -1, 6] and executions(tmp_path) == 12


@pytest.fixture(params=["local", "s3"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The environment of processes sharing one store."""
    if request.param == "local":
        return env_for(tmp_path, str(tmp_path / "store"))
    env = env_for(tmp_path, request.getfixturevalue("s3_url"))
    env.update(request.getfixturevalue("s3_env"))
    return env


def test_two_processes_computing_one_key_store_one_value(
    tmp_path: Path, shared: dict[str, str]
) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    children = [
        subprocess.Popen(
            [sys.executable, str(script), "7"],
            env=dict(shared, HOLD="1", IN_RUN=in_run),
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for in_run in ("", "1")
    ]
    try:
        for child in children:  # both are inside the step body: both missed
            read_until(child.stdout, "STARTED")
        outputs = [child.communicate(b"go\n", timeout=120) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert [c.returncode for c in children] == [0, 0], [o[1].decode() for o in outputs]
    values = [json.loads(out) for out, _ in outputs]  # STARTED was read already
    assert executions(tmp_path) == 2
    assert values[0] == values[1]  # the loser goes on with the winner's value
    assert values[0][0] in {c.pid for c in children}
    listed = durable(tmp_path, "cache", "ls", "--json", env=shared)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 1
    assert run(script, 7, shared) == values[0]  # and a third process gets it too
    assert executions(tmp_path) == 2


@pytest.mark.slow
def test_two_machines_sharing_an_s3_store_compute_once(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str]
) -> None:
    log = tmp_path / "shared-executions.log"  # append-only, seen by both "machines"
    values = []
    for machine in ("alice", "bob"):
        home = tmp_path / machine / "home"
        work = tmp_path / machine / "work"
        home.mkdir(parents=True)
        work.mkdir()
        script = work / "job.py"
        script.write_text(SCRIPT)  # each machine has its own checkout
        env = env_for(tmp_path, s3_url, HOME=str(home), COUNT_LOG=str(log), **s3_env)
        values.append(run(script, 11, env, cwd=work))
        values.append(run(script, 11, dict(env, IN_RUN="1"), cwd=work))
    assert len(log.read_text().split()) == 1
    assert all(v == values[0] for v in values)
    assert not (tmp_path / "alice" / "work" / ".durable").exists()  # all of it on S3


def test_cache_commands(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    env = env_for(tmp_path, str(tmp_path / "store"))
    for x in (1, 2, 3):
        run(script, x, env)
    listed = durable(tmp_path, "cache", "ls", env=env)
    assert listed.returncode == 0 and listed.stdout.count("compute") == 3, listed.stderr
    assert "3 entries" in listed.stderr
    assert durable(tmp_path, "cache", "ls", "other", env=env).stdout == ""
    dry = durable(tmp_path, "cache", "prune", "--max-size", "0B", "--dry-run", env=env)
    assert "would remove 3 entries" in dry.stderr
    bad = durable(tmp_path, "cache", "prune", "--max-size", "lots", env=env)
    assert bad.returncode == 2 and "not a size" in bad.stderr
    # `--max-size 100` meant as 100 MB kept 100 bytes: every entry went.
    bare = durable(tmp_path, "cache", "prune", "--max-size", "100", env=env)
    assert bare.returncode == 2 and "'100' has no unit: say 100MB or 100GB" in bare.stderr
    assert durable(tmp_path, "cache", "ls", env=env).stdout.count("compute") == 3
    none = durable(tmp_path, "cache", "prune", env=env)
    assert none.returncode == 2 and "--older-than" in none.stderr
    cleared = durable(tmp_path, "cache", "clear", "compute", env=env)
    assert cleared.returncode == 0 and "removed 3 entries" in cleared.stderr
    run(script, 1, env)
    assert executions(tmp_path) == 4
    # Under a signing key the unsigned entry fails the check: listed as such,
    # left alone by prune, removed by clear (as its IntegrityError says).
    signed = dict(env, DURABLE_SIGNING_KEY="k")
    listed = durable(tmp_path, "cache", "ls", "--json", env=signed)
    assert [(e["step"], e["verified"]) for e in json.loads(listed.stdout)] == [("compute", False)]
    pruned = durable(tmp_path, "cache", "prune", "--older-than", "0s", env=signed)
    assert "removed 0 entries" in pruned.stderr and "1 entry fails the signature" in pruned.stderr
    cleared = durable(tmp_path, "cache", "clear", env=signed)
    assert cleared.returncode == 0, cleared.stderr
    assert "removed 1 entry (0B, 1 failing the signature check)" in cleared.stderr
    assert durable(tmp_path, "cache", "ls", env=env).stdout == ""


LAMBDAS = """
import json
import durable

a, b = durable.step(cache=True, name="l")(lambda x: x), durable.step(cache=True, name="l")(lambda x: x + 1)
print(json.dumps([a(1), b(1), a(1), b(1)]))
"""


def test_two_lambdas_named_alike_on_one_line_keep_their_own_entries(tmp_path: Path) -> None:
    """Two lambdas on one line under one `name=` are hashed with their whole
    line; which of them runs tells them apart, or `b(1)` was served `a(1)`'s
    entry (1, where running it gives 2)."""
    script = tmp_path / "lambdas.py"
    script.write_text(LAMBDAS)
    env = env_for(tmp_path, str(tmp_path / "store"))
    assert run(script, 0, env) == [1, 2, 1, 2]
    assert run(script, 0, env) == [1, 2, 1, 2]  # from the cache, each its own
