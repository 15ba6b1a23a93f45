"""Files and folders a step produced, on the run's side: `artifact(path)`
registers one from inside a step; when the step returns, each is described
in the step's record, and before that record is replayed the description
is checked against what is there now (describing and checking files is
`_storage.files`, which run management uses too)."""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from .._storage.files import describe, display, first_stale, normalise, paired
from .._storage.keys import Position, position_key
from ..errors import ArtifactMissingError, ConfigurationError
from .context import RunState, StepFrame, _step_var, active_run
from .replay import reopen
from .scope import reset_vars

PathT = TypeVar("PathT", bound="str | os.PathLike[str]")
VERIFY_MODES = ("digest", "mtime")

Found = list[tuple[str, str | None]]  # (url, verify override) pairs a step registers


def found_here() -> Found | None:
    """Where an artifact registered here goes (None: nothing collects it)."""
    frame = _step_var.get()
    return None if frame is None else frame[3]


def _with_found(found: Found) -> contextvars.Token[StepFrame | None]:
    # The step or item running here stays what it is: only where artifacts go changes.
    frame = _step_var.get()
    return _step_var.set((None, 0, None, found) if frame is None else (*frame[:3], found))


def artifact(path: PathT, *, verify: str | None = None) -> PathT:
    """Register a file or folder (a local path or any fsspec URL) that the
    running step produced; returns path unchanged. Before the step's record
    is replayed, the artifact is checked; if it is missing or changed, the
    step runs again. Outside a workflow it does nothing."""
    if verify is not None and verify not in VERIFY_MODES:
        raise ConfigurationError(f"verify must be one of {VERIFY_MODES}, not {verify!r}")
    if not isinstance(path, (str, os.PathLike)):  # os's own TypeError named no durable call
        raise ConfigurationError(
            f"artifact() takes a path (a str or os.PathLike: a local file or folder, or an "
            f"fsspec URL), not {path!r}"
        )
    found = found_here()
    if found is not None:
        found.append((normalise(path), verify))
    elif active_run() is not None:
        raise ConfigurationError(
            f"artifact({str(path)!r}) was called in a workflow body, outside any step: "
            "call it inside the @durable.step that writes the file, so the check belongs to it"
        )
    return path


def collect_into(found: list[tuple[str, str | None]]) -> Callable[[], None]:
    """Send registrations made in this context to found; returns the reset."""
    token = _with_found(found)
    return lambda: reset_vars((token,))  # may be run again (see `plan.drive_sync`)


def produced(
    ctx: RunState, pos: Position, step: str, found: Iterable[Any], verify: str
) -> list[dict[str, Any]]:
    """Record entries for what a step registered (pairs from `artifact()`) or
    derived (plain paths from `artifacts=`); the first registration of a URL
    wins. One that does not exist fails the step before it is recorded."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item in found:
        url, own = item if isinstance(item, tuple) else (normalise(item), None)
        if url in seen:
            continue
        seen.add(url)
        entry = describe(url, own or verify, ctx.store)
        if entry is None:
            raise ArtifactMissingError(ctx.run_id, pos, step, display(url), "not produced")
        out.append(entry)
    return out


def check_record(ctx: RunState, rec: Any, policy: str) -> str | None:
    """Why a step record may not be replayed ("artifact X missing"), or None
    when every artifact it lists is as recorded. Raises under "refuse"."""
    stale = first_stale(_paired(ctx, rec), ctx.store)
    if stale is None:
        return None
    entry, now = stale
    if policy == "refuse":
        raise ArtifactMissingError(ctx.run_id, rec.position, rec.name, display(entry["url"]), now)
    return f"artifact {display(entry['url'])} {now}"


def _paired(ctx: RunState, rec: Any) -> list[dict[str, Any]]:
    """rec's entries, a folder's with what the run's later records registered
    in it (`files.paired`): a file a later step wrote there is no change."""
    entries: list[dict[str, Any]] = rec.artifacts
    if not any(e.get("kind") == "folder" for e in entries):
        return entries
    after = position_key(rec.position)
    later = [e["url"] for p in list(ctx.records) if position_key(p) > after
             for e in (ctx.records[p].artifacts or ()) if ctx.records[p].persisted]  # fmt: skip
    return [paired(e, later) for e in entries]


def recheck(ctx: RunState, rec: Any, policy: str) -> str | None:
    """Before a step record is replayed: when an artifact it lists is missing
    or changed, forget it and every later record (they were built on it),
    run the rest as under on_change="rerun", and return why."""
    try:
        why = check_record(ctx, rec, policy)
    except ArtifactMissingError as e:
        raise ctx.refuse(e) from None
    if why is not None:
        reopen(ctx, rec.position)
    return why
