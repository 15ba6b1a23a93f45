"""One recorded output by run and position (`durable.load`), read without
running any of the workflow's code."""

from __future__ import annotations

from typing import Any

from .._storage.base import Store
from .._storage.keycheck import check_names
from .._storage.keys import Position, as_position
from .._storage.keys import parse_position as parse_text
from ..errors import ConfigurationError
from .history import read_raw
from .output import output_loader
from .runs import not_found, run_info


def parse_position(position: int | str | tuple[int, ...]) -> Position | None:
    """An int (-1 for the arguments), a `StepInfo.position`, or the string
    form `durable show` prints ("3", "2.0.1"); None when it is none of them."""
    if isinstance(position, str):
        return -1 if position.strip() == "-1" else parse_text(position)
    if isinstance(position, int) and not isinstance(position, bool):
        return -1 if position == -1 else as_position(position)
    return as_position(list(position)) if isinstance(position, tuple) else None


def load_output(
    store: Store, workflow: str, run_id: str, position: int | str | tuple[int, ...]
) -> Any:
    """The output recorded at `position` (-1: the run's arguments), decoded
    under the store's pickle and signing policy; None when no finished
    record with a value is there (never run, failed, pending, persist=False)
    and when the step returned None: `history()` tells those apart."""
    pos = parse_position(position)
    if pos is None:
        raise ConfigurationError(
            f"position {position!r} is not a position: give an int (0, 1, ...; -1 for the "
            "arguments) or the form `durable show` prints (\"3\", \"2.0.1\")"
        )
    check_names(workflow, run_id)
    if pos == -1:
        return run_info(store, workflow, run_id).arguments
    if store.load_manifest(workflow, run_id) is None:
        raise not_found(store, workflow, run_id)
    rec = read_raw(store, workflow, run_id).records.get(pos)
    load = None if rec is None else output_loader(store, workflow, run_id, rec)
    return None if load is None else load()


