"""A disk that fills up as a run's log is appended to: the Nth write to the
run's `records.log` fails with ENOSPC, injected into the child at the
system call (`strace --inject`, only for that file: `-P`), at each level of
durability. (A tmpfs too small, the same fault for every file, needs root:
tried by hand, it ended the same way.)

What must hold: the child ends with a StorageError saying that the disk is
full and what to do, or finishes (the fault fell past its last record);
the resume (no fault) returns the right value, no step recorded before the
fault runs again, every other step runs once (`check_counts`)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.faults import flows
from tests.faults.common import Outcome, Place, check_counts, executions, new_run_id, recorded

WRITES = "write,pwrite64,writev,pwritev,pwritev2"
N = 8


def disk_full(place: Place, kind: str, trials: int, rng: random.Random) -> Outcome:
    outcome = Outcome(f"disk full while {kind} appends its records")
    strace = shutil.which("strace")
    if strace is None:
        outcome.endings["skipped: strace injects the error: not installed"] += 1
        return outcome
    for when in rng.sample(range(1, N + 2), min(trials, N + 1)):  # every write, and one past
        trial, run_id = f"write {when}", new_run_id("full")
        log = Path(place.url) / flows.NAMES[kind] / run_id / "records.log"  # a local folder's
        child = subprocess.run(
            [strace, "-f", "-qq", "-o", os.devnull, "-P", str(log), "-e", f"trace={WRITES}",
             f"--inject={WRITES}:error=ENOSPC:when={when}",
             sys.executable, "-c", flows.CHILD, kind, str(N), run_id],
            env=place.child_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        said = child.stdout.strip().splitlines()[-1:] or [""]
        if "STARTED" not in child.stdout:
            outcome.endings[f"skipped: strace cannot trace here: {child.stderr.strip()[:200]}"] += 1
            return outcome
        outcome.endings[said[0].split(" ", 2)[0]] += 1
        _check_said(outcome, trial, said[0])
        _resume(place, outcome, trial, kind, run_id)
        outcome.trials += 1
    return outcome


def _check_said(outcome: Outcome, trial: str, said: str) -> None:
    if said.startswith("VALUE"):
        return
    if not said.startswith("ERROR StorageError "):
        outcome.violation(trial, f"the child ended with {said!r}")
        return
    text = json.loads(said.split(" ", 2)[2])
    if "No space left on device" not in text or "free some space, then call again" not in text:
        outcome.violation(trial, f"the error does not say the disk is full and what to do: {text}")


def _resume(place: Place, outcome: Outcome, trial: str, kind: str, run_id: str) -> None:
    store = place.store()
    done = recorded(store, kind, run_id, N)
    try:
        value = flows.call(kind, N, run_id, store)
    except Exception as e:
        outcome.violation(trial, f"the resume raised {type(e).__name__}: {e}")
        return
    if value != flows.expected(N):
        outcome.violation(trial, "the resume returned a wrong value")
    mine = executions(place.log, flows.KINDS[kind]).get(os.getpid(), Counter())
    check_counts(outcome, trial, done, _others(place, kind), mine, N)
    place.log.write_text("")  # the next trial counts its own


def _others(place: Place, kind: str) -> Counter[int]:
    """The executions of the child (every process but this one)."""
    out: Counter[int] = Counter()
    for pid, counts in executions(place.log, flows.KINDS[kind]).items():
        if pid != os.getpid():
            out.update(counts)
    return out
