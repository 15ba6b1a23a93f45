"""What `durable run` says of a restart: the command that restarts a run
with the arguments it recorded, and the recorded arguments a restart drops
(a restart takes only the --vars given and the defaults)."""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from .._api.workflow import Workflow, bind_call
from .._errortext import id_word
from .._manage.runs import run_info
from .._storage.base import Store
from ..errors import DurableError
from .common import rerun
from .values import as_vars, by_annotation


def restart_command(
    args: argparse.Namespace,
    store: Store,
    wf: Workflow[Any, Any],
    run_id: str,
    *,
    only: bool = False,
    given: dict[str, Any] | None = None,
) -> str:
    """The command that restarts a run with the arguments it has recorded
    (a restart takes only the --vars given); with `only`, just those. The
    --vars `given` to this command win: they are what the user meant now."""
    try:
        recorded = run_info(store, wf.name, run_id).arguments
        read = partial(by_annotation, wf.name, wf.fn)
        flags = as_vars(recorded if only else {**recorded, **(given or {})}, read)
    except DurableError:  # unreadable: still the command, to fill in
        flags = "--var NAME=VALUE"
    if only:
        return flags or "(none)"
    return f"{rerun(args, run_id)} --restart {flags}".rstrip()  # no --var: no space pasted along


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
