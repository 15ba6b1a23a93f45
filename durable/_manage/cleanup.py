"""gc: removing the old runs of a whole store, or of one workflow
(`durable gc`, `durable.gc()`, `keep_last=` on the decorator), chosen from
the listing in `runs` by status, age and how many completed runs to keep,
each deleted by `delete.delete_run` under its lease."""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable

from .._calls import at_callers
from .._errortext import warn
from .._storage.base import SHARED_BLOBS, Store
from .._storage.clock import now
from .._storage.factory import open_store
from .._storage.keycheck import check_names
from .._storage.keys import is_run_object
from ..errors import (
    ConfigurationError,
    LeaseLostError,
    RunLockedError,
    RunNotFoundError,
    StorageError,
)
from . import delete, runs  # by module: `runs.list_runs` as it is when gc lists (tests replace it)
from .missing import no_runs_of
from .parents import parent_here
from .reads import more_than_a_lease
from .runs import RunInfo

# A crashed writer's temp file is swept by gc once untouched this long.
TEMP_AGE = 3600.0


# Failures of one cause in a row after which gc tries no more runs: an
# endpoint gone down costs each run the client's retries (about 10 s on
# S3), and every run left would fail the same way.
GIVE_UP = 3


class GcFailed(StorageError):
    """gc() went on past each run the store failed to remove, then raised
    this: `removed` (the runs removed, as gc returns them), `failed`
    ("workflow/run_id" of each run left, to the StorageError of its removal)
    and `untried` (the runs it did not try once GIVE_UP removals in a row
    failed of one cause: an endpoint down, a store refusing every delete)."""

    def __init__(
        self, url: str, removed: list[RunInfo], failed: dict[str, StorageError],
        untried: list[RunInfo] | None = None,
    ) -> None:  # fmt: skip
        self.removed, self.failed, self.untried = removed, failed, untried or []
        first = next(iter(failed.values()))
        runs = f"{len(failed)} run{'s' * (len(failed) != 1)} ({', '.join(failed)})"
        stopped = (
            f"; it stopped after {GIVE_UP} failures of one cause in a row and did not try "
            f"{len(self.untried)} more, which stay too" if self.untried else ""
        )
        super().__init__(url, f"gc removed {len(removed)} run{'s' * (len(removed) != 1)} and failed to remove "
                         f"{runs}, which stay{stopped}; the first: {first.cause}", first.advice)  # fmt: skip


@at_callers
def gc(
    store: Store | str | os.PathLike[str] | None = None,
    *,
    keep_last: int | None = None,
    older_than: float | datetime.timedelta | None = None,
    status: str | Iterable[str] | None = None,
    dry_run: bool = False,
    workflow: str | None = None,
) -> list[RunInfo]:
    """Remove old runs of every workflow in a store; return what was (or, with
    `dry_run`, would be) removed. Every filter given narrows what goes: per
    workflow, a run is removed only if it matches `status` (a status or a
    collection of them; None for any, an empty collection for none), is
    not kept by `keep_last`, and was last updated more than `older_than`
    ago (seconds or a timedelta). `keep_last=N` keeps the N newest
    *completed* runs and every run newer than them (a fork not yet run, a
    failed run waiting to be resumed); only completed runs count towards N,
    and while fewer than N completed, it keeps everything. `keep_last=3,
    older_than=7 days` keeps those and, of the rest, removes the ones
    older than 7 days. A running run, or one held by a live process, is
    never removed; nor is a `suspended` run (it waits for an answer), nor
    one whose manifest cannot be read (`corrupt`, `unverified`, `newer`:
    its age is unknown), unless `status` names its status; nor, even then,
    one the store failed to read (`unreadable`: the next read may succeed);
    nor a child run whose parent run is in the store (`parents.parent_here`).
    A whole-store gc (no `workflow`) also removes `leftovers` (not
    returned) and sweeps temp files a crashed writer left (untouched for
    `TEMP_AGE` seconds). A run the store fails to remove stops no other:
    each is tried (until GIVE_UP in a row failed of one cause), then a
    StorageError (`GcFailed`) names the runs left and those not tried."""
    if keep_last is None and older_than is None and status is None:
        raise ConfigurationError(
            "gc() needs at least one of keep_last, older_than or status; "
            "it never removes everything by default"
        )
    if keep_last is not None and (
        not isinstance(keep_last, int) or isinstance(keep_last, bool) or keep_last < 0
    ):
        raise ConfigurationError(f"keep_last= takes a whole number >= 0, not {keep_last!r}")
    if not isinstance(dry_run, bool):  # dry_run=0 meant "no" and removed; "no" did not
        raise ConfigurationError(f"gc(dry_run=...) takes True or False, not {dry_run!r}")
    target = store if isinstance(store, Store) else open_store(store)
    wanted = None if status is None else {status} if isinstance(status, str) else _statuses(status)
    runs.check_statuses(wanted or ())
    for never in sorted((wanted or set()) & _NEVER.keys()):  # it matched none: said, not "removed 0"
        warn(f"gc never removes a{'n' * (never[0] == 'u')} {never} run ({_NEVER[never]})")
    cutoff = None if older_than is None else now() - _seconds(older_than)
    removed: list[RunInfo] = []
    tries = _Tries()
    keys = runs.listing(target, workflow)  # one listing for runs and leftovers
    if workflow is not None and not target.manifest_keys(keys) and (missing := no_runs_of(target, workflow)):
        raise missing  # a typo, not a workflow with nothing to remove
    for infos in _by_workflow(runs.list_runs(target, workflow, keys=keys)):
        chosen = [i for i in infos if _matches(i.status, wanted)]
        if keep_last is not None:
            kept = _kept(infos, keep_last)
            chosen = [i for i in chosen if i.run_id not in kept]
        if cutoff is not None:
            chosen = [i for i in chosen if i.updated < cutoff]
        chosen = [i for i in chosen if not parent_here(target, i)]
        removed += [i for i in chosen if dry_run or tries.delete(target, i)]
    if workflow is None:
        left = leftovers(target, keys)
        gone = [i for i in left if dry_run or tries.delete(target, i, leftover=True)]
        if gone:  # no run, so not returned; said, or the next look finds objects gone unsaid
            names = ", ".join(f"{i.workflow}/{i.run_id}" for i in gone)
            warn(f"gc {'would also remove' if dry_run else 'also removed'} what a removal or a fork "
                 f"cut short left of {len(gone)} run{'s' * (len(gone) != 1)} ({names}): objects without "
                 "a manifest, which no call replays", RuntimeWarning)  # fmt: skip
        if not dry_run and not tries.untried:  # the store given up on: nothing more asked of it
            target.sweep_temp(TEMP_AGE)
    if tries.failed:
        raise GcFailed(target.url, removed, tries.failed, tries.untried)
    return removed


def leftovers(store: Store, keys: list[str]) -> list[RunInfo]:
    """The run folders that hold objects but no manifest in the listing
    `keys`: what a fork (which writes its manifest last) or a removal (which
    deletes it first) killed half way left. No listing shows them, no call
    replays them; removed under the run's lease (a fork still copying holds
    it), and only if there is still no manifest then: a run started since
    the listing (its manifest not listed yet) is kept."""
    parts = [k.split("/", 2) for k in keys if k.count("/") >= 2]
    found = {(w, r) for w, r, name in parts if is_run_object(name) and more_than_a_lease(name)}
    return [
        RunInfo(w, r, "leftover", "", 0.0, 0.0, 0, None, _store=store)
        for w, r in sorted(found - set(store.manifest_keys(keys)))
        if w != SHARED_BLOBS[0] and _named(w, r)
    ]


def _named(workflow: str, run_id: str) -> bool:
    try:
        check_names(workflow, run_id)
    except ConfigurationError:
        return False  # no run's folder (a temp file's, another program's)
    return True


_UNREADABLE = ("corrupt", "unverified", "newer")
# The statuses gc removes none of, even named, and why.
_NEVER = {
    "running": "a live process holds it: `durable cancel RUN` or durable.cancel() ends it first",
    "unreadable": "the store failed to read it, and the next read may succeed",
}


def _kept(infos: list[RunInfo], keep_last: int) -> set[str]:
    """The run ids `keep_last` keeps of one workflow's runs (newest first):
    up to and including its keep_last-th completed run. A run that did
    not complete never takes a completed run's place (issue 14)."""
    if keep_last == 0:
        return set()
    completed = 0
    for k, info in enumerate(infos):
        completed += info.status == "completed"
        if completed == keep_last:
            return {i.run_id for i in infos[: k + 1]}
    return {i.run_id for i in infos}


def _statuses(status: object) -> set[str]:
    try:
        found: set[str] = set(status)  # type: ignore[call-overload]
    except TypeError:
        raise ConfigurationError(
            f"gc(status=...) takes a run status or a collection of them, not {status!r}"
        ) from None
    return found


def _matches(status: str, wanted: set[str] | None) -> bool:
    if status in ("running", "unreadable"):
        return False
    if wanted is None:
        # Any status, but not a run whose age and state are unknown, nor
        # one waiting for an answer (a person's decision may take weeks).
        return status not in _UNREADABLE and status != "suspended"
    return status in wanted


def keep_newest(store: Store, workflow: str, keep_last: int) -> list[RunInfo]:
    """`keep_last=N` on the decorator: after a run completes, drop the oldest
    completed runs of that workflow beyond the N newest."""
    return gc(store, keep_last=keep_last, status="completed", workflow=workflow)


class _Tries:
    """Each removal gc tries: a run the store fails to remove stops no other
    (noted in `failed`), until GIVE_UP in a row fail of one cause; the runs
    after those are noted in `untried`, not tried."""

    def __init__(self) -> None:
        self.failed: dict[str, StorageError] = {}
        self.untried: list[RunInfo] = []
        self._cause, self._streak = "", 0

    def delete(self, store: Store, info: RunInfo, *, leftover: bool = False) -> bool:
        if self._streak >= GIVE_UP:
            self.untried.append(info)
            return False
        name = f"{info.workflow}/{info.run_id}"
        try:
            if leftover:
                gone = delete.delete_run(store, info.workflow, info.run_id, leftover=True)
            else:
                gone = delete.delete_run(store, info.workflow, info.run_id, as_listed=info)
        except LeaseLostError as e:
            # Taken over half removed (this process stalled past the lease): not
            # "removed", and not the quiet skip of a run that was never touched.
            warn(f"gc: {e}", RuntimeWarning)
            gone = False
        except (RunLockedError, RunNotFoundError):
            gone = False  # started or removed by someone else meanwhile
        except StorageError as e:
            self.failed[name] = e
            # One cause: the same advice (network, permissions), or the same
            # words once this run's name is taken out of them.
            cause = e.advice or e.cause.replace(name, "")
            self._cause, self._streak = cause, self._streak + 1 if cause == self._cause else 1
            return False
        self._streak = 0  # the store answered: the failures before were not one outage
        return gone


def _by_workflow(infos: list[RunInfo]) -> list[list[RunInfo]]:
    groups: dict[str, list[RunInfo]] = {}
    for info in infos:
        groups.setdefault(info.workflow, []).append(info)
    return list(groups.values())


def _seconds(value: float | datetime.timedelta) -> float:
    if not isinstance(value, (int, float, datetime.timedelta)) or isinstance(value, bool):
        shown = f"{value!r} (the command line's form)" if isinstance(value, str) else repr(value)
        raise ConfigurationError(
            f"older_than= takes seconds (a number) or a datetime.timedelta, not {shown}: "
            "older_than=datetime.timedelta(days=7)"
        )
    seconds = value.total_seconds() if isinstance(value, datetime.timedelta) else float(value)
    if seconds < 0:
        raise ConfigurationError(f"older_than must not be negative, not {value}")
    return seconds
