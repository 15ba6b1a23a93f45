"""A refusal of a run whose id the workflow's `run_id=` function made
(`run_id=lambda day, n: f"report-{day}"`): it says so, and from what. The
refusal named only the id, which the user never typed, and advised "use
another run id" as if they had chosen it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from .._valuetext import preview_of
from ..errors import DefinitionChangedError

T = TypeVar("T")


def chosen(
    option: str | Callable[..., str] | None,
    run_id: str,
    given: inspect.BoundArguments | None,
    plan: Generator[Any, Any, T],
) -> Generator[Any, Any, T]:
    """`plan`, its `DefinitionChangedError` told that `run_id=` made the id."""
    if not callable(option) or given is None:
        return (yield from plan)
    try:
        return (yield from plan)
    except DefinitionChangedError as e:
        e.args = (f"{e}\n{made_note(option, run_id, given, e)}",)
        raise


def made_note(
    option: Callable[..., str],
    run_id: str,
    given: inspect.BoundArguments,
    e: DefinitionChangedError,
    own_id: str = "with_options(run_id='...')",
) -> str:
    """What the refusal says of the id: `own_id` is how to give one (the
    command line's `--run-id ID`)."""
    shown = ", ".join(f"{k}={preview_of(v, 40)}" for k, v in given.arguments.items())
    name = getattr(option, "__name__", "")
    made = f"The run id {run_id!r} was not given: the workflow's run_id= function"
    made += "" if name in ("", "<lambda>") else f" {name}"
    made += f" made it from this call's arguments ({shown})."
    differ = sorted(e.changed_arguments) if e.changed_arguments else []
    if differ or (e.position is not None and e.old_fingerprint == e.new_fingerprint):
        what = ", ".join(differ) or "An argument"
        made += (f" {what} differ{'s' if len(differ) < 2 else ''} from the run's, yet the id is "
                 "the same: make run_id= read it too, so that such calls are runs of their own, "
                 f"or give this call its own id with {own_id}.")  # fmt: skip
    return made
