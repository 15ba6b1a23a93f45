"""`durable.load(workflow, run_id, position)`: one recorded output."""

from __future__ import annotations

import os
from typing import Any

from .._calls import at_callers
from .._manage.load import load_output
from .._storage.base import Store
from .._storage.factory import open_store
from .workflow import Workflow, store_of


@at_callers
def load(
    workflow: Workflow[Any, Any] | str,
    run_id: str,
    position: int | str | tuple[int, ...],
    *,
    store: Store | str | os.PathLike[str] | None = None,
) -> Any:
    """The output a run recorded at `position` (an int, -1 for the run's
    arguments, a `StepInfo.position`, or the string form `durable show`
    prints: "2.0.1"), or None
    when nothing with a value is recorded there or the step returned None
    (`history()` tells those apart). `workflow` is a workflow or its name;
    the store is `store`, else the workflow's, else the default."""
    if isinstance(workflow, Workflow):
        name = workflow.name
        where = store_of(workflow) if store is None else _open(store)
    else:
        name, where = workflow, _open(store)
    return load_output(where, name, run_id, position)


def _open(store: Store | str | os.PathLike[str] | None) -> Store:
    return store if isinstance(store, Store) else open_store(store)
