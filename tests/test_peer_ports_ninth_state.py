"""The ninth round of the peers' own test cases (see
tests/test_peer_ports_ninth.py): DBOS Transact's
test_simple_workflow_attempts_counter (tests/test_dbos.py), one workflow id
called again and again, by a script whose module-level loop also changes the
list the bodies append to. Real processes: what the fingerprint reads is the
script's own module-level statements."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = """
import durable
{import_line}

@durable.workflow(run_id="same-id")
def noop() -> None:
    calls.append("noop")


@durable.step(cache=True)
def square(x: int) -> int:
    calls.append("square")
    return x * x


for fn, args, times in [(noop, (), 10), (square, (4,), 10)]:  # what to call, how often
    calls.clear()
    for _ in range(times):
        fn(*args)
    print(len(calls))
"""
# The list the bodies append to: the script's own, or one a module of the
# program holds (and fills at import), bound by `from ... import`.
_LOGS = {"own": "calls = []", "imported": "from events import calls"}
# A body that only writes `calls` but reads a copy of it the loop makes:
# through the copy, what `calls` holds is an input (each turn computes).
_SNAPSHOT = """
import durable
calls = []

@durable.step(cache=True)
def report(n):
    calls.append(n)
    return [n, SNAPSHOT]

for i in range(3):
    calls.append(i)
    SNAPSHOT = list(calls)
    print(len(report(1)[1]))
"""


@pytest.mark.parametrize("log", sorted(_LOGS))
def test_dbos_simple_workflow_attempts_counter(
    tmp_path: Path, child_env: dict[str, str], log: str
) -> None:
    """test_simple_workflow_attempts_counter: one workflow id called ten
    times runs its body once (DBOS counts one attempt). Here the calls are
    made by a script's loop over a table of functions, which empties the
    list the bodies append to before each one: that list is state the bodies
    only write, so the loop changing it must not make the same call look
    changed (a refused run, a cached step that missed every time), nor the
    module it comes from filling it; a copy of it the body reads still counts."""
    (tmp_path / "events.py").write_text('calls = []\ncalls.extend(["imported"])\n')
    script = tmp_path / "table.py"
    script.write_text(_SCRIPT.format(import_line=_LOGS[log]))
    done = subprocess.run(
        [sys.executable, str(script)], env=child_env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1"]
    script.write_text(_SNAPSHOT)  # never the output of an older copy
    done = subprocess.run(
        [sys.executable, str(script)], env=child_env, capture_output=True, text=True
    )
    assert done.stdout.split() == ["1", "3", "5"], done.stderr
