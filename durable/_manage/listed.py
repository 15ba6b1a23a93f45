"""Runs as a listing shows them (`durable runs`, `Workflow.runs()`): from
their manifests' summaries, without reading any record, but for a run that
a resume ran under changed code."""

from __future__ import annotations

from collections.abc import Iterable

from .._storage.base import Store
from ..errors import DurableError
from .history import describe
from .runs import RunInfo, list_runs


def listed(
    store: Store, workflow: str | None = None, *, status: str | Iterable[str] | None = None
) -> list[RunInfo]:
    """`list_runs`, each run's finished steps and next position as `durable
    show` counts them."""
    return [_as_shown(i) for i in list_runs(store, workflow, status=status)]


def _as_shown(info: RunInfo) -> RunInfo:
    """A run a resume ran under changed code may keep records of the code
    before, which no resume replays (`changed.outdated`): not finished
    steps, though a count of its records says so. Only such a run's records
    are read; a completed run's records are its result's, finished."""
    if not info._older_code or info.status == "completed" or info._store is None:
        return info
    try:
        return describe(info._store, info.workflow, info.run_id)[0]
    except DurableError:  # removed or damaged since it was listed: as listed
        return info
