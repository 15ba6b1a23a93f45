"""A workflow's default name, and the name the same function has when its
file is started the other way (as a script, or imported as a module)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._fingerprint.reach import default_name, script_name
from .._storage.base import Store
from .._storage.keys import check_names

if TYPE_CHECKING:  # run management loads when a workflow's runs are asked for
    from .._manage.runs import RunInfo


def default_workflow_name(fn: Callable[..., Any]) -> str:
    """The qualified name; for a script's own workflows prefixed with the
    script's file name, so that two scripts sharing a store never share
    runs (`flow.main` and `other.main`). Steps need no prefix: their names
    only have to differ within one workflow, and their fingerprints carry
    the full identity."""
    script = script_name(fn)
    return default_name(fn) if script is None else f"{script}.{default_name(fn)}"


def script_twin(fn: Callable[..., Any]) -> str | None:
    """The name `python flow.py` gives a workflow of module `flow` (or
    `pkg.flow`) imported: `flow.wf` for the import's `wf`. A notebook or a
    REPL that imports the script's module lists the script's runs by it.
    None for a script's own workflow: its import name (`wf`) is every
    notebook's too, not only this file's."""
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    if module is None or module.__name__ in ("__main__", "__mp_main__"):
        return None
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file.endswith(".py"):
        return None
    stem = os.path.splitext(os.path.basename(file))[0]
    return None if stem == "__init__" else f"{stem}.{default_name(fn)}"


def twin_runs(store: Store, name: str, twin: str | None) -> list[RunInfo]:
    """The runs of workflow `name`, newest first, and those of its `twin`
    (`script_twin`): each run's `workflow` says which way it was started,
    the way to resume it (the other is refused as renamed code)."""
    from .._manage.listed import listed

    found = listed(store, name) + ([] if twin in (None, name) else listed(store, twin))
    return sorted(found, key=lambda i: (i.updated, i.run_id), reverse=True)


def holder(store: Store, name: str, twin: str | None, run_id: str) -> str:
    """The name to read run `run_id` under: the twin's when only it has
    the run (a look at a run `twin_runs` listed, which changes nothing)."""
    check_names(name, run_id)  # before a read: `wf.history(info)` is the caller's mistake, no store's
    if twin is None or store.peek_manifest(name, run_id) is not None:
        return name
    return twin if store.peek_manifest(twin, run_id) is not None else name
