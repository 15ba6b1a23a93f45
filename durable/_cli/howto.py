"""The line a user pastes to go on with a run: `durable run` of the script
and function its manifest names, with the run's id and recorded arguments,
for `durable show`, `durable fork` and a command guessed from the API's
words (`durable resume r1`: `guessed`). A line that names `FILE.py:FUNCTION` or `RUN`
fails when pasted: what is not known is said in words instead."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from .._errortext import asked_for, id_word, shell_words, to_fill
from .._manage import runs
from .._storage.base import Store
from ..errors import DurableError
from .values import as_vars, not_given

Reader = Callable[[list[str]], dict[str, Any]]  # --var words to values: parse_vars, by_annotation


def target(store: Store, workflow: str, run_id: str) -> str | None:
    """`durable run`'s target for a run, from the identity its body was
    fingerprinted under (`reach.identity`): `flow.py:main` for a function of
    the script flow.py (identified as `flow.main`, or `flow.py:main`); "" for a notebook's or an interactive session's
    (`__main__` without a file: no script defines it, `durable run` cannot
    load it); `pkg.flows:etl` for a module's function `etl` (the workflow
    named `etl`); None when not told (a `name=`, a method, a damaged manifest)."""
    try:
        # The keys `definition.BODY_KEY` and `fingerprint.IDENTITY`, which
        # `show` does not import (it never loads the engine).
        body = runs.read_manifest(store, workflow, run_id).step_parts.get("(workflow body)")
    except DurableError:
        return None
    identity = body.get("identity") if isinstance(body, dict) else None
    if not isinstance(identity, str):
        return None
    if identity.startswith("__main__.") and identity[9:].isidentifier():
        return ""
    file, colon, function = identity.partition(":")
    if colon:  # a script's, identified by its file (one no import names, or made before)
        return identity if file.endswith(".py") and function.isidentifier() else None
    module, _, function = identity.rpartition(".")
    if identity == workflow and module.isidentifier() and function.isidentifier():
        return f"{module}.py:{function}"  # a script's, identified as `import flow` would (`flow.wf`)
    # A module's workflow is named by its qualified name (started as `python -m pkg.flow`,
    # by the file's name too: `flow.wf`): the module is the rest.
    function = workflow.rpartition(".")[2]
    module = identity.removesuffix(f".{function}")
    parts = module.split(".")
    named = function.isidentifier() and module != identity and all(p.isidentifier() for p in parts)
    return f"{module}:{function}" if named else None


def answer_flags(info: runs.RunInfo | None, reason: str | None, waiting: str | None) -> str:
    """The flags that answer a suspended run (`info`: the run to resume, the
    top one of a child run that stopped), as `durable run` and `durable
    show` print them: `--input NAME=VALUE` of the wait_for it stopped at,
    else `--var NAME=VALUE` of each parameter its suspend() asks for
    (`asked`), none for a workflow without parameters."""
    if waiting is not None:
        return to_fill("--input", [waiting])
    asks = asked(info, reason)
    return "" if asks == [] else to_fill("--var", asks or ())


def asked(info: runs.RunInfo | None, reason: str | None) -> list[str] | None:
    """The parameters a resume of a run stopped by suspend() is to give:
    those it asks for (`asked_for`); [] when its workflow takes none (a
    `--var NAME=VALUE` printed there is refused when pasted); None when
    that cannot be told (arguments not readable here: a pickle refused)."""
    try:
        recorded = None if info is None else info.arguments
    except DurableError:
        return None
    if recorded is None:
        return None
    return asked_for(reason or "", recorded) or (None if recorded else [])


def in_session(workflow: str, run_id: str, given: str = "") -> str:
    """Where and how a run of a workflow a notebook or session defines goes on."""
    fn = workflow.rpartition(".")[2]
    return f"in the notebook or session that defines {fn} (no script does, for durable run): {fn}.resume({run_id!r}{given})"


def run_line(durable: str, found: str | None, workflow: str, run_id: str, flags: str) -> str:
    """`durable run TARGET --run-id RUN FLAGS` for a run whose target is
    `found` (`target`); when not known, or its script is not in this folder
    (the manifest names no folder), the same in words."""
    script = (found or "").partition(":")[0] if ".py:" in (found or "") else ""
    moved = _below(script) if found and script and not os.path.isfile(script) else None
    if found and moved:  # `python jobs/flow.py` started it: the manifest names `flow.py` alone
        found, script = f"{moved}{found[len(script):]}", moved
    if found and (not script or os.path.isfile(script)):
        return f"{durable} {shell_words('run', found, '--run-id', run_id)} {flags}"
    if found:  # the manifest knows a script's name, not its folder (`durable run sub/flow.py:main`)
        # Run from another folder, or renamed since: a renamed script's function
        # is another workflow (`flow2.gate`), which has no such run.
        return (f"`{durable} run` of {found} with {shell_words('--run-id', run_id)} {flags}; {script}, the script "
                f"the run was started from, is not in this folder: give its path from here if it is in another; "
                f"if it was renamed, rename it back to {script} first (the workflow of a renamed script is "
                f"another one, without run {id_word(run_id)})")  # fmt: skip
    return f"`{durable} run` of the script and function that define {workflow}, with {shell_words('--run-id', run_id)} {flags}"


def _below(script: str) -> str | None:
    """The one file named `script` in the folders below this one, two levels
    deep (hidden folders and virtualenvs left out): its path from here; None
    when there is none, or several (the line then says it in words)."""
    seen: list[str] = []
    for top, folders, files in os.walk("."):
        keep = top.count(os.sep) < 2
        folders[:] = [f for f in folders if keep and not f.startswith(".") and not _is_env(os.path.join(top, f))]
        seen += [os.path.join(top, script)[2:]] if top != "." and script in files else []
    return seen[0] if len(seen) == 1 else None


def _is_env(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "pyvenv.cfg")) or os.path.basename(folder) in ("__pycache__", "node_modules")


def restart_command(
    durable: str,
    store: Store,
    workflow: str,
    run_id: str,
    *,
    found: str | None = None,
    read: Reader | None = None,
    given: dict[str, Any] | None = None,
    takes: dict[str, bool] | None = None,
    kept: bool = True,
) -> str:
    """How a run starts afresh with the arguments it recorded, the `given`
    --vars winning (a restart takes only the --vars given and the defaults):
    the one builder of it, for `durable run` (a cancel, a refusal: `found`
    is its TARGET, `read` the workflow's reader of --var, `takes` its
    parameters: `restart_flags`), `durable show`,
    `cancel` and a guessed `durable restart`. In a notebook's or session's
    run, the call to make there; else the command (`run_line`)."""
    if found is None:
        found = target(store, workflow, run_id)
    if found == "":
        recorded = _recorded(store, workflow, run_id)
        return f"in the notebook or session that defines {workflow.rpartition('.')[2]}: {in_python('', workflow, run_id, recorded)}"
    values = _restart_values(store, workflow, run_id, given, takes, kept)
    # A tuple or an object: no --var gives it, `--var NAME=VALUE` is refused whatever is typed.
    if values is not None and (untold := not_given(values, read)):
        url = store.url if "--store" in durable else None  # the store the command was given
        return (f"from Python ({', '.join(untold)}: no --var gives {'it' if len(untold) == 1 else 'them'} as "
                f"recorded, --var takes JSON): {in_python(found, workflow, run_id, values, url)}")  # fmt: skip
    flags = restart_flags(store, workflow, run_id, read, given, takes, kept)
    return run_line(durable, found, workflow, run_id, f"--restart {flags}".rstrip())  # no --var: no space pasted


def in_python(
    found: str | None, workflow: str, run_id: str, values: dict[str, Any] | None, url: str | None = None
) -> str:
    """The Python call that restarts a run with `values` (None: not known),
    importing its workflow from the module `found` (`target`) names; in the
    store `url` when the command was given one (--store)."""
    fn = workflow.rpartition(".")[2]
    module = (found or "").partition(":")[0].removesuffix(".py")
    where = f"from {module} import {fn}; " if module and all(p.isidentifier() for p in module.split(".")) else (
        "" if found == "" else f"with {fn} imported from {module + '.py' if module else 'the script that defines it'}: ")
    call = "NAME=VALUE, ..." if values is None else ", ".join(f"{k}={v!r}" for k, v in values.items())
    store = "" if url is None else f", store={url!r}"
    return f"{where}{fn}.with_options(run_id={run_id!r}{store}, restart=True)({call})"


def restart_flags(
    store: Store,
    workflow: str,
    run_id: str,
    read: Reader | None = None,
    given: dict[str, Any] | None = None,
    takes: dict[str, bool] | None = None,
    kept: bool = True,
) -> str:
    """The --var flags of a restart with the run's recorded arguments and
    the `given` ones (`as_vars`: a value --var does not give back as itself
    stays NAME=VALUE); `--var NAME=VALUE` to fill in when they cannot be
    read: a bare --restart would start it with the defaults instead. With
    the parameters the workflow `takes` now (name: whether it is required),
    of those only, and NAME=VALUE of a required one not recorded: a
    parameter renamed since the run started was refused when pasted. Not
    `kept`: the `given` ones only (a refusal of other arguments)."""
    values = _restart_values(store, workflow, run_id, given, takes, kept)
    if values is None:
        return to_fill("--var")
    flags = as_vars(values, read)
    missing = [n for n, required in (takes or {}).items() if required and n not in values]
    return f"{flags} {to_fill('--var', missing)}".strip() if missing else flags


def _restart_values(
    store: Store, workflow: str, run_id: str, given: dict[str, Any] | None, takes: dict[str, bool] | None, kept: bool
) -> dict[str, Any] | None:
    """The arguments a restart gives (`restart_flags`); None when not known."""
    was = _recorded(store, workflow, run_id) if kept else {}
    if was is None:
        return None
    values = {**was, **(given or {})}
    return values if takes is None else {k: v for k, v in values.items() if k in takes}


def _recorded(store: Store, workflow: str, run_id: str) -> dict[str, Any] | None:
    """The arguments a run recorded; None when they cannot be read (a pickle
    refused, a damaged manifest)."""
    try:
        return runs.run_info(store, workflow, run_id).arguments
    except DurableError:
        return None


def was_killed(info: runs.RunInfo) -> bool:
    """Whether a run failed with `RunKilledError`, which a --resume meets again."""
    return info.status == "failed" and (info.error or "").startswith("RunKilledError:")


def killed_ways(durable: str, store: Store, workflow: str, run_id: str, times: int | None = None) -> list[str]:
    """What a run failed with `RunKilledError` (its process died `times` in
    a row at one step; None: as its manifest counts) goes on with, for
    `durable run` and `durable show`: a plain --resume is refused again.
    The error's own ways out: a larger DURABLE_MAX_RECOVERY_ATTEMPTS, the
    step changed (then resumed with --on-change rerun), a restart."""
    if times is None:
        try:  # `killed.KEY` (`show` never loads the engine): [place, place, deaths]
            kept = runs.read_manifest(store, workflow, run_id).extra.get("killed")
        except DurableError:
            kept = None
        times = kept[2] if isinstance(kept, list) and len(kept) == 3 and type(kept[2]) is int else None
    more = 2 if times is None else times + 1
    died = f"died {times} time{'s' if times != 1 else ''} in a row" if times else "died again and again"
    head = f"  its process {died} at that step: a plain --resume is refused again; the ways out:"
    found = target(store, workflow, run_id)
    restart = restart_command(durable, store, workflow, run_id, found=found)
    if found == "":
        fn = workflow.rpartition(".")[2]
        return [head, f"  after fixing the cause (memory? a kill?), one more try: os.environ['{_MAX}'] = '{more}' "
                      f"(0: no limit), then {fn}.resume({run_id!r})",
                f"  or change the step, then: {fn}.with_options(on_change='rerun').resume({run_id!r})",
                f"  or start afresh, {restart}"]  # fmt: skip
    resume = run_line(durable, found, workflow, run_id, "--resume")
    again = f"with {_MAX}={more} set: {resume}" if resume.startswith("`") else f"{_MAX}={more} {resume}"
    return [head, f"  after fixing the cause (memory? a kill?), one more try (0: no limit): {again}",
            f"  or change the step, then: {run_line(durable, found, workflow, run_id, '--resume --on-change rerun')}",
            f"  or start afresh: {restart}"]  # fmt: skip


def refused_ways(durable: str, store: Store, workflow: str, run_id: str, flags: str = "") -> list[str]:
    """What a run whose last resume was refused at its start (its code
    changed since: `RunInfo.refused`) goes on with, for `durable show`: a
    plain --resume (`flags`: its --input/--var) is refused again until the
    code is put back; the refusal's own ways out besides."""
    head = "  a plain resume is refused again while the code stays changed; the ways out:"
    found = target(store, workflow, run_id)
    restart = restart_command(durable, store, workflow, run_id, found=found)
    if found == "":
        fn = workflow.rpartition(".")[2]
        return [head, f"  put the code back, then: {fn}.resume({run_id!r})",
                f"  or re-run from the first change: {fn}.with_options(on_change='rerun').resume({run_id!r})",
                f"  or continue with the old records: {fn}.with_options(rebase=True).resume({run_id!r})",
                f"  or start afresh, {restart}"]  # fmt: skip
    line = functools.partial(run_line, durable, found, workflow, run_id)
    return [head, f"  put the code back, then: {line(('--resume ' + flags).strip())}",
            f"  or re-run from the first change: {line(('--resume --on-change rerun ' + flags).strip())}",
            f"  or continue with the old records: {line(('--resume --rebase-checkpoint ' + flags).strip())}",
            f"  or start afresh: {restart}"]  # fmt: skip


_MAX = "DURABLE_MAX_RECOVERY_ATTEMPTS"  # `killed.VARIABLE`
