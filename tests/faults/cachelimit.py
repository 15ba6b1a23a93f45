"""A file size limit (`RLIMIT_FSIZE`, SIGXFSZ ignored: EFBIG) set inside a
random step of a run whose odd steps are cached (`cache=True`): the limit
cuts short a cache entry, a cache blob, a run record, a run blob or the
manifest, wherever it falls. Then, with the limit lifted, a resume in this
process and a third call.

What must hold: the child ends with a StorageError naming the limit (or
finishes); the resume returns the right value; a step recorded before the
fault is never executed again; a plain step not recorded is executed once
by the resume; a cached one not recorded is executed once or served from
its cache entry (whole: the value is right); the third call executes
nothing. Each trial has a store of its own, so no entry of another trial
serves it."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

from tests.faults import flows
from tests.faults.common import Outcome, Place, new_run_id, recorded, spawn

N = 8
KINDS = ("work", "cwork")  # the plain steps are the even ones, the cached the odd


def file_size_limit_cached(base: Path, trials: int, rng: random.Random) -> Outcome:
    outcome = Outcome("RLIMIT_FSIZE, cached steps")
    for _ in range(trials):
        run_id, at, size = new_run_id("cfsize"), rng.randrange(N), rng.randrange(0, 5000)
        place = Place(str(base / run_id), {}, base / f"{run_id}.log")
        trial = f"{run_id} limit {size} B from step {at}"
        outcome.trials += 1
        child = spawn(place, "cached", N, run_id, FAULT_HOOK_AT=str(at),
                      FAULT_FSIZE=str(size), FAULT_LOG="/dev/stdout")  # fmt: skip
        out, _ = child.communicate(timeout=300)
        first = _executed(out)
        ending = [ln for ln in out.splitlines() if ln.startswith(("VALUE", "ERROR"))]
        said = ending[-1] if ending else "?"
        outcome.endings[" ".join(said.split(" ")[:2]) if said.startswith("ERROR") else said[:5]] += 1
        if child.returncode not in (0, 3) or (
            said.startswith("ERROR") and "file size limit" not in json.loads(said.split(" ", 2)[2])
        ):
            outcome.violation(trial, f"the child ended {child.returncode}: {out[-300:]}")
        _resume(place, outcome, trial, run_id, first)
    return outcome


def _executed(out: str) -> Counter[int]:
    """The child's executions, which came through its stdout (the limit
    applies to files, not to a pipe)."""
    ran: Counter[int] = Counter()
    for line in out.splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[1] in KINDS:
            ran[int(parts[2])] += 1
    return ran


def _resume(place: Place, outcome: Outcome, trial: str, run_id: str, first: Counter[int]) -> None:
    store = place.store()
    done = recorded(store, "cached", run_id, N)
    for third in (False, True):
        place.log.write_text("")
        try:
            value = flows.call("cached", N, run_id, store)
        except Exception as e:
            outcome.violation(trial, f"the {'third' if third else 'next'} call raised {type(e).__name__}: {e}")
            return
        if value != flows.expected(N):
            outcome.violation(trial, "a call after the fault returned a wrong value")
        ran = Counter(i for line in place.log.read_text().splitlines() for i in [int(line.split()[2])])
        if third and ran:
            outcome.violation(trial, f"the third call executed {dict(ran)}")
        if not third:
            _check(outcome, trial, done, first, ran)


def _check(
    outcome: Outcome, trial: str, done: set[int], first: Counter[int], second: Counter[int]
) -> None:
    for i in range(N):
        if first[i] > 1 or second[i] > 1:
            outcome.violation(trial, f"step {i} ran twice in one process")
        if i in done and second[i]:
            outcome.violation(trial, f"step {i} was recorded before the fault yet ran again")
        if i not in done and i % 2 == 0 and not second[i]:
            outcome.violation(trial, f"plain step {i} was not recorded and was not run again")
