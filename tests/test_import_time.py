"""What `import durable` and a run load (issue 13, item 5): a sync run of
plain values on the default local store never imports asyncio, fsspec,
cloudpickle, tqdm, opentelemetry, the command line or run management;
each loads, and works, when a run needs it (an async workflow, a value
only pickle holds, an S3 store, a bar on a terminal, `runs()`). Each case
is a fresh interpreter, so that nothing this test process imported counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .clikit import on_a_terminal

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "asyncio",
    "fsspec",
    "cloudpickle",
    "tqdm",
    "opentelemetry",
    "durable._cli",
    "durable._manage",
)
# Modules a plain run does without (of the standard library, the cache, the
# artifacts' checks, an object store's log and lease), each imported where
# it is needed (a Decimal or a UUID is looked up once the program loaded
# its module): they were an eighth of the CPU of such a process, and most
# of the test suite's CPU is such processes.
UNNEEDED = (
    "uuid", "platform", "decimal", "socket", "signal", "difflib", "shlex", "mmap", "concurrent",
    "durable._core.cache", "durable._core.cacheplain", "durable._core.artifacts",
    "durable._storage.recordlog", "durable._storage.objectlease", "durable._storage.keystore",
    "durable._storage.files", "durable._api.child", "durable._fanout.executors",
)  # fmt: skip

# argv: scenario, count file, store URL ("" for the default store). The first
# attempt of each run fails after its steps, so that the second process
# replays their records (a completed run would answer from its own record).
SCRIPT = """
import importlib.util, json, os, sys

scenario, count_file, url = sys.argv[1:4]
import durable

def report(**extra):
    heavy = HEAVY
    loaded = sorted({h for h in heavy for m in sys.modules if m == h or m.startswith(h + ".")})
    if scenario in ("import", "sync"):
        extra["unneeded"] = sorted(m for m in UNNEEDED if m in sys.modules)
    print(json.dumps(dict(loaded=loaded, ran=open(count_file).read().count("x"), **extra)))

if scenario == "import":
    open(count_file, "a").close()
    report(installed=[h for h in HEAVY if importlib.util.find_spec(h.split(".")[0])])
    sys.exit()

def first_attempt_fails():
    if not os.path.exists(count_file + ".failed"):
        open(count_file + ".failed", "w").close()
        raise RuntimeError("first attempt")

@durable.step
def double(x: int) -> int:
    with open(count_file, "a") as f:
        f.write("x")
    return 2 * x

@durable.step
def pair(x: int) -> tuple:
    with open(count_file, "a") as f:
        f.write("x")
    return (x, {x})  # a tuple holding a set: msgpack cannot hold it exactly

store = url or None

if scenario == "async":
    import asyncio

    @durable.step
    async def adouble(x: int) -> int:
        return double(x)

    @durable.workflow(store=store, run_id="r1")
    async def flow(x: int) -> list:
        out = list(await asyncio.gather(adouble(x), adouble(x + 1)))
        first_attempt_fails()
        return out

    call = lambda: asyncio.run(flow(4))
elif scenario == "pickled":
    @durable.workflow(store=store, run_id="r1")
    def flow(x: int) -> list:
        value = pair(x)
        first_attempt_fails()
        return [value == (x, {x}), type(value).__name__]

    call = lambda: flow(4)
else:
    @durable.workflow(store=store, run_id="r1")
    def flow(x: int) -> int:
        out = double(x) + double(x + 1)
        first_attempt_fails()
        return out

    call = lambda: flow(4)
try:
    result = call()
except RuntimeError as e:
    result = str(e)
if scenario == "runs":
    result = [info.run_id for info in flow.runs()]
report(result=result)
""".replace("HEAVY", repr(HEAVY)).replace("UNNEEDED", repr(UNNEEDED))


def run(tmp_path: Path, scenario: str, url: str = "", **env: str) -> dict[str, object]:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), scenario, str(tmp_path / "count"), url],
        cwd=tmp_path,  # the default store: ./.durable here
        env=_env(env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_")}
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **extra}


def test_import_durable_loads_none_of_them(tmp_path: Path) -> None:
    report = run(tmp_path, "import")
    assert report["loaded"] == report["unneeded"] == []
    assert report["installed"] == list(HEAVY)  # so their absence means something


def test_a_sync_run_of_plain_values_loads_none_of_them(tmp_path: Path) -> None:
    first = run(tmp_path, "sync")
    assert first == {"loaded": [], "ran": 2, "result": "first attempt", "unneeded": []}
    assert (tmp_path / ".durable").is_dir()  # the default local store was used
    again = run(tmp_path, "sync")  # both steps replayed, in a new process
    assert again == {"loaded": [], "ran": 2, "result": 18, "unneeded": []}
    done = run(tmp_path, "sync")  # the completed run answers from its record
    assert done == {"loaded": [], "ran": 2, "result": 18, "unneeded": []}


def test_an_async_run_loads_asyncio_and_nothing_else(tmp_path: Path) -> None:
    first = run(tmp_path, "async")
    assert first == {"loaded": ["asyncio"], "ran": 2, "result": "first attempt"}
    again = run(tmp_path, "async")
    assert again == {"loaded": ["asyncio"], "ran": 2, "result": [8, 10]}


def test_a_value_only_pickle_holds_loads_cloudpickle_to_record_and_to_replay(
    tmp_path: Path,
) -> None:
    first = run(tmp_path, "pickled")
    assert first == {"loaded": ["cloudpickle"], "ran": 1, "result": "first attempt"}
    again = run(tmp_path, "pickled")  # decoding the record needs it too
    assert again == {"loaded": ["cloudpickle"], "ran": 1, "result": [True, "tuple"]}


def test_an_s3_store_loads_fsspec(tmp_path: Path, s3_url: str, s3_env: dict[str, str]) -> None:
    first = run(tmp_path, "sync", s3_url, **s3_env)
    assert "fsspec" in first["loaded"] and (first["ran"], first["result"]) == (2, "first attempt")
    again = run(tmp_path, "sync", s3_url, **s3_env)
    assert "fsspec" in again["loaded"] and (again["ran"], again["result"]) == (2, 18)
    assert not (tmp_path / ".durable").exists()  # the records are on S3


def test_listing_runs_loads_run_management(tmp_path: Path) -> None:
    report = run(tmp_path, "runs")
    assert report == {"loaded": ["durable._manage"], "ran": 2, "result": ["r1"]}


def test_a_bar_drawn_on_a_terminal_loads_tqdm(tmp_path: Path) -> None:
    script = tmp_path / "flow.py"
    script.write_text(
        SCRIPT.replace("import durable\n", "import durable\nfrom durable._fanout import progress\n"
                       "progress.DELAY = 0\n", 1)
    )
    cmd = [sys.executable, str(script), "sync", str(tmp_path / "count"), str(tmp_path / "s")]
    stdout, stderr = on_a_terminal(cmd, {**_env({}), "COLUMNS": "100"})
    report = json.loads(stdout)
    del report["unneeded"]  # asyncio loads most of them
    # tqdm.auto imports tqdm.asyncio: a bar costs both.
    assert report == {"loaded": ["asyncio", "tqdm"], "ran": 2, "result": "first attempt"}
    assert "r1" in stderr, stderr  # the run's bar, drawn by tqdm
