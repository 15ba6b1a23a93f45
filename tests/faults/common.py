"""What every fault experiment shares: its outcome (trials and violations),
child processes running `flows.py`, and reading the execution log."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import durable
from durable._storage.keys import item_of, parse_name
from tests import forkcli
from tests.faults import flows

ROOT = Path(__file__).resolve().parents[2]
FLOWS = Path(flows.__file__)


@dataclass
class Outcome:
    """One experiment: how many trials ran and every violation seen (each a
    sentence naming the trial), plus what the trials ended with."""

    experiment: str
    trials: int = 0
    violations: list[str] = field(default_factory=list)
    endings: Counter[str] = field(default_factory=Counter)

    def violation(self, trial: str, what: str) -> None:
        self.violations.append(f"{self.experiment} [{trial}]: {what}")


@dataclass
class Place:
    """Where the experiment's runs live, and the environment a child needs."""

    url: str
    env: dict[str, str]
    log: Path

    def __post_init__(self) -> None:
        # Runs resumed in this process log their executions there too.
        os.environ["FAULT_LOG"] = str(self.log)

    def child_env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **self.env)
        env.update(FAULT_STORE=self.url, FAULT_LOG=str(self.log))
        env.update(extra)
        return env

    def store(self) -> durable.Store:
        """This place's store, for a run in this process (which then logs
        its executions to this place's log)."""
        os.environ["FAULT_LOG"] = str(self.log)
        saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        try:
            return flows.open_store(self.url)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def new_run_id(tag: str) -> str:
    return f"{tag}-{uuid.uuid4().hex[:10]}"


def spawn(place: Place, kind: str, n: int, run_id: str, **extra: str) -> subprocess.Popen[str] | forkcli.Forked:
    """The flow `kind` in a process of its own, what it says on a pipe:
    forked from an interpreter that imported the engine once (`forkcli`)."""
    argv, env = ["-c", flows.CHILD, kind, str(n), run_id], place.child_env(**extra)
    if forkcli.forkable(argv, env):
        return forkcli.start(argv, Path.cwd(), env, stdout_pipe=True)
    return subprocess.Popen(
        [sys.executable, *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def read_line(stream: IO[str] | None) -> str:
    assert stream is not None
    return stream.readline().strip()


def executions(log: Path, kind: str) -> dict[int, Counter[int]]:
    """{pid: Counter(index)} of one step kind."""
    out: dict[int, Counter[int]] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            pid, k, i = line.split()
            if k == kind:
                out.setdefault(int(pid), Counter())[int(i)] += 1
    return out


def recorded(store: durable.Store, kind: str, run_id: str, n: int) -> set[int]:
    """Indexes whose result the store holds now: step records (sync, async:
    their positions are the indexes, paths inside tasks included), loop
    item records, or the whole list once the loop's block is recorded."""
    names = store.peek_records(flows.NAMES[kind], run_id)
    if kind == "loop":
        if "steps/00000000" in names:
            return set(range(n))
        return {i[1] for name in names if (i := item_of(name)) is not None}
    done: set[int] = set()
    for name in names:
        parsed = parse_name(name)
        if parsed is not None and parsed[0] == "steps":
            done.add(_index(kind, parsed[1], n))
    return done


def _index(kind: str, position: Any, n: int) -> int:
    """async_flow awaits the first half in order (positions 0..n/2-1), then
    gathers the rest as tasks (one position path each, in creation order)."""
    if isinstance(position, int):
        return position
    return n // 2 + int(position[1])


def check_counts(
    outcome: Outcome,
    trial: str,
    done: set[int],
    first: Counter[int],
    second: Counter[int],
    n: int,
) -> None:
    """The execution invariant across one crash: a result recorded before
    it is never computed again; every other one is computed by the resumer,
    once; nothing runs twice in one process."""
    for i in range(n):
        if first[i] > 1 or second[i] > 1:
            outcome.violation(trial, f"step {i} ran twice in one process")
        if i in done and second[i]:
            outcome.violation(trial, f"step {i} was recorded before the fault yet ran again")
        if i in done and not first[i]:
            outcome.violation(trial, f"step {i} recorded but never executed")
        if i not in done and not second[i]:
            outcome.violation(trial, f"step {i} was not recorded and was not run again")
