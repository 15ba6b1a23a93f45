"""Reads of runs that a listing and a look at one run share: a store's
failure for one run names that run and fails only it. A fork's failure
says to run it again (`forking`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from .._errortext import shell_words
from .._storage.base import Store
from .._storage.localerrors import AGAIN
from .._storage.manifest import HEAD, summary_size
from ..errors import StorageError


@contextmanager
def reading_run(workflow: str, run_id: str) -> Iterator[None]:
    """Reads of one run: a store's failure names the run and what to do."""
    try:
        yield
    except StorageError as e:
        if e.cause.startswith("run "):  # named already (a read inside another)
            raise
        advice = f"{e.advice}; once" if e.advice else "Once"
        raise StorageError(
            e.url, f"run {run_id!r} of workflow {workflow!r} could not be read ({e.cause})",
            f"{advice} the store reads it, `durable {shell_words('show', run_id)}` shows it "
            "(nothing in the run was changed)",
        ) from e  # fmt: skip


P = ParamSpec("P")
R = TypeVar("R")


def forking(fork: Callable[P, R]) -> Callable[P, R]:
    """A fork that failed on a fault the user can fix (a full disk) kept
    nothing of itself: once fixed, it is run again, as a run is resumed by
    calling it again (`localerrors.ADVICE`)."""

    @functools.wraps(fork)
    def again(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fork(*args, **kwargs)
        except StorageError as e:
            if AGAIN not in e.advice:
                raise
            how = "run the fork again (the same command or call: nothing of this one was kept)"
            raise StorageError(e.url, e.cause, e.advice.replace(AGAIN, how)) from e

    return again


Head = bytes | StorageError


def summaries(store: Store, found: dict[tuple[str, str], str]) -> dict[tuple[str, str], Head]:
    """The leading bytes of each run's manifest that hold its summary: a
    listing never reads a run's arguments or result (issue 11, item 8). A
    batch the store fails is read again one run at a time: the error is only
    the runs' it failed for."""
    try:
        return dict(_heads(store, found))
    except StorageError:
        out: dict[tuple[str, str], Head] = {}
        for run, key in found.items():
            try:
                out.update(_heads(store, {run: key}))
            except StorageError as e:
                out[run] = e
        return out


def _heads(store: Store, found: dict[tuple[str, str], str]) -> dict[tuple[str, str], bytes]:
    heads = store.get_heads(list(found.values()), HEAD)
    out: dict[tuple[str, str], bytes] = {}
    for run, key in found.items():
        head = heads.get(key)
        if head is None:  # replaced since the listing (a newer generation)
            head = store.load_manifest(*run)
        elif summary_size(head) > len(head) == HEAD:  # a long summary: read exactly it
            head = store.get_heads([key], summary_size(head)).get(key)
        if head is not None:
            out[run] = head
    return out


def more_than_a_lease(name: str) -> bool:
    """Whether a name below a run's prefix is more than its lease's: a
    lease alone is no run, nor what a removal cut short left. A removal
    that took the run over from a killed holder keeps its released marker
    (`ObjectLease.release`), and a new run takes it over at once."""
    return not name.startswith("lease/")


def run_objects(store: Store, workflow: str, run_id: str) -> list[str]:
    """The run's keys, but a lease alone (`more_than_a_lease`)."""
    prefix = f"{workflow}/{run_id}/"
    return [k for k in store.list(prefix) if more_than_a_lease(k[len(prefix):])]
