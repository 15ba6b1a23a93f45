"""A minimal hook on the operations of runs: `durable run` prints one line
per operation as it executes or replays. A stand-in until the event stream
(`durable.on_event`, issue 14) lands, which will replace it: the two calls
in `replay` become events and the command line a subscriber. Costs one
truthiness test per operation when nobody watches."""

from __future__ import annotations

from collections.abc import Callable

from .._storage.records import StepRecord

# (what happened: "executed", "replayed" or "cached"; run id; the record)
Watcher = Callable[[str, str, StepRecord], None]
watchers: list[Watcher] = []


def watch(callback: Watcher) -> Callable[[], None]:
    """Call `callback` for every operation of every run; returns the way to stop."""
    watchers.append(callback)
    return lambda: unwatch(callback)


def unwatch(callback: Watcher) -> None:
    if callback in watchers:
        watchers.remove(callback)


def notify(what: str, run_id: str, record: StepRecord) -> None:
    for callback in list(watchers):
        try:
            callback(what, run_id, record)
        except Exception:  # watching a run never breaks it; a failing watcher is dropped
            unwatch(callback)
