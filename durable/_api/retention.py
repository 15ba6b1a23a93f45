"""`keep_last=N` on the decorator: once a run completes (its lease still
held), the oldest completed runs of that workflow beyond the N newest go.
Run management does the removing; the run core never imports it."""

from __future__ import annotations

from .._core.run import Options
from .._errortext import warn
from .._storage.base import Store
from ..errors import DurableError


def prune(store: Store, workflow: str, options: Options) -> None:
    if options.keep_last is None:
        return
    from .._manage.cleanup import keep_newest  # run management, loaded for keep_last only

    try:
        keep_newest(store, workflow, options.keep_last)
    except DurableError as e:  # the run itself completed; cleanup can wait
        warn(f"keep_last={options.keep_last}: old runs not removed: {e}")
