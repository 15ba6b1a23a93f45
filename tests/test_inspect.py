"""Issue 15, items 1 and 2: the full state of a run (StepInfo.value,
RunInfo.arguments, the "initial" history entry, durable.load, show --values)
and the plan (pending steps, steps_total) from a completed attempt or a
fork source."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable._cli.main import main
from durable._manage.fork import fork_run


def make_flow(store: durable.Store, calls: Counter[str]) -> durable.Workflow[[int], int]:
    @durable.step
    def pair(x: int) -> tuple[int, int]:
        calls["pair"] += 1
        return (x, x + 1)

    @durable.step
    def total(t: tuple[int, int]) -> dict[str, int]:
        calls["total"] += 1
        return {"sum": t[0] + t[1]}

    @durable.step
    def nothing(d: dict[str, int]) -> None:
        calls["nothing"] += 1

    @durable.step(persist=False)
    def secret() -> str:
        calls["secret"] += 1
        return "s3cret"

    @durable.workflow(name="full", store=store, run_id="r")
    def full(x: int, label: str = "x") -> int:
        d = total(pair(x))
        nothing(d)
        secret()
        return d["sum"]

    return full


def test_history_values_arguments_and_load_read_without_running(store: durable.Store) -> None:
    calls: Counter[str] = Counter()
    flow = make_flow(store, calls)
    assert flow(3) == 7
    initial, pair, total, nothing, secret = flow.history("r")
    assert (initial.position, initial.kind, initial.status) == (-1, "initial", "completed")
    assert initial.value == {"x": 3, "label": "x"}  # defaults applied, as recorded
    assert initial.preview == "{'label': 'x', 'x': 3}"
    assert pair.value == (3, 4) and type(pair.value) is tuple  # same value, same type
    assert total.value == {"sum": 7}
    assert (nothing.status, nothing.value) == ("completed", None)  # the step returned None
    assert (secret.status, secret.preview, secret.value) == ("completed", "(not stored)", None)
    [info] = flow.runs()
    assert info.arguments == {"x": 3, "label": "x"}
    # one output by position: an int, the string form, -1 for the arguments
    assert durable.load(flow, "r", 0) == (3, 4)
    assert durable.load("full", "r", "1", store=store) == {"sum": 7}
    assert durable.load(flow, "r", -1) == {"x": 3, "label": "x"}
    assert durable.load(flow, "r", 2) is None  # returned None ...
    assert durable.load(flow, "r", 9) is None  # ... and nothing recorded: history tells them apart
    assert [s.position for s in flow.history("r")] == [-1, 0, 1, 2, 3]
    assert durable.load(flow, "r", 3) is None  # persist=False kept no value
    # Reading never ran a step: each body ran once, in the one run.
    assert calls == {"pair": 1, "total": 1, "nothing": 1, "secret": 1}
    with pytest.raises(durable.ConfigurationError, match="not a position"):
        durable.load(flow, "r", "two")
    with pytest.raises(durable.RunNotFoundError):
        durable.load(flow, "nope", 0)


def test_positions_inside_tasks_load_by_their_string_form(store: durable.Store) -> None:
    import asyncio

    @durable.step
    async def twice(n: int) -> int:
        return n * 2

    async def chain(n: int) -> int:
        return await twice(await twice(n))

    @durable.workflow(name="tasks", store=store, run_id="t")
    async def tasks() -> list[int]:
        return list(await asyncio.gather(chain(1), chain(2)))  # tasks: positions 0.0.x, 0.1.x

    assert asyncio.run(tasks()) == [4, 8]
    assert durable.load(tasks, "t", "0.1.0") == 4
    assert durable.load(tasks, "t", "0.1.1") == 8
    assert durable.load(tasks, "t", "0.0.0") == 2
    inner = [s for s in tasks.history("t") if str(s.position) == "0.1.1"]
    assert [durable.load(tasks, "t", s.position) for s in inner] == [8]  # as history gives it


def test_a_refused_pickle_raises_from_value_and_load(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    make_flow(durable.open_store(tmp_path / "s"), calls)(3)
    strict = durable.open_store(tmp_path / "s", allow_pickle=False)
    flow = make_flow(strict, calls)
    pair = flow.history("r")[1]
    assert pair.preview is not None and pair.preview.startswith("<pickled value")
    with pytest.raises(durable.IntegrityError, match="allow_pickle=False"):
        pair.value  # noqa: B018 - a refused value raises, never returns something else
    with pytest.raises(durable.IntegrityError, match="allow_pickle=False"):
        durable.load(flow, "r", 0)
    assert durable.load(flow, "r", 1) == {"sum": 7}  # plain data needs no pickle
    assert calls["pair"] == 1


def test_the_arguments_of_a_damaged_manifest_say_it_is_damaged(tmp_path: Path) -> None:
    # They said "no store to read its arguments from" (a ConfigurationError),
    # where the listing and history() name the damage and the way out.
    calls: Counter[str] = Counter()
    flow = make_flow(durable.open_store(tmp_path / "s"), calls)
    flow(3)
    manifest = tmp_path / "s" / "full" / "r" / "run"
    data = bytearray(manifest.read_bytes())
    data[20] ^= 0xFF
    manifest.write_bytes(bytes(data))
    (info,) = flow.runs()
    assert info.status == "corrupt"
    for read in (lambda: info.arguments, lambda: durable.load(flow, "r", -1)):
        with pytest.raises(durable.CorruptRecordError, match=r"manifest .* is damaged"):
            read()


READER = """
import json, sys
import durable
store = durable.open_store(sys.argv[1])
flow = durable.workflow(name="full", store=store)(lambda: 0)  # only its name and store
[info] = flow.runs()
steps = flow.history("r")
print(json.dumps({
    "arguments": info.arguments,
    "values": [repr(s.value) for s in steps],
    "load": repr(durable.load("full", "r", "0", store=store)),
}))
"""


def test_another_process_reads_the_values_a_run_wrote(tmp_path: Path, child_env: dict[str, str]) -> None:
    calls: Counter[str] = Counter()
    flow = make_flow(durable.open_store(tmp_path / "s"), calls)
    flow(5)
    reader = tmp_path / "reader.py"
    reader.write_text(READER)
    done = subprocess.run(
        [sys.executable, str(reader), str(tmp_path / "s")],
        env=child_env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {
        "arguments": {"x": 5, "label": "x"},
        "values": ["{'x': 5, 'label': 'x'}", "(5, 6)", "{'sum': 11}", "None", "None"],
        "load": "(5, 6)",
    }
    assert calls["pair"] == 1


def test_show_json_values_gives_json_or_a_typed_preview(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: Counter[str] = Counter()
    make_flow(durable.open_store(tmp_path / "s"), calls)(2)
    url = str(tmp_path / "s")
    assert main(["--store", url, "show", "r", "--json", "--values"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == 1 and doc["stepsTotal"] == 4
    assert doc["arguments"] == {"value": {"x": 2, "label": "x"}, "valueType": "json"}
    values = [(s["value"], s["valueType"]) for s in doc["steps"]]
    assert values == [
        ("(2, 3)", "builtins.tuple"),  # not JSON: a JSON list would lose the type
        ({"sum": 5}, "json"),
        (None, "json"),
        (None, "json"),  # persist=False: nothing kept
    ]
    assert main(["--store", url, "show", "r", "--json"]) == 0
    assert "value" not in json.loads(capsys.readouterr().out)["steps"][0]  # only when asked
    assert main(["--store", url, "--no-pickle", "show", "r", "--json", "--values"]) == 0
    first = json.loads(capsys.readouterr().out)["steps"][0]
    assert (first["value"], first["valueType"]) == (None, "undecoded")
    assert "allow_pickle=False" in first["valueError"]
    assert calls["pair"] == 1


def test_a_fork_shows_the_sources_steps_still_to_come(store: durable.Store) -> None:
    calls: Counter[str] = Counter()
    flow = make_flow(store, calls)
    run = flow.run(1)
    assert run.steps_total == 4
    fork_run(store, "full", "r", 1, new_run_id="f")  # what `durable fork` does: nothing runs
    info = next(i for i in flow.runs() if i.run_id == "f")
    assert (info.status, info.position, info.steps_total) == ("forked", 1, 4)
    steps = flow.history("f")
    assert [(s.position, s.name, s.status) for s in steps] == [
        (-1, "initial", "completed"),
        (0, "make_flow.pair", "completed"),
        (1, "make_flow.total", "pending"),  # the source's steps after `at`
        (2, "make_flow.nothing", "pending"),
        (3, "make_flow.secret", "pending"),
    ]
    resumed = flow.resume("f")
    assert (resumed.steps_total, resumed.steps_replayed, resumed.steps_executed) == (4, 1, 3)
    assert [s.status for s in flow.history("f")[1:]] == ["completed"] * 4
    assert calls == {"pair": 1, "total": 2, "nothing": 2, "secret": 2}


def test_a_run_without_a_completed_attempt_has_no_total(store: durable.Store) -> None:
    @durable.step
    def fails() -> None:
        raise ValueError("no")

    @durable.workflow(name="never", store=store, run_id="n")
    def never() -> None:
        fails()

    with pytest.raises(ValueError):
        never()
    [info] = never.runs()
    assert info.steps_total is None
    assert [s.status for s in never.history("n")] == ["completed", "failed"]  # initial, 0


FLOW = """
import os, sys
import durable

LOG = os.environ["LOG"]

def note(name):
    if name == "s2" and os.environ.get("HOLD"):
        print("HOLD", flush=True)
        sys.stdin.readline()  # the parent kills us here
    with open(LOG, "a") as f:
        f.write(name + "\\n")

@durable.step
def s0() -> int:
    note("s0")
    return 0

@durable.step
def s1(x: int) -> int:
    note("s1")
    return x + {bump}

@durable.step
def s2(x: int) -> int:
    note("s2")
    return x * 10

@durable.step
def s3(x: int) -> int:
    note("s3")
    return x + 1

@durable.workflow(run_id="p", on_change="rerun")
def pipeline() -> int:
    return s3(s2(s1(s0())))

print("VALUE", pipeline.run().value, flush=True)
"""


def run_flow(script: Path, env: dict[str, str], hold: bool) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script)],
        env=dict(env, HOLD="1") if hold else env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.slow
def test_an_interrupted_rerun_shows_the_steps_still_to_come(
    tmp_path: Path, child_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    script, log = tmp_path / "flow.py", tmp_path / "log"
    env = dict(child_env, LOG=str(log))
    script.write_text(FLOW.replace("{bump}", "1"))
    first = run_flow(script, env, hold=False)
    assert first.communicate(timeout=120)[0].split() == ["VALUE", "11"]
    # s1 changes: under on_change="rerun" its record and every later one are
    # discarded; the child is killed -9 inside s2.
    script.write_text(FLOW.replace("{bump}", "2"))
    child = run_flow(script, env, hold=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "HOLD"
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    store = durable.open_store(tmp_path / "store")
    [info] = durable.workflow(name="flow.pipeline", store=store)(lambda: 0).runs()
    assert (info.status, info.position, info.steps_total) == ("interrupted", 2, 4)
    url = str(tmp_path / "store")
    assert main(["--store", url, "show", "p", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["status"], doc["currentStep"], doc["stepsTotal"]) == ("interrupted", 2, 4)
    assert [(s["position"], s["name"], s["status"]) for s in doc["steps"]] == [
        (0, "s0", "completed"),
        (1, "s1", "completed"),
        (2, "s2", "pending"),  # from the attempt that completed before
        (3, "s3", "pending"),
    ]
    assert main(["--store", url, "show", "p"]) == 0
    assert "steps     2 finished of 4, next position 2" in capsys.readouterr().out
    resumed = run_flow(script, env, hold=False)
    assert resumed.communicate(timeout=120)[0].split() == ["VALUE", "21"]
    # Each body: once per attempt that reached it; s2 was killed before its log line.
    assert log.read_text().split() == ["s0", "s1", "s2", "s3", "s1", "s2", "s3"]
    assert main(["--store", url, "show", "p", "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert [s["status"] for s in after["steps"]] == ["completed"] * 4
    assert (after["status"], after["stepsTotal"]) == ("completed", 4)


def test_a_body_that_ends_in_tasks_counts_the_position_that_created_them(
    store: durable.Store,
) -> None:
    """An asyncio task's operations belong to the position that created it:
    a body that is one gather has one position, not none."""
    import asyncio

    ran: list[int] = []

    @durable.step
    async def part(i: int) -> int:
        ran.append(i)
        return i

    async def two_parts(i: int) -> int:  # a task: its steps are numbered in it
        return await part(i) + await part(i + 1)

    @durable.workflow(store=store, run_id="g")
    async def gathered() -> list[int]:
        return list(await asyncio.gather(two_parts(1), two_parts(3)))

    run = asyncio.run(gathered.run())
    assert (run.value, run.steps_total, sorted(ran)) == ([3, 7], 1, [1, 2, 3, 4])
    (info,) = gathered.runs()
    assert (info.steps, info.steps_total) == (4, 1)
    positions = [str(s.position) for s in gathered.history("g")[1:]]
    assert positions == ["0.0.0", "0.0.1", "0.1.0", "0.1.1"]


def test_show_sets_an_async_runs_total_against_its_top_level_positions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Steps a helper coroutine awaits in a task have positions of their own
    (0.0.0, 0.1.0): `show` said "steps 6 finished of 2", the finished count
    taking them in and the total, from the completed attempt, not."""
    import asyncio

    store = durable.open_store(tmp_path / "store")

    @durable.step
    async def double(x: int) -> int:
        return 2 * x

    async def both(x: int) -> int:
        return await double(x) + await double(x)

    @durable.workflow(store=store, run_id="a")
    async def fan(n: int) -> int:
        parts = await asyncio.gather(both(n), both(n + 1))
        return sum(parts) + await double(0) + await double(1)

    assert asyncio.run(fan(1)) == 4 + 8 + 0 + 2
    [info] = fan.runs()
    assert (info.steps, info.top_level) == (6, 2)
    assert main(["--store", str(tmp_path / "store"), "show", "a"]) == 0
    line = next(t for t in capsys.readouterr().out.splitlines() if t.startswith("steps"))
    assert line == f"steps     6 finished (2 of {info.steps_total} top-level positions)"
