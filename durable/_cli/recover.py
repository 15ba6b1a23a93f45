"""`durable recover TARGET`: resume every interrupted or failed run of a
workflow whose holder is gone, one after another, and report each."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .._api.asyncworkflow import AsyncWorkflow
from .._api.steer import LEFT_TO_PARENT
from .._api.workflow import store_of
from .._errortext import id_word
from .._storage.base import Store
from ..errors import DefinitionChangedError
from .common import in_flags, names_a_refusal, not_there, note, nothing_there, rerun
from .format import value_text
from .target import load_target


def cmd_recover(args: argparse.Namespace, store: Store) -> int:
    """Exit 1 when a run failed again or could not be read, else 2 when one
    was refused (a changed definition: nothing executed, the run is as it
    was), else 0 (held, suspended and cancelled runs do not count)."""
    wf = load_target(args.target, args.typed).with_options(durability=args.durability)
    if args.store is not None or wf.options.store is None:
        wf = wf.with_options(store=store)
    else:
        store = store_of(wf)
    call: Any = wf.recover()
    if isinstance(wf, AsyncWorkflow):
        import asyncio  # an async workflow's only (`durable run` says why)

        call = asyncio.run(call)
    done = call
    if args.json:
        print(json.dumps([_doc(r) for r in done], indent=2))
    if not done and (not args.json or nothing_there(store)):  # `[]` for a typo in --store: said why
        note(f"no interrupted or failed run of {wf.name}{not_there(store) or f' in {store.url}'}")
        return nothing_there(store)
    for run in done if not args.json else []:
        print(_line(run, rerun(args, run.run_id)), file=sys.stderr)
    refused = [r for r in done if r.error is not None and names_a_refusal(r.error)]
    left = [r for r in done if (r.error or "").endswith(LEFT_TO_PARENT)]  # not tried: not failed
    if any(r.status in ("failed", "unreadable") and r not in refused + left for r in done):
        return 1
    return 2 if refused else 0


def _line(run: Any, again: str) -> str:
    if run.error is None or not names_a_refusal(run.error):
        pass
    elif run.error.startswith(f"{DefinitionChangedError.__name__}: "):
        # Its message names Python options; here the way out is a `durable run`.
        why = run.error.partition("\nNothing was executed.")[0]
        return (
            f"run {id_word(run.run_id)}: refused, nothing executed, still {run.status}: {why}\n"
            f"  resume it with: {again} --resume and "
            "--on-change rerun (re-run from the first change) or --rebase-checkpoint (keep "
            "the old records); --restart starts it afresh with the --var arguments given"
        )
    else:
        return f"run {id_word(run.run_id)}: refused, still {run.status}: {in_flags(run.error)}"
    if run.status == "completed":
        return f"run {id_word(run.run_id)}: completed ({run.steps_replayed} replayed, " \
            f"{run.steps_executed} executed): {value_text(run.value)}"  # fmt: skip
    return f"run {id_word(run.run_id)}: {run.status}: {run.error}"


def _doc(run: Any) -> dict[str, Any]:
    doc = {"runId": run.run_id, "status": run.status, "error": run.error}
    if run.status == "completed":
        doc |= {"stepsReplayed": run.steps_replayed, "stepsExecuted": run.steps_executed}
    return doc
