"""Identities and program state across real processes, with the real
decorators: a step that appends to a module-level list keeps its
fingerprint; a `functools.partial` step keeps its name and identity in a new
process; `name=` equal to the function's name changes nothing, another name
is refused as a rename."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

PRELUDE = """\
import functools, json, os, sys
import durable

def bump(name):
    with open(os.path.join(os.environ["FP_COUNTS"], name), "a") as f:
        f.write("x")

def main(flow):
    out = []
    for run_id in sys.argv[1:]:
        try:
            out.append(flow.with_options(run_id=run_id)(3))
        except Exception as e:
            out.append({"error": type(e).__name__, "message": str(e)})
    print(json.dumps(out))
"""


@pytest.fixture
def place(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "counts").mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PYTHONDONTWRITEBYTECODE": "1",
        "DURABLE_STORE": str(tmp_path / "store"),
        "FP_COUNTS": str(tmp_path / "counts"),
    }
    return {"root": tmp_path, "env": env}


def run(place: dict[str, Any], script: str, *run_ids: str, **env: str) -> list[Any]:
    """A new process runs `script` (written to flow.py) and calls the
    workflow with argument 3 under each run id in turn: the results."""
    root: Path = place["root"]
    (root / "flow.py").write_text(PRELUDE + script)
    done = subprocess.run(
        [sys.executable, str(root / "flow.py"), *run_ids],
        cwd=root,
        env={**place["env"], **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: list[Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def counts(place: dict[str, Any]) -> dict[str, int]:
    return {p.name: len(p.read_text()) for p in sorted((place["root"] / "counts").iterdir())}


# ---------------------------------------------------------------- program state

STATE = """
SEEN = []  # spelled like a constant, but the program appends to it


@durable.step
def remember(x):
    bump("remember")
    SEEN.append(x)
    return len(SEEN)


@durable.workflow
def flow(x):
    return remember(x) + remember(x + 1)


if __name__ == "__main__":
    main(flow)
"""


def test_a_list_the_steps_append_to_does_not_make_the_run_look_changed(
    place: dict[str, Any],
) -> None:
    # One process: the same call again after SEEN has grown replays; a new
    # run starts with SEEN grown and records under the same fingerprints.
    first = run(place, STATE, "r1", "r1", "r2")
    assert first == [1 + 2, 1 + 2, 3 + 4]
    assert counts(place) == {"remember": 4}
    # A new process, SEEN empty again: both recorded runs replay.
    second = run(place, STATE, "r1", "r2")
    assert second == [3, 7]
    assert counts(place) == {"remember": 4}
    # An edit of the statement that binds it is a change.
    (edited,) = run(place, STATE.replace("SEEN = []", "SEEN = ['x']"), "r1")
    assert edited["error"] == "DefinitionChangedError"
    assert "remember: global SEEN changed" in edited["message"]


# ---------------------------------------------------------------- partial steps

PARTIAL = """
def base(x, k):
    bump("base")
    return x * k


scaled = durable.step(functools.partial(base, k=2))


@durable.step
def publish(v):
    bump("publish")
    if os.environ.get("FP_FAIL"):
        raise RuntimeError("publish failed")
    return f"published {v}"


@durable.workflow
def flow(x):
    return publish(scaled(x))


if __name__ == "__main__":
    print(json.dumps({"name": scaled.name}))
    main(flow)
"""


def test_a_partial_step_resumes_in_a_new_process(place: dict[str, Any]) -> None:
    failed = run(place, PARTIAL, "p", FP_FAIL="1")
    assert failed == [{"error": "RuntimeError", "message": "publish failed"}]
    assert counts(place) == {"base": 1, "publish": 1}
    resumed = run(place, PARTIAL, "p")
    assert resumed == ["published 6"]
    assert counts(place) == {"base": 1, "publish": 2}  # the partial step replayed


def test_a_partial_is_named_by_its_function_and_bound_arguments(place: dict[str, Any]) -> None:
    (place["root"] / "flow.py").write_text(PRELUDE + PARTIAL)
    names = set()
    for seed in ("1", "2", "3"):  # other hash seeds, other memory addresses
        done = subprocess.run(
            [sys.executable, str(place["root"] / "flow.py")],
            env={**place["env"], "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        names.add(json.loads(done.stdout.splitlines()[0])["name"])
    assert names == {"base(k=2)"}


# ---------------------------------------------------------------- name=

NAMED = """
@durable.step(retries=1)
def task1(x):
    bump("task1")
    return x + 1


@durable.step
def task2(v):
    bump("task2")
    if os.environ.get("FP_FAIL"):
        raise RuntimeError("task2 failed")
    return v * 10


@durable.workflow
def flow(x):
    return task2(task1(x))


if __name__ == "__main__":
    main(flow)
"""


def test_name_equal_to_the_function_name_keeps_the_run(place: dict[str, Any]) -> None:
    assert run(place, NAMED, "n", FP_FAIL="1")[0]["error"] == "RuntimeError"
    assert counts(place) == {"task1": 1, "task2": 1}
    edited = NAMED.replace("@durable.step(retries=1)", '@durable.step(retries=5, name="task1")')
    assert run(place, edited, "n") == [40]
    assert counts(place) == {"task1": 1, "task2": 2}  # task1 replayed


def test_another_name_is_refused_as_a_rename(place: dict[str, Any]) -> None:
    assert run(place, NAMED, "n", FP_FAIL="1")[0]["error"] == "RuntimeError"
    edited = NAMED.replace("@durable.step(retries=1)", '@durable.step(retries=1, name="first")')
    (refused,) = run(place, edited, "n")
    assert refused["error"] == "DefinitionChangedError"
    assert "- first: renamed (task1 -> first): " in refused["message"], refused["message"]
    assert "task1:" not in refused["message"]  # not also listed as removed
    assert counts(place) == {"task1": 1, "task2": 1}


# ---------------------------------------------------------------- where the file lies

FROM_FILE = """
HERE = os.path.dirname(os.path.abspath(__file__))  # a str: where this copy lies
DATA = os.path.join(HERE, "data")

@durable.step
def load(x):
    bump("load")
    return x + len(os.path.basename(DATA)) + len(os.path.basename(HERE)) * 0

@durable.workflow
def flow(x):
    return load(x)

main(flow)
"""


def test_a_string_constant_made_from_the_files_path_is_the_same_in_another_folder(
    place: dict[str, Any],
) -> None:
    """`HERE = os.path.dirname(os.path.abspath(__file__))` counts by its
    statement, as `Path(__file__).parent` does: the same script run from a
    copy in another folder (another checkout, machine or symlinked path)
    resumes its run. It counted by its value, the folder, so every run was
    refused there as `constant DATA changed`."""
    assert run(place, FROM_FILE, "r") == [7]
    moved = place["root"] / "elsewhere"
    moved.mkdir()
    (moved / "flow.py").write_text((place["root"] / "flow.py").read_text())
    done = subprocess.run(
        [sys.executable, str(moved / "flow.py"), "r"],
        cwd=moved,
        env=place["env"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [7]
    assert counts(place) == {"load": 1}
    # An edit of the statement is a change still.
    edited = run(place, FROM_FILE.replace('"data"', '"dataset"'), "r")
    assert edited[0]["error"] == "DefinitionChangedError", edited
    assert "DATA" in edited[0]["message"]
