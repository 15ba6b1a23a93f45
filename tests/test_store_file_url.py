"""A store named by a `file://` URL is the local folder it names (docs:
storage.md, "local paths, `file://`"): a run started through a relative
path resumes through `file:///<absolute path>`, in another process, and
replays what the first one recorded."""

from __future__ import annotations

import subprocess
from pathlib import Path

import durable
from tests.conftest import PY

FLOW = '''
import os
import durable

def note(name):
    with open(os.environ["COUNTS"], "a") as f:
        f.write(name + "\\n")

@durable.step
def first(n):
    note("first")
    return n + 1

@durable.step
def second(n):
    note("second")
    if os.environ.get("CRASH"):
        os._exit(1)
    return n * 2

@durable.workflow
def flow(n: int) -> int:
    return second(first(n))
'''


def test_a_file_url_opens_the_folder_it_names(tmp_path: Path) -> None:
    store = durable.open_store(f"file://{tmp_path / 'runs'}")
    assert store.url == str(tmp_path / "runs")


def test_a_run_resumes_through_a_file_url_of_its_folder(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    env = {**child_env, "COUNTS": str(tmp_path / "counts")}
    run = [PY, "-m", "durable", "run", "flow.py:flow", "--run-id", "r1"]
    crashed = subprocess.run(
        [*run, "--var", "n=1", "--store", "runs"],
        cwd=tmp_path, env={**env, "CRASH": "1"}, capture_output=True,
    )  # fmt: skip
    assert crashed.returncode == 1
    url = f"file://{tmp_path / 'runs'}"
    done = subprocess.run(
        [*run, "--resume", "--store", url], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "4"
    assert "[0] first replayed" in done.stderr
    assert (tmp_path / "counts").read_text().split() == ["first", "second", "second"]
