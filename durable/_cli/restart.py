"""What `durable run` says of a restart: the recorded arguments a restart
drops (a restart takes only the --vars given and the defaults). The command
that restarts a run is `howto.restart_command`'s, the one builder of it."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

from .._api.workflow import Workflow, bind_call
from .._errortext import id_word
from .._manage.runs import run_info
from .._storage.base import Store
from ..errors import DurableError
from . import howto
from .common import UsageError, command
from .typed import by_annotation


def restart_with(
    args: argparse.Namespace, store: Store, wf: Workflow[Any, Any], run_id: str, given: dict[str, Any]
) -> Callable[[], str]:
    """The command `durable run` prints to restart its run (a refusal, a
    cancel, a restart that drops arguments): `howto.restart_command`'s,
    with the TARGET as typed and the values a --var gives back read as the
    command will read them (the workflow's annotations: a date, a Path)."""
    read = partial(by_annotation, wf.name, wf.fn)
    durable, takes = command(args), parameters(wf)
    return partial(
        howto.restart_command, durable, store, wf.name, run_id, found=args.target, read=read, given=given, takes=takes
    )


def parameters(wf: Workflow[Any, Any]) -> dict[str, bool] | None:
    """The parameters a --var sets (name: whether it is required); None
    for a workflow taking `**kwargs`, whose names are any."""
    given = inspect.signature(wf.fn).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in given):
        return None
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name: p.default is p.empty for p in given if p.kind in named}


def not_recorded(
    e: UsageError, args: argparse.Namespace, store: Store, wf: Workflow[Any, Any], run_id: str
) -> UsageError:
    """A restart's --vars refused: the recorded arguments were not the cause."""
    recorded = howto.restart_flags(store, wf.name, run_id, partial(by_annotation, wf.name, wf.fn), takes=parameters(wf))
    return UsageError(
        f"{e}: --restart starts run {id_word(run_id)} afresh with the --var arguments given, "
        f"not its recorded ones: {recorded or '(none)'}\nrestart it with: {args.restart_with()}"
    )


def dropped_line(
    args: argparse.Namespace, store: Store, wf: Workflow[Any, Any], run_id: str, given: dict[str, Any]
) -> str | None:
    """What a restart of an existing run drops: the recorded arguments that
    neither a --var nor the default gives again (a restart takes only those)."""
    try:
        recorded = run_info(store, wf.name, run_id).arguments
    except DurableError:  # unreadable: the restart discards it anyway
        return None
    bound = bind_call(wf, given)
    bound.apply_defaults()
    now = bound.arguments
    dropped = {k: v for k, v in recorded.items() if k not in given and k in now and now[k] != v}
    if not dropped:
        return None
    said = ", ".join(f"{k}={v!r}" for k, v in dropped.items())
    return (
        f"  --restart starts run {id_word(run_id)} afresh with the --var given and the defaults, "
        f"not its recorded {said}; to keep them: {args.restart_with()}"
    )
