"""What `durable` says when it refuses a run whose code, arguments or
artifacts changed: why, and each way out as a command to type."""

from __future__ import annotations

import argparse
import sys
import traceback

from .._errortext import id_word, shell_words
from ..errors import ArtifactMissingError, DefinitionChangedError
from .common import advised, command, rerun


def refused_change(e: DefinitionChangedError, args: argparse.Namespace) -> int:
    if args.debug:
        traceback.print_exception(type(e), e, e.__traceback__)
    # The ways out as commands, for the run `durable run` ran (not a child run of it).
    again = rerun(args, e.run_id) if getattr(args, "running", None) == (e.workflow, e.run_id) else None
    given = "".join(f" --var {shell_words(v)}" for v in getattr(args, "var", None) or [])
    answers = _answers(args)
    changed = ", ".join(f"{k}: {v}" for k, v in sorted(e.changed_steps.items()))
    made = getattr(args, "made_by", None) if again is not None else None  # `run._implied_run_id`
    made_by = f"  {made(e)}\n" if made is not None else ""
    if e.changed_arguments:  # a completed run, called with other arguments
        differ = ", ".join(f"{k}: {v}" for k, v in sorted(e.changed_arguments.items()))
        print(
            f"durable: refused: run {id_word(e.run_id)} of {e.workflow} completed with other "
            f"arguments ({differ}); its result was not returned and nothing was executed.\n"
            f"  read the result it completed with: {command(args)} {shell_words('show', e.run_id)}\n"
            + (
                f"  re-run from the first step whose arguments differ: {again} --on-change "
                f"rerun{given}\n  or start fresh with these arguments: {args.restart_with(kept=False)}"
                f"{answers}\n  or use another --run-id"
                if again else
                "  start fresh with these arguments with --restart, use another --run-id, or "
                "re-run from the first step whose arguments differ with --on-change rerun "
                "(or DURABLE_ON_CHANGE=rerun)"
            ) + f"\n{made_by}".rstrip("\n"),
            file=sys.stderr,
        )  # fmt: skip
        return 2
    if e.position is None:  # the definition as a whole differs from the recorded one
        text = (
            f"was recorded with definition {e.old_fingerprint}; the code now has "
            f"{e.new_fingerprint} (changed: {changed or 'the workflow body'}). "
            "Nothing was executed."
        )
    else:  # same definition, but one call no longer matches its record
        text = (
            f"the record at position {e.position} no longer matches the call made there now "
            f"({changed or 'its arguments or its step code changed'}). Nothing from "
            f"position {e.position} on was executed."
        )
    print(f"durable: refused: run {id_word(e.run_id)} of {e.workflow}: {text}\n{made_by}", file=sys.stderr, end="")
    if e.note:  # the change may be durable's own (an upgrade), not the code's
        print(f"  {advised(e.note, command(args))}", file=sys.stderr)
    if again is not None:
        print(
            f"  re-run from the first change: {again} --resume --on-change rerun{given}{answers}\n"
            f"  or continue with the old records: {again} --resume --rebase-checkpoint{given}{answers}\n"
            f"  or start fresh: {args.restart_with()}{answers}\n"
            "  (DURABLE_ON_CHANGE=rerun in the environment re-runs what changed in every run)",
            file=sys.stderr,
        )
        return 2
    print(
        "  start fresh with --restart, continue with the old records with "
        "--rebase-checkpoint, or re-run from the first change with --on-change rerun "
        "(or DURABLE_ON_CHANGE=rerun in the environment)",
        file=sys.stderr,
    )
    return 2


def refused_artifact(e: ArtifactMissingError, args: argparse.Namespace) -> int:
    if args.debug:
        traceback.print_exception(type(e), e, e.__traceback__)
    print(
        f"durable: refused: run {id_word(e.run_id)}: the artifact {e.url} of step {e.step} "
        f"(position {e.position}) is {e.state}, and the step has artifacts_policy='refuse' "
        "so it was not run again; nothing after it ran.",
        file=sys.stderr,
    )
    fresh = restart_line(e, args) or "  or start fresh with --restart"
    print(f"  restore the artifact, then: {rerun(args, e.run_id)} --resume\n{fresh}", file=sys.stderr)
    return 2


def restart_line(e: Exception, args: argparse.Namespace) -> str | None:
    """`  start fresh: durable ... --restart ...` for a refusal of the run
    `durable run` ran that advises a restart: the whole command, with the
    run's arguments and the --input given (the message names the flag only)."""
    running = getattr(args, "running", None)
    if running is None or getattr(e, "run_id", None) != running[1] or "restart=True" not in str(e):
        return None
    return f"  start fresh: {args.restart_with()}{_answers(args)}"


def _answers(args: argparse.Namespace) -> str:
    """The --input flags given, for a command that must keep them."""
    return "".join(f" --input {shell_words(v)}" for v in getattr(args, "input", None) or [])

