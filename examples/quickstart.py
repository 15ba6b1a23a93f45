"""The quick start: a five-step pipeline whose first run is killed in the
middle of step 3, and a second run that resumes it.

    make demo          # or: python examples/quickstart.py

Steps print when they really execute; the second run replays steps 1-2
from the store (default ./.durable, or $DURABLE_STORE) without executing them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import durable

EXECUTED: list[str] = []


def announce(name: str) -> None:
    EXECUTED.append(name)
    print(f"    executing {name}", flush=True)


@durable.step
def download(dataset: str) -> list[int]:
    announce("download")
    return [len(dataset) * i for i in range(1, 6)]


@durable.step
def clean(rows: list[int]) -> list[int]:
    announce("clean")
    return [r for r in rows if r % 2 == 0]


@durable.step
def train(rows: list[int]) -> dict[str, float]:
    announce("train")
    if os.environ.get("DEMO_CRASH") == "1":
        print("    !! the process is killed in the middle of 'train' (SIGKILL)", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    return {"weight": sum(rows) / len(rows), "bias": 0.5}


@durable.step(retries=2, retry_delay=0.1)
def evaluate(model: dict[str, float]) -> float:
    announce("evaluate")
    return round(model["weight"] * 0.9 + model["bias"], 3)


@durable.step
def report(score: float) -> str:
    announce("report")
    return f"score={score}"


STEPS = ["download", "clean", "train", "evaluate", "report"]


@durable.workflow
def pipeline(dataset: str) -> str:
    rows = clean(download(dataset))
    model = train(rows)
    return report(evaluate(model))


def attempt() -> None:
    # The first run starts afresh (restart=True discards the records of an
    # earlier demo in this store), so every demo dies in step 3 and resumes.
    first = os.environ.get("DEMO_CRASH") == "1"
    run = pipeline.with_options(restart=first).run("penguins")
    if run.resumed_from_step is not None:
        print(f"Resumed from step {run.resumed_from_step + 1}")
    replayed = [s for s in STEPS if s not in EXECUTED]
    print(f"    replayed without executing: {', '.join(replayed) or 'nothing'}")
    print(f"    executed: {', '.join(EXECUTED) or 'nothing'}")
    print(f"Result: {run.value}  (run id {run.run_id}, status {run.status})")


def main() -> int:
    if os.environ.get("DEMO_CHILD") == "1":
        attempt()
        return 0
    env = dict(os.environ, DEMO_CHILD="1")
    print("== First run (will be killed during step 3)")
    first = subprocess.run([sys.executable, __file__], env=dict(env, DEMO_CRASH="1"), check=False)
    print(f"   first run died with exit status {first.returncode}")
    print("== Second run: same call, same run id")
    second = subprocess.run([sys.executable, __file__], env=env, check=False)
    print("== Third run: everything is recorded, nothing executes")
    third = subprocess.run([sys.executable, __file__], env=env, check=False)
    return second.returncode or third.returncode


if __name__ == "__main__":
    sys.exit(main())
