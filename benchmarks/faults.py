"""The full fault campaign: the experiments of `tests/faults/` with large
counts, on a local folder and on S3 (moto's server over HTTP, in this
process). Prints one row per experiment: trials, violations, and how the
trials ended; every violation is listed below the table.

    python benchmarks/faults.py                 # the full campaign (~20 min on 2 cores)
    python benchmarks/faults.py --scale 0.1     # a tenth of every count
    python benchmarks/faults.py --only kill     # experiments whose name contains "kill"

Needs the `test` extra (moto, s3fs). Linux: it uses /proc, fork, SIGSTOP,
and as root a read-only bind mount (otherwise file permissions)."""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.faults

from tests.faults import (
    cachelimit,
    damage,
    diskfull,
    environment,
    kills,
    live,
    retries,
    s3requests,
    samerun,
)
from tests.faults.common import Outcome, Place

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def s3_place(folder: Path) -> tuple[Place, str, Callable[[], None]]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = dict(CREDENTIALS, AWS_ENDPOINT_URL=endpoint)
    os.environ.update(env)
    import s3fs

    bucket = f"faults-{uuid.uuid4().hex[:12]}"
    s3fs.S3FileSystem(skip_instance_cache=True).mkdir(bucket)
    return Place(f"s3://{bucket}/runs", env, folder / "s3.log"), endpoint, server.stop


def experiments(folder: Path, scale: float) -> list[tuple[str, Callable[[], Outcome]]]:
    """(name, run) pairs; places are made when an experiment first runs."""

    def n(count: int) -> int:
        return max(1, round(count * scale))

    rng = random.Random(11)
    local = Place(str(folder / "local"), {}, folder / "local.log")
    s3: list[tuple[Place, str, Callable[[], None]]] = []

    def on_s3() -> tuple[Place, str]:
        if not s3:
            s3.append(s3_place(folder))
        return s3[0][0], s3[0][1]

    def named(outcome: Outcome, where: str) -> Outcome:
        outcome.experiment += f", {where}"
        return outcome

    def kill(kind: str, where: str, count: int) -> Callable[[], Outcome]:
        def run() -> Outcome:
            place = local if where == "local" else on_s3()[0]
            return named(kills.kill_trials(place, kind, count, rng), where)

        return run

    runs = [
        (f"kill {kind} {where}", kill(kind, where, n(count)))
        for where, count in (("local", 170), ("S3", 50))
        for kind in ("sync", "async", "loop")
    ]
    runs += [
        (f"kill {kind} local durability={level}", at_level(level, kill(kind, "local", n(60))))
        for level in ("batch", "none")
        for kind in ("sync", "async", "loop")
    ]
    runs += [
        (f"kill item retries {kind} checkpoint={checkpoint}",
         lambda kind=kind, checkpoint=checkpoint: named(
             retries.kill_trials(local, kind, checkpoint, n(75), rng), "local"))
        for kind in ("threads", "processes")
        for checkpoint in (True, False)
    ]  # fmt: skip
    runs += [
        (f"graceful stop {kind}", lambda kind=kind: kills.stop_trials(local, kind, n(100), rng))
        for kind in ("sync", "async", "loop")
    ]
    runs += [
        ("damage every offset", lambda: damage.damage_every_offset(folder / "damage", 1, rng)),
        ("race local", lambda: named(kills.race(local, 8, n(20)), "local")),
        ("race S3", lambda: named(kills.race(on_s3()[0], 8, n(10)), "S3")),
        ("rm against start", lambda: kills.rm_against_start(local, n(250))),
        ("rlimit fsize", lambda: environment.file_size_limit(local, n(40), rng)),
        ("disk full (ENOSPC)", lambda: diskfull.disk_full(local, "sync", n(9), rng)),
        ("rlimit fsize cached",
         lambda: cachelimit.file_size_limit_cached(folder / "cachelimit", n(40), rng)),
        ("read-only", lambda: environment.read_only_store(local, n(40), rng)),
        ("deleted folders", lambda: environment.deleted_store(local, n(40), rng)),
        ("s3 endpoint cut", lambda: environment.endpoint_cut(*on_s3(), n(10), rng)),
        ("sigstop s3", lambda: environment.stopped_past_lease(on_s3()[0], n(5))),
        ("s3 request failures, segments",
         lambda: s3requests.segmented_request_faults(*on_s3(), n(80), rng)),
        ("cli during a live run", lambda: live.cli_during_live_run(local, n(60), rng)),
        ("cli during a live run S3",
         lambda: named(live.cli_during_live_run(on_s3()[0], n(20), rng), "S3")),
        ("fork killed", lambda: live.fork_killed(local, n(40), rng)),
        ("one run id in threads", lambda: samerun.same_run_at_once(folder / "same", n(200), rng)),
        ("planted pickles", lambda: damage.planted_pickles(folder / "plants")),
        ("planted symlinks", lambda: damage.planted_symlinks(folder / "links")),
    ]
    runs.append(("(stop moto)", lambda: _stop(s3)))
    return runs


def at_level(level: str, run: Callable[[], Outcome]) -> Callable[[], Outcome]:
    """run with $DURABLE_DURABILITY at level (its children and its resumes):
    a process crash must lose nothing at any level."""

    def ran() -> Outcome:
        saved = os.environ.get("DURABLE_DURABILITY")
        os.environ["DURABLE_DURABILITY"] = level
        try:
            outcome = run()
        finally:
            if saved is None:
                del os.environ["DURABLE_DURABILITY"]
            else:
                os.environ["DURABLE_DURABILITY"] = saved
        outcome.experiment += f", durability={level}"
        return outcome

    return ran


def _stop(s3: list[tuple[Place, str, Callable[[], None]]]) -> Outcome:
    for _, _, stop in s3:
        stop()
    return Outcome("")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every count")
    parser.add_argument("--only", default="", help="run experiments whose name contains this")
    args = parser.parse_args()
    rows: list[tuple[Outcome, float]] = []
    with tempfile.TemporaryDirectory(prefix="durable-faults-") as tmp:
        for name, run in experiments(Path(tmp), args.scale):
            if args.only not in name and not name.startswith("("):
                continue
            started = time.perf_counter()
            outcome = run()
            if outcome.experiment:
                rows.append((outcome, time.perf_counter() - started))
                print(f"  {outcome.experiment}: {outcome.trials} trials, "
                      f"{len(outcome.violations)} violations", file=sys.stderr, flush=True)  # fmt: skip
    report(rows)


def report(rows: list[tuple[Outcome, float]]) -> None:
    width = max(len(o.experiment) for o, _ in rows)
    print(f"{'experiment':<{width}}  {'trials':>7}  {'violations':>10}  {'time':>7}  endings")
    for outcome, seconds in rows:
        endings = ", ".join(f"{k} {v}" for k, v in outcome.endings.most_common())
        print(f"{outcome.experiment:<{width}}  {outcome.trials:>7}  "
              f"{len(outcome.violations):>10}  {seconds:>6.0f}s  {endings}")  # fmt: skip
    kills_total = sum(o.trials for o, _ in rows if o.experiment.startswith("kill -9"))
    violations = [v for o, _ in rows for v in o.violations]
    print(f"\nkill -9 trials: {kills_total}; violations in all: {len(violations)}")
    for v in violations:
        print(f"  - {v}")


if __name__ == "__main__":
    main()
