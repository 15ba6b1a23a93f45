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
an attempt that got further starts the count again. A death is one of a
holder known dead: one whose run was free to take (its process gone:
local disk's lock), its pid gone on this host, or its lease expired on
another; a live holder on this host whose lease was taken over (stopped,
SIGSTOP) died nowhere. The refusal is made where the run reaches that
place, not before: a child run there counts its own deaths, whatever its
id and store."""

from __future__ import annotations

import functools
from collections.abc import Callable

from .._settings import env_number
from .._storage.keys import Position, top_level
from .._storage.records import RunRecord
from ..errors import RunKilledError
from .context import RunState

VARIABLE, DEFAULT, KEY = "DURABLE_MAX_RECOVERY_ATTEMPTS", 3, "killed"
CHILD = "a child workflow call"  # what `child_plan` takes its position as
# What a refused attempt ends a run found `running` with: no attempt, no death.
REFUSALS = ("RunKilledError", "DefinitionChangedError", "NondeterminismError")


def count_killed(
    manifest: RunRecord | None, ctx: RunState, fingerprint: str, lease: object | None
) -> Callable[[Position, str], None] | None:
    """Note in `manifest` how many attempts in a row died where the last
    one did (found `running` by a `lease` taken from a holder known dead),
    and return what refuses this attempt at that place when as many as
    allowed did (`refuse_at`). Where: the code, the records and
    checkpointed loop items found (an attempt that made more got further).
    A death in a durable sleep (its timer kept, its record not) is no
    step's: a machine rebooted during a long sleep."""
    limit = max_recovery_attempts()  # at every start: a bad value is refused before anything runs
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
    if manifest.status == "running" and getattr(getattr(lease, "lease", lease), "from_live", False):
        return None  # nobody died: a stopped holder taken over (`ObjectLease.from_live`)
    if manifest.status == "running":
        times = kept[2] + 1 if kept is not None and same else 1
        manifest.extra[KEY] = [*place, times]
    elif kept is not None and same and (manifest.error or {}).get("type") in REFUSALS:
        times = kept[2]  # refused last time: the deaths before stand (`lifecycle.refused`)
    else:
        manifest.extra.pop(KEY, None)
        return None
    if limit == 0 or times < limit:
        return None
    tops = {top_level(p) for p in found}
    at = next(p for p in range(len(tops) + 1) if p not in tops)
    plan = manifest.plan or []
    step = plan[at][1] if at < len(plan) and isinstance(plan[at], list) else None
    error = RunKilledError(manifest.workflow, manifest.run_id, at, step, times)
    return functools.partial(refuse_at, ctx, error)


def refuse_at(ctx: RunState, error: RunKilledError, pos: Position, what: str) -> None:
    """Called with each position the body takes until it reaches the place
    its process died at: a child run there goes on (its own count bounds
    its deaths, by its own records: each attempt may have got further in
    it); anything else is refused, final (`RunState.refuse`)."""
    if top_level(pos) < error.position:
        return
    ctx.killed = None
    if what != CHILD:
        raise ctx.refuse(error)


def max_recovery_attempts() -> int:
    given = env_number(VARIABLE, whole=True, meaning=" (0: no limit)")
    return DEFAULT if given is None else int(given)
