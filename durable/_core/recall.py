"""A completed run's call answered without taking its lease.

What proves that a completed run's recorded result is this call's result
is all in its manifest: the status, the definition fingerprint, the
argument digests, the result (or its blob), and the artifacts its steps
registered. The manifest is replaced whole (local disk: a rename; object
stores: a new generation), so one read sees one state of the run, and
returning the result it holds is the call made at that moment. The lease
guards writes, and this path writes nothing: it saves a lease file's open,
lock, write, truncate and unlock (an object store's conditional writes)
per call, and a completed run no longer answers `RunLockedError` while
another process re-calls it.

Every check is `run_locked`'s own (`completed_outcome` decides): this path
only answers when that one would return the recorded result. Anything else
(another status, another fingerprint or other arguments, a stale artifact,
a damaged manifest or result, any error) leaves the call to `run_locked`,
under the lease, which reads the run again and decides as before."""

from __future__ import annotations

import inspect
from typing import Any

from .._fingerprint.madewith import as_run
from .._settings import setting
from .._storage.base import Store
from .._storage.manifest import decode_manifest
from . import events
from .arguments import argument_digests, inherited, merge_arguments
from .context import Run
from .definition import as_left
from .outcome import completed_outcome
from .run import Flow


def recalled(
    flow: Flow,
    store: Store,
    run_id: str,
    given: inspect.BoundArguments | None,
    overrides: dict[str, Any],
    raw: bytes,
    checked: inspect.Signature | None = None,
) -> Run[Any] | None:
    """The recorded outcome of the completed run whose manifest bytes are
    `raw` (read without the lease: `Store.peek_manifest`) when this call is
    that run's call (`given` None: a resume, from the recorded arguments
    with `overrides`), else None. A run whose steps registered artifacts,
    and options that make a call do more than
    return the result (restart, retention; a progress file, which the
    caller tells) take the lease."""
    options = flow.options
    if options.restart or options.keep_last is not None:
        return None
    try:
        manifest = decode_manifest(store, flow.name, run_id, raw, plan=False)
        if manifest.status != "completed" or manifest.extra.get("artifacts"):
            return None  # artifacts: read with the records, which only a holder may repair
        recorded, kept = inherited(store, manifest) if given is None else ({}, None)
        bound = merge_arguments(flow.fn, recorded, given, overrides, digests=kept, checked=checked)
        definition = as_left(flow.fn, as_run((flow.name, run_id), flow.definition), manifest)
        if definition.fingerprint != manifest.fingerprint:
            return None
        policy = "rebase" if options.rebase else setting("on_change", options.on_change)
        done = completed_outcome(store, manifest, definition, bound, argument_digests(bound), policy)
    except Exception:  # refused, damaged, changed meanwhile: decided again under the lease
        return None
    if done is not None:
        events.emit(events.recorded_completion(run_id, flow.name))
    return done
