"""Run management against a live run, and a fork killed halfway.

`cli_during_live_run`: a holder (a child process) is held inside a random
step by a file barrier while `durable show`, `rm`, `gc`, `fork`, `recover`
and, in some trials, `cancel` are called on its run (the command's code in
this process, the holder a real one). What each prints must be true, none
may change the run, a fork at the step in flight copies exactly the
records before it, byte for byte, and one past it is refused. Then the
holder is let go or killed (`kill -9`); the run, and the fork, resume to
the right value with no recorded step executed again.

`fork_killed`: `durable fork` killed (`kill -9`) at a random record it
copies. The source must be unchanged, the half-made fork removable with
`durable rm`, and a fork made again must resume to the right value."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from durable._cli.main import main as durable_cli
from tests.faults import flows
from tests.faults.common import (
    Outcome,
    Place,
    check_counts,
    executions,
    new_run_id,
    read_line,
    recorded,
    spawn,
)

N = 6
WORKFLOW = flows.NAMES["sync"]


def cli(place: Place, *argv: str) -> tuple[int, str, str]:
    """`durable --store URL ARGV`, its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = durable_cli(["--store", place.url, *argv])
    return code, out.getvalue(), err.getvalue()


def _held(place: Place, run_id: str, at: int) -> tuple[subprocess.Popen[str], Path]:
    """A holder of a new run, stopped inside step `at` until the returned
    file exists (it says so by creating `<file>.in`)."""
    gate = place.log.with_name(f"go-{run_id}")
    hook = f"touch {gate}.in; while [ ! -e {gate} ]; do sleep 0.005; done"
    child = spawn(place, "sync", N, run_id, FAULT_HOOK_AT=str(at), FAULT_HOOK=hook)
    assert read_line(child.stdout) == "STARTED"
    deadline = time.monotonic() + 60
    while not Path(f"{gate}.in").exists():  # the hook's only signal is that file
        if child.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the holder never reached step {at}: {child.returncode}")
        time.sleep(0.005)
    return child, gate


def cli_during_live_run(place: Place, trials: int, rng: random.Random) -> Outcome:
    outcome = Outcome("CLI during a live run")
    for t in range(trials):
        place.log.write_text("")
        run_id, at = new_run_id("live"), rng.randrange(N)
        cancel, kill = t % 2 == 1, t % 4 >= 2  # every 4 trials: each ending, with and without
        trial = f"{run_id} held in step {at}{', cancelled' if cancel else ''}"
        trial += ", then killed" if kill else ", then let go"
        outcome.trials += 1
        holder, gate = _held(place, run_id, at)
        try:
            fork = _commands(place, outcome, trial, (run_id, at, holder.pid), cancel)
        finally:
            if kill:
                os.kill(holder.pid, signal.SIGKILL)
            gate.touch()
            said, _ = holder.communicate(timeout=300)
        _after(place, outcome, trial, (run_id, at, holder.pid), (said, holder.returncode, kill, cancel))
        if fork is not None:
            _resume_fork(place, outcome, trial, fork, at)
    return outcome


def _commands(
    place: Place, outcome: Outcome, trial: str, run: tuple[str, int, int], cancel: bool
) -> str | None:
    """The commands against the held run; the fork's run id if made."""
    run_id, at, pid = run
    store = place.store()
    before = store.peek_records(WORKFLOW, run_id)
    code, out, _ = cli(place, "show", run_id, "--json")
    shown = json.loads(out) if code == 0 else {}
    if (shown.get("status"), shown.get("completedSteps")) != ("running", at):
        outcome.violation(trial, f"show said {shown.get('status')}, {shown.get('completedSteps')} steps")
    code, _, err = cli(place, "rm", run_id)
    if code != 2 or f"pid {pid}" not in err:
        outcome.violation(trial, f"rm of the live run ended {code}: {err.strip()}")
    cli(place, "gc", "--keep-last", "0")
    code, _, err = cli(place, "recover", f"{flows.__name__}:sync_flow")
    if code != 0 or f"run {run_id}: running: held by a live process; skipped" not in err:
        outcome.violation(trial, f"recover ended {code}: {err.strip()}")
    fork = f"{run_id}-fork"
    code, out, err = cli(place, "fork", run_id, "--at", str(at), "--new-run-id", fork)
    copied, forked = store.peek_records(WORKFLOW, fork), code == 0
    if code != 0 or out.strip() != fork or copied != _before(before, at):
        outcome.violation(trial, f"fork at {at} ended {code} ({err.strip()}), copied {sorted(copied)}")
    code, _, err = cli(place, "fork", run_id, "--at", str(at + 1), "--new-run-id", f"{fork}-2")
    if code != 2 or f"position {at} of run {run_id!r} is not finished" not in err:
        outcome.violation(trial, f"a fork past the step in flight ended {code}: {err.strip()}")
    if cancel:
        code, _, err = cli(place, "cancel", run_id)
        if code != 0 or f"its holder (pid {pid} on" not in err:
            outcome.violation(trial, f"cancel ended {code}: {err.strip()}")
    if store.peek_records(WORKFLOW, run_id) != before:
        outcome.violation(trial, "a command changed the live run's records")
    if sum(executions(place.log, "work").get(os.getpid(), Counter()).values()):
        outcome.violation(trial, "a command executed a step")
    return fork if forked else None


def _before(records: dict[str, bytes], at: int) -> dict[str, bytes]:
    return {n: d for n, d in records.items() if n.startswith("steps/") and int(n[6:]) < at}


def _after(
    place: Place, outcome: Outcome, trial: str, run: tuple[str, int, int],
    ending: tuple[str, int | None, bool, bool],
) -> None:  # fmt: skip
    """How the holder ended, then a resume: the right value (or, cancelled,
    `Cancelled` and nothing run again), each step once in all."""
    run_id, _, pid = run
    said, code, killed, cancelled = ending
    runs = executions(place.log, "work").get(pid, Counter())
    outcome.endings["killed" if killed else said.split(" ")[0] if said else "?"] += 1
    if killed:
        store = place.store()
        done = recorded(store, "sync", run_id, N)
        if cancelled:  # the mark stands: the resume must end it, running nothing
            _cancelled_resume(place, outcome, trial, run_id)
            return
        if flows.call("sync", N, run_id, store) != flows.expected(N):
            outcome.violation(trial, "the resume returned a wrong value")
        here = executions(place.log, "work").get(os.getpid(), Counter())
        check_counts(outcome, trial, done, runs, here, N)
    elif cancelled:
        # Steps it started before its next look still ran; the run never completes.
        if code != 3 or "Cancelled" not in said or any(runs[i] > 1 for i in range(N)):
            outcome.violation(trial, f"the cancelled holder ended {code}: {said!r}, ran {dict(runs)}")
    elif code != 0 or runs != Counter(range(N)):
        outcome.violation(trial, f"the holder ended {code}: {said[-200:]!r}, ran {dict(runs)}")


def _cancelled_resume(place: Place, outcome: Outcome, trial: str, run_id: str) -> None:
    before = sum(executions(place.log, "work").get(os.getpid(), Counter()).values())
    with contextlib.suppress(Exception):
        flows.call("sync", N, run_id, place.store())
    if sum(executions(place.log, "work").get(os.getpid(), Counter()).values()) != before:
        outcome.violation(trial, "a cancelled run's resume executed a step")


def _resume_fork(place: Place, outcome: Outcome, trial: str, fork: str, at: int) -> None:
    """The fork replays the copied steps and executes the others, once."""
    before = executions(place.log, "work").get(os.getpid(), Counter())
    try:
        value = flows.call("sync", N, fork, place.store())
    except Exception as e:
        outcome.violation(trial, f"the fork's resume raised {type(e).__name__}: {e}")
        return
    ran = executions(place.log, "work").get(os.getpid(), Counter()) - before
    if value != flows.expected(N) or ran != Counter(range(at, N)):
        outcome.violation(trial, f"the fork at {at} resumed to {value == flows.expected(N)}, ran {dict(ran)}")


KILLED_FORK = """
import os, signal, sys
from durable._manage.fork import fork_run
from tests.faults import flows

store = flows.open_store()
saves, real = [0], type(store).save_record

def save(self, *args, **kwargs):
    if saves[0] == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)
    saves[0] += 1
    return real(self, *args, **kwargs)

type(store).save_record = save
fork_run(store, sys.argv[1], sys.argv[2], int(sys.argv[4]), new_run_id=sys.argv[2] + "-fork")
"""


def fork_killed(place: Place, trials: int, rng: random.Random) -> Outcome:
    outcome = Outcome("durable fork killed")
    store = place.store()
    for _ in range(trials):
        run_id, at = new_run_id("forked"), rng.randrange(1, N + 1)
        flows.call("sync", N, run_id, store)
        source, fork = store.get_many(store.list(f"{WORKFLOW}/{run_id}/")), f"{run_id}-fork"
        cut = rng.randrange(at)  # the record it dies copying
        trial = f"{run_id} fork at {at} killed at its record {cut}"
        outcome.trials += 1
        forker = subprocess.run(
            [sys.executable, "-c", KILLED_FORK, WORKFLOW, run_id, str(cut), str(at)],
            env=place.child_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        outcome.endings["killed" if forker.returncode == -signal.SIGKILL else "finished"] += 1
        if store.get_many(store.list(f"{WORKFLOW}/{run_id}/")) != source:
            outcome.violation(trial, "the killed fork changed its source")
        code, _, err = cli(place, "rm", fork)
        if code != 0 or store.list(f"{WORKFLOW}/{fork}/"):
            outcome.violation(trial, f"rm of the half-made fork ended {code}: {err.strip()}")
        code, out, err = cli(place, "fork", run_id, "--at", str(at), "--new-run-id", fork)
        if code != 0 or out.strip() != fork:
            outcome.violation(trial, f"the fork made again ended {code}: {err.strip()}")
            continue
        place.log.write_text("")
        _resume_fork(place, outcome, trial, fork, at)
    return outcome
