"""What every `durable` command shares: the usage error, which errors are
refusals (exit code 2), and how an error is printed."""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import traceback
import warnings
from collections.abc import Container, Iterator, Sequence

from .._errortext import PACKAGE, and_list, id_word, program, shell_words
from .._manage.missing import not_the_commands as not_the_commands
from .._manage.owners import SeveralWorkflows
from .._manage.runs import list_runs, namesakes, no_folder
from .._storage.base import Store
from ..errors import (
    ArtifactMissingError,
    DefinitionChangedError,
    DurableError,
    NondeterminismError,
    RunLockedError,
    RunNotFoundError,
)


@contextlib.contextmanager
def own_warnings() -> Iterator[None]:
    """A warning located in durable's files (`_errortext.warn`: about the
    run as a whole, with no line of the user's) is the command's to say, as
    `durable: warning: ...`; one at a line of the user's keeps that line."""
    plain = warnings.formatwarning

    def text(
        message: Warning | str, category: type[Warning], filename: str, lineno: int,
        line: str | None = None,
    ) -> str:  # fmt: skip
        said = advised(str(message))
        if filename.startswith(PACKAGE):  # one said `durable: ...` for a Python caller: once
            return f"durable: warning: {said.removeprefix('durable: ')}\n"
        return plain(said, category, filename, lineno, line)

    warnings.formatwarning = text
    try:
        yield
    finally:
        warnings.formatwarning = plain


def command(args: argparse.Namespace) -> str:
    """`durable` as a line of advice starts it: with the --store this command
    was given, so that the line typed as printed finds the same run (without
    it, $DURABLE_STORE or ./.durable said "no run")."""
    store = getattr(args, "store", None)
    durable = program()
    return durable if store is None else f"{durable} {shell_words('--store', store)}"


def rerun(args: argparse.Namespace, run_id: str) -> str:
    """`durable run TARGET --run-id RUN` as a line of advice starts it, each
    a word of the shell: a workflow file in `My Drive/` was split in two."""
    target = getattr(args, "target", None) or "FILE.py:WORKFLOW"
    return f"{command(args)} {shell_words('run', target, '--run-id', run_id)}"


def not_there(store: Store) -> str:
    """` in URL: there is no such folder...` when a local store's folder is
    not there, else "": an empty listing or a prune that removed nothing
    reads the same as a typo in --store otherwise."""
    missing = no_folder(store)
    return f" in {store.url}: {missing}" if missing else ""


def note(text: str) -> None:
    """A note of the command about what it found nothing of, or found wrong:
    in its voice (`durable: ...`), as its errors and warnings are. A report
    of what it did (removed, wrote, cancelled, a step executed) is its
    output, and stays plain."""
    print(f"durable: {text}", file=sys.stderr)


def nothing_there(store: Store) -> int:
    """The exit of a command that found nothing to list, recover or remove:
    2 when the local store's folder is not there (a typo in --store, which a
    script must not take for an empty store; `show` of a run there exits 2
    too), else 0."""
    return 2 if no_folder(store) else 0


class UsageError(DurableError):
    """Bad command line input; exit code 2."""


_REFUSALS = (DefinitionChangedError, NondeterminismError, RunLockedError, RunNotFoundError)


def is_refusal(e: BaseException, run_id: str | None = None) -> bool:
    """Errors that leave the run as it was: nothing to fix in the code's
    logic, the run is resumable as soon as the condition is gone. One about
    another run (a workflow called inside this one) is that run's business."""
    if isinstance(e, ArtifactMissingError):
        refused = e.state != "not produced"  # that one is the step's own failure
    else:
        refused = isinstance(e, _REFUSALS)
    return refused and (run_id is None or getattr(e, "run_id", run_id) == run_id)


# Errors are written for Python callers; on the command line the same advice
# names the flags (`--wait SECONDS`, not `with_options(wait=SECONDS)`). Each
# phrase names one option (its argparse dest): a command that has it gets the
# flag, any other command the advice without it (`show` has no --resume).
_FLAGS: dict[str, tuple[str, str, str]] = {
    ", or pass with_options(wait=SECONDS) to wait for the lease": (
        "wait", ", or run again with --wait SECONDS", ", then run this command again"),
    " or call the workflow without resume() to start it": (
        "resume", " or run it without --resume to start it", ""),
    "restart=True (durable run --restart)": ("restart", "--restart", "`durable run --restart`"),
    "start fresh with restart=True": (
        "restart", "start fresh with --restart", "start fresh with `durable run --restart`"),
    "(new_run_id=, durable fork --new-run-id)": (
        "new_run_id", "(--new-run-id)", "(`durable fork --new-run-id`)"),
    "(at=, durable fork --at)": ("at", "(--at)", "(`durable fork --at`)"),
    "wait longer with with_options(wait=SECONDS)": (
        "wait", "run again with a longer --wait SECONDS", "run this command again later"),
}  # fmt: skip


def in_flags(text: str, options: Container[str] | None = None) -> str:
    """An error's message as a command with these options (argparse dests;
    None: every option, as `durable run` and `durable fork` together) says it."""
    for python, (option, flag, without) in _FLAGS.items():
        has = options is None or option in options
        text = text.replace(python, flag if has else without)
    return text


def print_error(
    exc: BaseException, debug: bool, code: int, *, options: Container[str] = (),
    durable: str | None = None, typed: Sequence[str] | None = None, others: Container[str] = (),
    about: str = "",
) -> int:
    """Print an error as a command with these options (argparse dests)
    words its advice, its `durable ...` commands started as `durable`
    (command(), else the words that started the tool) is; exit code `code`.
    `typed`: the command line (without the run ids `others`), which a run id
    of several workflows is printed again with each `--workflow` of.
    `about`: what failed, when the error does not say (`gc`: the run it
    could not remove, one of several)."""
    if debug:
        traceback.print_exception(type(exc), exc, exc.__traceback__)
    text = advised(in_flags(str(exc), options), durable or program())
    lines = text.strip().splitlines() or [type(exc).__name__]
    print(f"durable: {about}{lines[0]}", file=sys.stderr)
    if len(lines) > 1:
        print(f"  {lines[-1].strip()}", file=sys.stderr)
    if isinstance(exc, SeveralWorkflows) and typed is not None:
        # The command typed, of this run id only (`rm a b`), with each --workflow: to paste.
        words = [w for w in typed if w == exc.run_id or w not in others]
        for workflow in exc.workflows:
            print(f"  {program()} {shell_words(*words, '--workflow', workflow)}", file=sys.stderr)
    return code


# A command a message or a help text names: `durable runs wf`, (durable fork
# RUN --at 3), "resume it with durable run ...", "only durable run --restart"
# (not durable.configure(), nor the `-m durable` or `bin/durable` a line
# already starts with).
_ADVISED = re.compile(
    r"(?<![\w/.<$-])(?<!-m )([`(]?)durable (?=(?:run|runs|show|rm|gc|fork|cancel|recover|cache|COMMAND)\b|(--store))"
)


def advised(text: str, durable: str | None = None) -> str:
    """A text whose `durable ...` commands start as the tool was started
    (`program()`): a command quoted or in brackets as `durable` (command(),
    with the --store given) when given, one in prose or with a --store of
    its own as the tool alone."""
    return _ADVISED.sub(lambda m: f"{m[1]}{durable if m[1] and durable and not m[2] else program()} ", text)


class HelpText(argparse.HelpFormatter):
    """`--help` whose prose names the commands as the tool was started
    ("resume it with python -m durable run ..."): `durable` fails pasted
    where no `durable` is on PATH."""

    def _format_text(self, text: str) -> str:
        return super()._format_text(advised(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return advised(super()._expand_help(action))

    # Wrapped at spaces only: a path in a command (`/home/me/my-env/bin/python
    # -m durable`) was cut at its hyphen.
    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap  # as argparse does: only --help needs it

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(indent + line for line in self._split_lines(text, width - len(indent)))


class RawHelpText(HelpText):
    """The same, with the description and the epilog laid out as written."""

    _fill_text = argparse.RawDescriptionHelpFormatter._fill_text


def names_a_refusal(error: str) -> bool:
    """An error reported as "Type: message" (`recover()`'s `Run.error`) that
    `is_refusal` would call one: the run was not executed and is as it was."""
    kind, _, text = error.partition(": ")
    if kind == ArtifactMissingError.__name__:  # one of a step that did not produce it fails
        return "artifacts_policy='refuse'" in text
    return kind in {c.__name__ for c in _REFUSALS}


def new_namesake(args: argparse.Namespace, store: Store, workflow: str, run_id: str) -> str | None:
    """The line a new run says when its id is the run of another workflow of
    the same script or module: most often the same function renamed, whose
    run this one does not resume (another script's run of that id is its own)."""
    module = workflow.rpartition(".")[0]
    found = namesakes(store, workflow, run_id, among=f"{module}." if module else "")
    others = sorted(w for w in found if w.rpartition(".")[0] == module)
    if not others:
        return None
    show = f"{command(args)} {shell_words('show', run_id, '--workflow', others[0])}"
    return (
        f"  a new run: run {id_word(run_id)} of {and_list(others)} is another workflow's "
        f"(a renamed function is another workflow; {show} shows it)"
    )


def renamed_runs(args: argparse.Namespace, store: Store, workflow: str) -> str:
    """What `--resume` with no run id adds when the workflow has no unfinished
    run and another workflow of its script or module has: most often the
    same function before a rename, whose runs stay under its old name."""
    module = workflow.rpartition(".")[0]
    others = [w for w in store.workflows() if w != workflow and w.rpartition(".")[0] == module]
    left = [i for w in others for i in list_runs(store, w) if i.status not in ("completed", "cancelled")]
    if not left:
        return ""
    first, target = left[0], args.target.rpartition(":")[0]
    show = f"{command(args)} {shell_words('show', first.run_id, '--workflow', first.workflow)}"
    runs = ", ".join(f"{id_word(i.run_id)} of {i.workflow} ({i.status})" for i in left[:5])
    return (
        f"\n  unfinished runs of other workflows of {module}: {runs}{', ...' * (len(left) > 5)}; "
        f"a renamed function is another workflow: to resume {id_word(first.run_id)}, run the function "
        f"under its old name, {target}:{first.workflow.rpartition('.')[2]} ({show} shows it)"
    )
