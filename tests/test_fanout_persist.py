"""`loop_over` of a `persist=False` step: its outputs are never written (the
block leaves a marker, keeps no item) and it runs again on every resume, as
the step does on its own. Real processes: the first one dies with
`os._exit(1)` after the block, the second resumes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import PY

FLOW = '''
import os, sys
import durable

def note(name):
    with open(sys.argv[1], "a") as f:
        f.write(name + "\\n")

@durable.step(persist=False)
def token(i):
    note(f"token{i}")
    return f"TOPSECRET-{i}"

@durable.step
def use(tokens):
    note("use")
    if os.environ.get("CRASH"):
        os._exit(1)
    return len(tokens)

@durable.workflow(run_id="secrets")
def flow():
    tokens = durable.loop_over(token, [1, 2], checkpoint_items=True)
    return use(tokens)

print(flow())
'''


def _stored(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_a_persist_false_step_looped_over_writes_nothing_and_runs_again(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    script, counts = tmp_path / "flow.py", tmp_path / "counts"
    script.write_text(FLOW)
    crashed = subprocess.run(
        [PY, str(script), str(counts)], env={**child_env, "CRASH": "1"}, capture_output=True
    )
    assert crashed.returncode == 1
    assert b"TOPSECRET" not in _stored(Path(child_env["DURABLE_STORE"]))
    done = subprocess.run([PY, str(script), str(counts)], env=child_env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "2"
    # The block ran again (nothing of it was kept); `use` ran again only
    # because its first process died before its record.
    assert counts.read_text().split() == ["token1", "token2", "use"] * 2
    assert b"TOPSECRET" not in _stored(Path(child_env["DURABLE_STORE"]))
