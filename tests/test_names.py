"""Names stay pinned: a script's workflows keep their identity however they
are started, and two scripts never share runs."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import durable

SCRIPT = """
import os, sys
import durable

def note(name):
    with open(os.environ["COUNTS"], "a") as f:
        f.write(name + "\\n")

@durable.step
def first(x: int) -> int:
    note("{tag}.first")
    return x + {add}

@durable.step
def second(x: int) -> int:
    note("{tag}.second")
    if os.environ.get("STOP_AT_SECOND"):
        durable.suspend("stopped for the test")
    return x * {mul}

@durable.workflow(run_id="daily")
def main(x: int = 1) -> int:
    return second(first(x))

if __name__ == "__main__":
    print("VALUE", main())
"""


def write(folder: Path, name: str, add: int, mul: int) -> Path:
    path = folder / name
    path.write_text(SCRIPT.format(tag=path.stem, add=add, mul=mul))
    return path


def run(cmd: list[str], cwd: Path, env: dict[str, str], **extra: str) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, env={**env, **extra}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode in (0, 1, 3), done.stderr  # 1: a script that let Suspended out
    return done.stdout + done.stderr


def counts(path: Path) -> Counter[str]:
    return Counter(path.read_text().split()) if path.exists() else Counter()


def test_two_scripts_defining_main_never_share_runs(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    log = tmp_path / "counts"
    env = dict(child_env, COUNTS=str(log))
    a, b = write(tmp_path, "alpha.py", 1, 10), write(tmp_path, "beta.py", 2, 100)
    assert "VALUE 20" in run([sys.executable, str(a)], tmp_path, env)
    assert "VALUE 300" in run([sys.executable, str(b)], tmp_path, env)
    # Same run id, same arguments, one store: each script replays its own run.
    assert "VALUE 20" in run([sys.executable, str(a)], tmp_path, env)
    assert "VALUE 300" in run([sys.executable, str(b)], tmp_path, env)
    assert counts(log) == {"alpha.first": 1, "alpha.second": 1, "beta.first": 1, "beta.second": 1}
    store = durable.open_store(tmp_path / "store")
    assert store.runs("alpha.main") == ["daily"] and store.runs("beta.main") == ["daily"]


def test_a_run_started_by_python_resumes_under_durable_run(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    log = tmp_path / "counts"
    env = dict(child_env, COUNTS=str(log))
    flow = write(tmp_path, "flow.py", 1, 10)
    out = run([sys.executable, str(flow)], tmp_path, env, STOP_AT_SECOND="1")
    assert "suspended" in out
    resumed = run(
        [sys.executable, "-m", "durable", "run", "flow.py:main", "--run-id", "daily", "--resume"],
        tmp_path,
        env,
    )
    assert "Resumed from step 2" in resumed
    assert counts(log) == {"flow.first": 1, "flow.second": 2}
    assert "VALUE 20" in run([sys.executable, str(flow)], tmp_path, env)
    assert counts(log) == {"flow.first": 1, "flow.second": 2}


SPAWNED = SCRIPT.replace(
    'if __name__ == "__main__":',
    """def in_worker() -> int:
    return main()

if __name__ == "__main__" and len(sys.argv) > 1:
    import concurrent.futures as cf, multiprocessing
    ctx = multiprocessing.get_context(sys.argv[1])
    with cf.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        print("VALUE", pool.submit(in_worker).result(timeout=60))
elif __name__ == "__main__":""",
)


def test_a_script_run_in_a_spawned_worker_keeps_its_name_and_resumes(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    # A spawn (or forkserver) worker imports the script as `__mp_main__`:
    # its workflow was named `main`, not `flow.main`, and ran again.
    log = tmp_path / "counts"
    env = dict(child_env, COUNTS=str(log))
    flow = tmp_path / "flow.py"
    flow.write_text(SPAWNED.format(tag="flow", add=1, mul=10))
    assert "suspended" in run([sys.executable, str(flow)], tmp_path, env, STOP_AT_SECOND="1")
    assert "VALUE 20" in run([sys.executable, str(flow), "spawn"], tmp_path, env)
    assert counts(log) == {"flow.first": 1, "flow.second": 2}
    store = durable.open_store(tmp_path / "store")
    assert store.workflows() == ["flow.main"]


def test_with_options_keeps_a_name_equal_to_the_function_name(store: durable.Store) -> None:
    calls: Counter[str] = Counter()

    @durable.step(name="add")
    def add(x: int) -> int:
        calls["add"] += 1
        return x + 1

    def body(x: int) -> int:
        return add(x)

    # name= spelled exactly as the default name would be.
    same = body.__qualname__.replace("<locals>.", "")
    flow = durable.workflow(name=same, store=store)(body)
    bound = flow.with_options(run_id="r")
    assert bound.name == same and bound.fingerprint == flow.fingerprint
    assert bound(1) == 2
    assert flow.with_options(run_id="r", on_change="refuse")(1) == 2
    assert calls == {"add": 1}


def test_resuming_under_the_other_name_continues_the_run(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    # Started as an imported module (workflow `main`), resumed as a script
    # (`flow.main`): before, "no run 'daily'" (the script was identified by
    # its file, `flow.py:main`); both ways are `flow.main` now, and the
    # script's call continues the run the import started. (Counted under
    # another tag than `flow.`: a string naming `flow.first` reads the step
    # only where `flow` is imported.)
    log = tmp_path / "counts"
    env = dict(child_env, COUNTS=str(log))
    (tmp_path / "flow.py").write_text(SCRIPT.format(tag="f", add=1, mul=10))
    started = run([sys.executable, "-c", "import flow; flow.main()"], tmp_path, env,
                  STOP_AT_SECOND="1")  # fmt: skip
    assert "Suspended" in started
    resumed = subprocess.run(
        [sys.executable, "-m", "durable", "run", "flow.py:main", "--run-id", "daily", "--resume"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.split()[-1] == "20"
    assert counts(log) == {"f.first": 1, "f.second": 2}
    store = durable.open_store(tmp_path / "store")
    assert store.runs("main") == ["daily"] and store.workflows() == ["main"]


# A script whose step takes values of its own classes and functions, and
# whose body reads a constant of its own enum: each counts by a name with
# the script's module in it (`__main__`, `__mp_main__` in a spawn worker),
# and by the statements the class's decorator reads.
SCRIPT_VALUES = """
import dataclasses, enum, os, sys
import durable

class Mode(enum.Enum):
    FAST = 1

@dataclasses.dataclass
class Config:
    k: int

class Model:
    def __init__(self, k):
        self.k = k

    def predict(self, x):
        return x * self.k

def helper(x):
    return x + 1

MODE = Mode.FAST

@durable.step
def first(mode, config, model, fn):
    with open(os.environ["COUNTS"], "a") as f:
        f.write("first\\n")
    return fn(model.predict(config.k * mode.value))

@durable.workflow(run_id="daily")
def main():
    out = first(Mode.FAST, Config(2), Model(3), helper)
    if os.environ.get("STOP"):
        durable.suspend("stopped for the test")
    return out + MODE.value

def in_worker():
    return main()

if __name__ == "__main__" and len(sys.argv) > 1:
    import concurrent.futures as cf, multiprocessing
    ctx = multiprocessing.get_context(sys.argv[1])
    with cf.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        print("VALUE", pool.submit(in_worker).result(timeout=60))
elif __name__ == "__main__":
    print("VALUE", main())
"""


def test_a_scripts_own_classes_and_functions_as_arguments_resume_in_a_spawned_worker(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """Started by `python flow.py`, resumed in a spawn worker (the script is
    `__mp_main__` there): the same code and the same arguments, so the step
    is replayed (its arguments and the body's fingerprint counted the
    module by that name: the run was refused as changed)."""
    log = tmp_path / "counts"
    env = dict(child_env, COUNTS=str(log))
    flow = tmp_path / "flow.py"
    flow.write_text(SCRIPT_VALUES)
    assert "suspended" in run([sys.executable, str(flow)], tmp_path, env, STOP="1")
    assert "VALUE 8" in run([sys.executable, str(flow), "spawn"], tmp_path, env)
    assert counts(log) == {"first": 1}
    assert durable.open_store(tmp_path / "store").workflows() == ["flow.main"]


def test_every_look_at_a_run_under_the_other_name_says_where_it_is(store: durable.Store) -> None:
    # Started as a script (`flow.main`), looked at from an import (`main`):
    # only resume() named the other workflow; history, fork, delete and load
    # said "no run" and `durable runs main` listed nothing either.
    def main() -> int:
        return 1

    durable.workflow(name="flow.main", store=store, run_id="daily")(main)()
    imported = durable.workflow(name="main", store=store)(main)
    looks = [
        lambda: imported.history("daily"),
        lambda: imported.fork("daily", at=0),
        lambda: imported.delete("daily"),
        lambda: durable.load(imported, "daily", -1),
        lambda: durable.load(imported, "daily", 0),
    ]
    for look in looks:
        with pytest.raises(durable.RunNotFoundError, match=r"exists under workflow 'flow\.main'"):
            look()
    assert store.runs("flow.main") == ["daily"]
