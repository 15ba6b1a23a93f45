"""`durable recover TARGET`: resume every interrupted or failed run of a
workflow whose holder is gone, one after another, and report each."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from .._api.workflow import AsyncWorkflow, store_of
from .._storage.base import Store
from .format import value_text
from .target import load_target


def cmd_recover(args: argparse.Namespace, store: Store) -> int:
    """Exit 0 when no run failed again (held, suspended and cancelled runs
    do not count), 1 otherwise."""
    wf = load_target(args.target).with_options(durability=args.durability)
    if args.store is not None or wf.options.store is None:
        wf = wf.with_options(store=store)
    else:
        store = store_of(wf)
    call: Any = wf.recover()
    done = asyncio.run(call) if isinstance(wf, AsyncWorkflow) else call
    if args.json:
        print(json.dumps([_doc(r) for r in done], indent=2))
    elif not done:
        print(f"no interrupted or failed run of {wf.name} in {store.url}", file=sys.stderr)
    for run in done if not args.json else []:
        print(_line(run), file=sys.stderr)
    return 1 if any(r.status == "failed" for r in done) else 0


def _line(run: Any) -> str:
    if run.status == "completed":
        return f"run {run.run_id}: completed ({run.steps_replayed} replayed, " \
            f"{run.steps_executed} executed): {value_text(run.value)}"  # fmt: skip
    return f"run {run.run_id}: {run.status}: {run.error}"


def _doc(run: Any) -> dict[str, Any]:
    doc = {"runId": run.run_id, "status": run.status, "error": run.error}
    if run.status == "completed":
        doc |= {"stepsReplayed": run.steps_replayed, "stepsExecuted": run.steps_executed}
    return doc
