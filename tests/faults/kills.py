"""Random `kill -9` trials and racing processes.

A kill trial starts a workflow in a child process, kills it with SIGKILL at
a random moment of its run (anywhere: mid-step, mid-append, mid-fsync,
mid-PUT), reads which results the store holds, resumes the run in this
process and checks the value and the execution counts (`check_counts`)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import durable
from tests.faults import flows
from tests.faults.common import (
    FLOWS,
    Outcome,
    Place,
    check_counts,
    executions,
    new_run_id,
    read_line,
    recorded,
    spawn,
)

STEPS = {"sync": 10, "async": 10, "loop": 10}


def duration(place: Place, kind: str, n: int) -> float:
    """How long one clean run takes here: the window the kills fall into."""
    store = place.store()
    started = time.perf_counter()
    flows.call(kind, n, new_run_id("clean"), store)
    return time.perf_counter() - started


def kill_trials(place: Place, kind: str, trials: int, rng: random.Random) -> Outcome:
    outcome = Outcome(f"kill -9 ({kind})")
    n = STEPS[kind]
    window = duration(place, kind, n) * 1.2 + 0.01
    for _ in range(trials):
        place.log.write_text("")
        run_id = new_run_id(f"kill-{kind}")
        trial = f"{run_id} "
        child = spawn(place, kind, n, run_id)
        if read_line(child.stdout) != "STARTED":
            child.kill()
            child.wait()
            outcome.violation(trial, "the child did not start")
            continue
        delay = rng.uniform(0, window)
        trial += f"killed after {delay * 1000:.1f} ms"
        time.sleep(delay)  # the fault's timing, not a synchronisation
        os.kill(child.pid, signal.SIGKILL)
        child.communicate()
        outcome.trials += 1
        outcome.endings["killed" if child.returncode == -signal.SIGKILL else "finished"] += 1
        store = place.store()
        done = recorded(store, kind, run_id, n)
        resume_and_count(outcome, trial, place, (kind, n, run_id), store, done, child.pid)
    return outcome


def resume_and_count(
    outcome: Outcome, trial: str, place: Place, run: tuple[str, int, str],
    store: durable.Store, done: set[int], child: int,
) -> None:
    """Resume the run here: its value must be the uninterrupted run's, and
    each step executed once in all (`check_counts`)."""
    kind, n, run_id = run
    try:
        value = flows.call(kind, n, run_id, store)
    except Exception as e:
        outcome.violation(trial, f"the resume raised {type(e).__name__}: {e}")
        return
    if value != flows.expected(n):
        outcome.violation(trial, "the resumed run returned a wrong value")
    runs = executions(place.log, flows.KINDS[kind])
    check_counts(outcome, trial, done, runs.get(child, Counter()),
                 runs.get(os.getpid(), Counter()), n)  # fmt: skip


def stop_trials(place: Place, kind: str, trials: int, rng: random.Random) -> Outcome:
    """SIGTERM at a random moment of a run under `stop_on_signals()`: the
    steps in flight (several, in the async flow's gather) finish and are
    recorded, so every step the stopped process executed is recorded, and
    the resume executes only the others, once each."""
    outcome = Outcome(f"graceful stop ({kind})")
    n, env = STEPS[kind], {"FAULT_GRACEFUL": "1", "FAULT_SPIN": "0.003"}
    for _ in range(trials):
        place.log.write_text("")
        run_id = new_run_id(f"stop-{kind}")
        child = spawn(place, kind, n, run_id, **env)
        if read_line(child.stdout) != "STARTED":
            child.kill()
            child.wait()
            outcome.violation(run_id, "the child did not start")
            continue
        time.sleep(rng.uniform(0, n * 0.004))  # the fault's timing, not a synchronisation
        child.send_signal(signal.SIGTERM)
        child.communicate()
        outcome.trials += 1
        outcome.endings[{-signal.SIGTERM: "killed", 143: "stopped", 0: "finished"}.get(
            child.returncode, f"exit {child.returncode}")] += 1  # fmt: skip
        store = place.store()
        done = recorded(store, kind, run_id, n)
        first = executions(place.log, flows.KINDS[kind]).get(child.pid, Counter())
        if child.returncode == 143 and set(first) - done:
            outcome.violation(run_id, f"steps {sorted(set(first) - done)} ran but were not recorded")
        resume_and_count(outcome, run_id, place, (kind, n, run_id), store, done, child.pid)
    return outcome


RACER = """
import json, os, sys
sys.path.insert(0, {root!r})
import durable
from tests.faults import flows

store = flows.open_store()
print("READY", flush=True)
for line in sys.stdin:
    run_id = line.strip()
    try:
        value = flows.FLOWS["sync"].with_options(store=store, run_id=run_id, wait=120)(6)
        print("VALUE", json.dumps(value == flows.expected(6)), flush=True)
    except Exception as e:
        print("ERROR", type(e).__name__, json.dumps(str(e)), flush=True)
"""


def race(place: Place, processes: int, rounds: int) -> Outcome:
    """`processes` long-lived processes start the same new run at the same
    moment, `rounds` times: every round, each step executes exactly once in
    all, and every process returns the right value (the others wait, then
    replay)."""
    outcome = Outcome(f"{processes} processes race one run id")
    script = place.log.with_suffix(".racer.py")
    script.write_text(RACER.format(root=str(FLOWS.parents[2])))
    racers = [
        subprocess.Popen(
            [sys.executable, str(script)],
            env=place.child_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    try:
        for racer in racers:
            assert read_line(racer.stdout) == "READY"
        place.log.write_text("")
        for r in range(rounds):
            run_id = new_run_id("race")
            for racer in racers:  # each is already blocked on its stdin
                assert racer.stdin is not None
                racer.stdin.write(run_id + "\n")
                racer.stdin.flush()
            said = [read_line(racer.stdout) for racer in racers]
            outcome.trials += 1
            if said != ["VALUE true"] * processes:
                outcome.violation(f"round {r}", f"processes said {said}")
            counts = Counter[int]()
            for per_pid in executions(place.log, "work").values():
                counts += per_pid
            if counts != {i: 1 for i in range(6)}:
                outcome.violation(f"round {r}", f"executions {dict(counts)}")
            place.log.write_text("")
    finally:
        for racer in racers:
            assert racer.stdin is not None
            racer.stdin.close()
            racer.wait(timeout=60)
    return outcome


REMOVER = """
import os, sys
sys.path.insert(0, {root!r})
import durable
from durable._manage import delete as _delete
import durable
from tests.faults import flows

store = flows.open_store()
# Until both starters are done, however long their starts take.
while not os.path.exists({done!r}):
    try:
        _delete.delete_run(store, "sync_flow", "contested")
    except (durable.RunLockedError, durable.RunNotFoundError):
        pass
"""

STARTER = """
import sys
sys.path.insert(0, {root!r})
import durable
import durable
from tests.faults import flows

store = flows.open_store()
# A count of executions, not of attempts: how often a start loses to the
# other processes is up to the machine's timing.
executed = 0
while executed < {rounds}:
    try:
        flows.FLOWS["sync"].with_options(store=store, run_id="contested", restart=True)(2)
    except durable.LeaseLostError:
        raise  # another process took a run this one held: ownership was split
    except durable.RunLockedError:
        continue
    executed += 1
"""


def rm_against_start(place: Place, rounds: int) -> Outcome:
    """Two starters (each restarting the run, so every start executes, until
    each has executed `rounds` times) and a remover (`durable rm`) hammer one
    run id: no two processes may ever execute it at once. Each execution is an
    interval in the log, from its first step to its last; intervals of
    different processes must not overlap."""
    outcome = Outcome("rm against start")
    root = str(FLOWS.parents[2])
    done = place.log.with_suffix(".starters-done")
    fill = {"root": root, "rounds": rounds, "done": str(done)}
    children = {
        name: subprocess.Popen(
            [sys.executable, str(_script(place, name, source, fill))], env=place.child_env()
        )
        for name, source in [("remover", REMOVER), ("starter0", STARTER), ("starter1", STARTER)]
    }
    try:
        for name in ("starter0", "starter1"):
            children[name].wait(timeout=600)
    finally:
        done.touch()  # the remover stops too, whatever happened to the starters
        for child in children.values():
            if child.poll() is None:
                try:
                    child.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
    for name, child in children.items():
        if child.returncode != 0:
            outcome.violation("processes", f"{name} ended with {child.returncode}")
    holder, starts = None, 0
    for line in place.log.read_text().splitlines():
        pid, _, i = line.split()
        if i == "0":
            if holder is not None:
                outcome.violation(f"start {starts}", f"pid {pid} started while {holder} held the run")
            holder, starts = pid, starts + 1
        elif i == "1":
            if holder != pid:
                outcome.violation(f"start {starts}", f"pid {pid} finished a run held by {holder}")
            holder = None
    outcome.trials = starts
    return outcome


def _script(place: Place, name: str, source: str, fill: dict[str, object]) -> Path:
    path = place.log.with_suffix(f".{name}.py")
    path.write_text(source.format(**fill))
    return path
