"""A workflow's default name, and the name the same function has when its
file is started the other way (as a script, or imported as a module)."""

from __future__ import annotations

import copy
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .._core.definition import BODY_KEY
from .._fingerprint.changes import IDENTITY
from .._fingerprint.reach import default_name, importable, script_name
from .._storage.base import Store
from .._storage.keycheck import check_names
from .._storage.manifest import decode_manifest
from ..errors import DurableError

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


def twin_runs(
    store: Store, name: str, twin: str | None, status: str | Iterable[str] | None = None
) -> list[RunInfo]:
    """The runs of workflow `name` (of `status`), newest first, and those of
    its `twin` (`script_twin`): each run's `workflow` says which way it was
    started, the way to resume it (the other is refused as renamed code)."""
    from .._manage.listed import listed

    status = status if status is None or isinstance(status, str) else tuple(status)  # read twice
    found = listed(store, name, status=status)
    found += [] if twin in (None, name) else listed(store, twin, status=status)
    return sorted(found, key=lambda i: (i.updated, i.run_id), reverse=True)


def holder(store: Store, name: str, twin: str | None, run_id: str) -> str:
    """The name to read run `run_id` under: the twin's when only it has
    the run (a look at a run `twin_runs` listed, which changes nothing)."""
    check_names(name, run_id)  # before a read: `wf.history(info)` is the caller's mistake, no store's
    if twin is None or store.peek_manifest(name, run_id) is not None:
        return name
    return twin if store.peek_manifest(twin, run_id) is not None else name


def twin_names(fn: Callable[..., Any], name: str | None) -> tuple[str | None, str | None]:
    """(`script_twin`, `other_way`) of a workflow; neither for a pinned `name=`."""
    return (None, None) if name else (script_twin(fn), other_way(fn))


def other_way(fn: Callable[..., Any]) -> str | None:
    """The name the same function's runs have when its file is started the
    other way: the script's (`flow.wf`) for an import of module `flow`
    (`script_twin`), the import's (`wf`) for the script when an import
    can name its module (`reach.importable`). Both ways give it one
    identity (`flow.wf`); a run is continued under the other name only when
    its manifest says it was made by that identity (`made_by`)."""
    if script_name(fn) is None:
        return script_twin(fn)
    return default_name(fn) if importable(getattr(fn, "__module__", None)) else None


def made_by(store: Store, name: str, run_id: str, identity: str) -> bool:
    """Whether run `run_id` of workflow `name` exists and its body was
    fingerprinted under `identity`. Anything else (no run, another
    function's, a manifest that cannot be read here) is no run of this
    function's: never continued under that name (fail closed)."""
    raw = store.peek_manifest(name, run_id)
    if raw is None:
        return False
    try:
        body = decode_manifest(store, name, run_id, raw, plan=False).step_parts.get(BODY_KEY)
    except DurableError:
        return False
    return isinstance(body, dict) and body.get(IDENTITY) == identity


class _Named(Protocol):
    name: str
    _other: str | None
    _identity: str

    def _run_id(self, given: inspect.BoundArguments | None) -> str: ...


W = TypeVar("W", bound=_Named)


def started_other_way(wf: W, store: Store, given: inspect.BoundArguments | None, resume_id: str | None) -> W | None:
    """For a call whose run is not found under its workflow's name: the
    workflow under its other name (`other_way`), when the run (this id,
    or the one derived under that name) is there and this function's."""
    if wf._other is None or wf._other == wf.name:
        return None
    other = copy.copy(wf)
    other.name, other._other = wf._other, None  # looked up once: never back again
    return other if made_by(store, other.name, resume_id or other._run_id(given), wf._identity) else None
