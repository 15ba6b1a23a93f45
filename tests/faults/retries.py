"""Random `kill -9` over `loop_over` item retries (`_fanout.tries`).

A trial starts `retryflows.retry_items` in a child (items failing at
random, `retries=2`; a thread or process pool; with or without
`checkpoint_items`), kills it at a random moment, then resumes the run in
this process until it returns (an item that gives up fails a resume; the
next one gives it a new budget). Before each round it reads what the store
keeps of each item (its result, or its failed tries) and checks, per item:

- the killed process made the tries it kept, plus at most the one the kill
  cut short (never kept, and made again, as a plain step's);
- a resume makes at most the tries its budget has left (3 less the kept
  failures of the call that has not given up), numbered on from them;
- no body is entered after the item's result was kept (by the item, or by
  the block's record), nor by a worker of the killed process once the
  resume's first try began (a try its worker had looked at the workflow
  process for before the kill may start after it: in flight, the resume
  waits for it, `_storage.triesgate`);
- the value holds every item's value once, in order."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from durable._core.attempts import budget_spent
from durable._storage.keys import item_of
from durable._storage.records import TRIES_KIND, StepRecord, unseal
from tests.faults import flows, retryflows
from tests.faults.common import Outcome, Place, new_run_id, read_line

N = 6
BUDGET = 3  # retries=2
Kept = tuple[set[int], dict[int, tuple[int, int]]]  # results; (failures, spent) by index
Try = tuple[str, int, str]  # owner, attempt, F|S


def kill_trials(place: Place, kind: str, checkpoint: bool, trials: int, rng: random.Random) -> Outcome:
    outcome = Outcome(f"kill -9 over item retries ({kind}, checkpoint_items={checkpoint})")
    window = _duration(place, kind, checkpoint) * 1.2 + 0.01
    for _ in range(trials):
        place.log.write_text("")
        run_id = new_run_id("tries")
        child = subprocess.Popen(
            [sys.executable, "-c", retryflows.CHILD, str(N), kind, "1" if checkpoint else "0", run_id],
            env=place.child_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, start_new_session=True,
        )  # fmt: skip
        if read_line(child.stdout) != "STARTED":
            child.kill()
            child.wait()
            outcome.violation(run_id, "the child did not start")
            continue
        delay = rng.uniform(0, window)
        time.sleep(delay)  # the fault's timing, not a synchronisation
        os.kill(child.pid, signal.SIGKILL)  # the workflow's process, not its pool's workers
        child.wait()
        outcome.trials += 1
        outcome.endings["killed" if child.returncode == -signal.SIGKILL else "ended"] += 1
        trial = f"{run_id} (pid {child.pid}) killed after {delay * 1000:.1f} ms"
        try:
            resume_until_done(outcome, trial, place, (kind, checkpoint, run_id), str(child.pid))
        finally:
            # A process pool's workers outlive the killed workflow, idle on a
            # queue nobody closes (and holding its stdout): ended here.
            with contextlib.suppress(ProcessLookupError):  # a thread pool's: none left
                os.killpg(child.pid, signal.SIGKILL)
            assert child.stdout is not None
            child.stdout.close()
    return outcome


def _duration(place: Place, kind: str, checkpoint: bool) -> float:
    """A clean run's time here (resumed until done): the window kills fall into."""
    started = time.perf_counter()
    run_id = new_run_id("clean")
    for _ in range(20):
        try:
            _call(place, (kind, checkpoint, run_id), "clean")
            break
        except ValueError:
            continue
    return time.perf_counter() - started


def _call(place: Place, run: tuple[str, bool, str], owner: str) -> object:
    kind, checkpoint, run_id = run
    os.environ.update(FAULT_OWNER=owner, FAULT_POOL=kind)
    return retryflows.call(N, kind, checkpoint, run_id, place.store())


def resume_until_done(outcome: Outcome, trial: str, place: Place, run: tuple[str, bool, str], child: str) -> None:
    before = kept(place, run[2])
    first = before
    with place.log.open("a") as log:
        log.write("- - - - -\n")  # a line of the killed process's pool below it is late
    for r in range(12):
        owner = f"resume{r}"
        try:
            value = _call(place, run, owner)
        except ValueError:  # an item gave up: the next resume gives it a new budget
            outcome.endings["an item gave up"] += 1
            after = kept(place, run[2])
            check_round(outcome, trial, owner, before, tries(place.log), after)
            before = after
            continue
        except Exception as e:
            outcome.violation(trial, f"the resume raised {type(e).__name__}: {e}")
            return
        check_round(outcome, trial, owner, before, tries(place.log))
        # Its tries in flight, some begun after the kill, all in the log by now.
        check_killed(outcome, trial, child, first, tries(place.log).get(child, {}))
        late = sum(len(t) for t in tries(place.log, since_resume=True).get(child, {}).values())
        if late:
            outcome.violation(trial, f"the killed process's pool made {late} tries once the resume began")
        if value != flows.expected(N):
            outcome.violation(trial, f"the resumed run returned {value!r}")
        return
    outcome.violation(trial, "12 resumes did not finish the run")


def kept(place: Place, run_id: str) -> Kept:
    """The items whose result the store holds, and the others' kept tries."""
    store = place.store()
    names = store.peek_records("retry_items", run_id)
    if "steps/00000000" in names:
        return set(range(N)), {}
    results, failures = set(), {}
    for name, body in names.items():
        found = item_of(name)
        if found is None:
            continue
        rec = StepRecord.from_bytes(unseal(body, store.signing_key, run_id=run_id, position=None, name=name))
        if rec.kind == TRIES_KIND:
            given_up = rec.extra.get("given_up", 0)
            failures[found[1]] = (len(rec.attempts), budget_spent(len(rec.attempts), given_up))
        else:
            results.add(found[1])
    return results, failures


def tries(log: Path, since_resume: bool = False) -> dict[str, dict[int, list[Try]]]:
    """Each owner's tries of each item, in log order (since the resume's first try)."""
    out: dict[str, dict[int, list[Try]]] = defaultdict(lambda: defaultdict(list))
    lines = log.read_text().splitlines()
    if since_resume:
        lines = lines[lines.index("- - - - -") :]
        lines = lines[next((n for n, line in enumerate(lines) if line.startswith("resume")), len(lines)) :]
    for line in lines:
        owner, _, i, attempt, ok = line.split()
        if owner == "-":
            continue
        out[owner][int(i)].append((owner, int(attempt), ok))
    return out


def check_killed(outcome: Outcome, trial: str, child: str, kept: Kept, made: dict[int, list[Try]]) -> None:
    """The killed process kept each of its tries but the one cut short."""
    results, failures = kept
    if len(results) == N and not failures:
        return  # the block's record: nothing of its items is left
    for i in range(N):
        if i in results:  # its result replaced its tries record: it ended with it
            if made.get(i, [("", 0, "")])[-1][2] != "S":
                outcome.violation(f"{trial}, item {i}", f"kept a result its tries did not end with: {made.get(i)}")
            continue
        cut = len(made.get(i, [])) - failures.get(i, (0, 0))[0]
        if not 0 <= cut <= 1:
            outcome.violation(f"{trial}, item {i}", f"{cut} tries cut short: {made.get(i)}, kept {kept}")


def check_round(
    outcome: Outcome, trial: str, owner: str, before: Kept, made: dict[str, dict[int, list[Try]]],
    after: Kept | None = None,
) -> None:
    """The tries `owner` made, against what was kept before its round (and,
    for a round that ended without a value, after it)."""
    results, failures = before
    for i in range(N):
        mine = made.get(owner, {}).get(i, [])
        where = f"{trial}, {owner}, item {i}"
        if i in results and mine:
            outcome.violation(where, f"its result was kept, yet {len(mine)} more tries were made")
        if i in results:
            continue
        count, spent = failures.get(i, (0, 0))
        if len(mine) > BUDGET - spent:
            outcome.violation(where, f"{len(mine)} tries with {BUDGET - spent} left of its budget: {mine}")
        numbers = [a for _, a, _ in mine]
        if numbers and numbers[0] >= 0 and numbers != list(range(count, count + len(numbers))):
            outcome.violation(where, f"tries numbered {numbers} after {count} kept")
        if after is not None and i not in after[0]:
            now = after[1].get(i, (0, 0))[0]
            failed = sum(ok == "F" for _, _, ok in mine)
            if now - count != failed:
                outcome.violation(where, f"{failed} tries failed, {now - count} kept")
