"""Runs whose process dies inside a step. A step that kills its own
process (the kernel's OOM killer, `os._exit`, a SIGKILL) records nothing
and leaves the manifest `running`: each resume, by hand, by `durable
recover` or by a supervisor restarting the script, would run that step
again and die again, forever. The next attempt counts such deaths in a row
at the same place (the same code, the same records found: the killed
attempt made none past them) in the manifest, which the killed process
never had to write; past `DURABLE_MAX_RECOVERY_ATTEMPTS` (default 3, 0:
no limit) the run is marked failed with `RunKilledError` instead, and
stays so at each call until the limit is raised, the code changes or the
run restarts. As DBOS's `max_recovery_attempts`, but counted per place:
an attempt that got further starts the count again."""

from __future__ import annotations

import os

from .._storage.base import Store
from .._storage.keys import top_level
from .._storage.manifest import decode_manifest
from .._storage.records import RunRecord
from ..errors import ConfigurationError, RunKilledError
from .context import RunState

VARIABLE, DEFAULT, KEY = "DURABLE_MAX_RECOVERY_ATTEMPTS", 3, "killed"


def count_killed(store: Store, manifest: RunRecord | None, ctx: RunState, fingerprint: str) -> RunKilledError | None:
    """Note in `manifest` how many attempts in a row died where the last
    one did (found `running`: its holder never ended it), and return the
    error that ends this attempt when as many as allowed did. Where: the
    code, the records and checkpointed loop items found (an attempt that
    made more got further). A death in a durable sleep (its timer kept, its
    record not) is no step's: a machine rebooted during a long sleep. Nor
    is one in a child run left running there: the child counts it, by its
    own records (each attempt may have got further in it)."""
    if manifest is None or (manifest.status != "running" and KEY not in manifest.extra):
        return None
    found = list(ctx.records)
    if any(p not in ctx.records for p in ctx.timers):
        manifest.extra.pop(KEY, None)
        return None
    place = [fingerprint, len(found) + sum(map(len, ctx.items.values()))]
    before = manifest.extra.get(KEY)
    kept = before if isinstance(before, list) and len(before) == 3 and type(before[2]) is int else None
    same = kept is not None and kept[:2] == place
    if manifest.status == "running":
        times = kept[2] + 1 if kept is not None and same else 1
        manifest.extra[KEY] = [*place, times]
    elif kept is not None and same and (manifest.error or {}).get("type") == "RunKilledError":
        times = kept[2]  # refused last time: still refused, unless the limit was raised
    else:
        manifest.extra.pop(KEY, None)
        return None
    limit = max_recovery_attempts()
    if limit == 0 or times < limit:
        return None
    tops = {top_level(p) for p in found}
    at = next(p for p in range(len(tops) + 1) if p not in tops)
    if _child_running(store, manifest, at):
        return None
    plan = manifest.plan or []
    step = plan[at][1] if at < len(plan) and isinstance(plan[at], list) else None
    return RunKilledError(manifest.workflow, manifest.run_id, at, step, times)


def _child_running(store: Store, manifest: RunRecord, at: int) -> bool:
    """Whether this run's child at `at` (its derived id, in this store) was
    left running. Asked only of a run about to be refused: a listing of
    the store's workflows, then a manifest read each."""
    child, own = f"{manifest.run_id}.{at}", (manifest.workflow, manifest.run_id)
    for workflow in store.workflows():
        raw = store.load_manifest(workflow, child)
        found = None if raw is None else decode_manifest(store, workflow, child, raw, summary_only=True)
        link = None if found is None else found.extra.get("parent")
        if found is not None and found.status == "running" and isinstance(link, dict):
            if (link.get("workflow"), link.get("run_id")) == own and link.get("store") is None:
                return True
    return False


def max_recovery_attempts() -> int:
    text = os.environ.get(VARIABLE, "").strip()
    if not text:
        return DEFAULT
    if not text.isdigit():
        raise ConfigurationError(f"{VARIABLE} must be a whole number >= 0 (0: no limit), not {text!r}")
    return int(text)
