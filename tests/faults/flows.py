"""The workflows the fault campaign runs, in a module that the campaign
imports (it resumes runs in its own process) and that child processes run
(the ones that get killed, stopped or starved): the same functions, so the
same fingerprints. Every step body logs `<pid> <kind> <index>` with one
O_APPEND write, so executions are counted across processes.

    python -c 'import sys; from tests.faults.flows import main; main(sys.argv[1:])' KIND N RUN_ID

Environment: FAULT_STORE (URL), FAULT_LOG (execution log), FAULT_TTL (lease
seconds), FAULT_RETRIES (botocore attempts, S3 only), FAULT_HOOK_AT with
FAULT_HOOK (a shell command run inside that step, as a fault) or FAULT_FSIZE
(a file size limit set there), FAULT_SPIN (seconds each step body takes),
FAULT_GRACEFUL=1 (SIGTERM stops the run gracefully: `stop_on_signals`),
FAULT_SEGMENT (records per segment on an object store: kills land in
segment writes and in the removal of the single objects they cover)."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

import durable


def note(kind: str, i: int) -> None:
    fd = os.open(os.environ["FAULT_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{os.getpid()} {kind} {i}\n".encode())
    finally:
        os.close(fd)
    if os.environ.get("FAULT_SPIN"):  # a body that takes a while: stops land inside it
        until = time.perf_counter() + float(os.environ["FAULT_SPIN"])
        while time.perf_counter() < until:
            pass
    if str(i) == os.environ.get("FAULT_HOOK_AT"):  # read now: not part of a fingerprint
        if os.environ.get("FAULT_FSIZE"):  # a file size limit from here on (EFBIG)
            hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
            resource.setrlimit(resource.RLIMIT_FSIZE, (int(os.environ["FAULT_FSIZE"]), hard))
        if os.environ.get("FAULT_HOOK"):
            subprocess.run(os.environ["FAULT_HOOK"], shell=True, check=True)


def value(i: int) -> dict[str, Any]:
    # Sizes vary, one output is a blob (over FAULT_BLOB bytes).
    return {"i": i, "sq": i * i, "pad": "x" * (3000 if i == 2 else i * 40)}


@durable.step(name="work")
def work(i: int) -> dict[str, Any]:
    note("work", i)
    return value(i)


@durable.step(name="awork")
async def awork(i: int) -> dict[str, Any]:
    note("awork", i)
    await asyncio.sleep(0)
    return value(i)


@durable.step(name="item")
def item(i: int) -> dict[str, Any]:
    note("item", i)
    return value(i)


@durable.workflow(name="sync_flow")
def sync_flow(n: int) -> list[Any]:
    out = [work(i) for i in range(n)]
    if os.environ.get("FAULT_STOP") == "1":  # leaves the run open, every record kept
        raise RuntimeError("stopped after the steps")
    return out


@durable.workflow(name="async_flow")
async def async_flow(n: int) -> list[Any]:
    first = [await awork(i) for i in range(n // 2)]
    rest = await asyncio.gather(*(awork(i) for i in range(n // 2, n)))
    return first + list(rest)


@durable.workflow(name="loop_flow")
def loop_flow(n: int) -> list[Any]:
    return durable.loop_over(item, range(n), checkpoint_items=True)


@durable.step(name="cwork", cache=True)
def cwork(i: int) -> dict[str, Any]:
    note("cwork", i)
    return value(i)


@durable.workflow(name="cached_flow")
def cached_flow(n: int) -> list[Any]:
    # Odd steps are cached: their results go to a cache entry (and blob) first.
    return [cwork(i) if i % 2 else work(i) for i in range(n)]


FLOWS: dict[str, Any] = {
    "sync": sync_flow, "async": async_flow, "loop": loop_flow, "cached": cached_flow,
}  # fmt: skip
NAMES = {"sync": "sync_flow", "async": "async_flow", "loop": "loop_flow", "cached": "cached_flow"}
KINDS = {"sync": "work", "async": "awork", "loop": "item", "cached": "cwork"}


def expected(n: int) -> list[Any]:
    return [value(i) for i in range(n)]


def open_store(url: str | None = None) -> durable.Store:
    url = url or os.environ["FAULT_STORE"]
    options: dict[str, Any] = {
        "lease_ttl": float(os.environ.get("FAULT_TTL", "30")),
        "blob_threshold": 2048,
    }
    attempts = int(os.environ.get("FAULT_RETRIES", "0"))
    if url.startswith("s3://"):
        if attempts:
            options["config_kwargs"] = {
                "retries": {"max_attempts": attempts}, "connect_timeout": 2, "read_timeout": 5,
            }
        options["skip_instance_cache"] = True
    store = durable.open_store(url, **options)
    if url.startswith("s3://") and attempts:
        store.fs.retries = attempts  # type: ignore[attr-defined]  # s3fs's own retry loop
    return store


def call(kind: str, n: int, run_id: str, store: durable.Store) -> Any:
    flow = FLOWS[kind].with_options(store=store, run_id=run_id)
    return asyncio.run(flow(n)) if kind == "async" else flow(n)


def main(argv: list[str]) -> None:
    """A child process's run (started as `python -c` calling this, so that
    the functions are this module's, as in the process that resumes)."""
    kind, n, run_id = argv[0], int(argv[1]), argv[2]
    if os.environ.get("FAULT_SEGMENT"):
        from durable._storage import segmenter

        segmenter.SEGMENT_RECORDS = int(os.environ["FAULT_SEGMENT"])
    store = open_store()
    if os.environ.get("FAULT_GRACEFUL") == "1":  # SIGTERM drains (exit 143)
        durable.stop_on_signals()
    print("STARTED", flush=True)
    try:
        result = call(kind, n, run_id, store)
    except durable.DurableError as e:
        print("ERROR", type(e).__name__, json.dumps(str(e)), flush=True)
        sys.exit(3)
    print("VALUE", json.dumps(result), flush=True)


CHILD = "import sys; from tests.faults.flows import main; main(sys.argv[1:])"
