"""The `durable` command: list, show, remove, gc and fork runs, and run
workflows from a shell. Exit codes: 0 done, 1 failed, 2 refused or usage
error, 3 suspended, 4 cancelled, 128 + signal when stopped by SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import durable

from .._errortext import program, shell_words
from .._manage.runs import RUN_STATUSES
from .._settings import CHOICES
from .._storage.base import Store
from .._storage.factory import open_store
from ..errors import (
    ArtifactMissingError,
    ConfigurationError,
    DefinitionChangedError,
    DurableError,
    RunLockedError,
    RunNotFoundError,
)
from . import cache, manage
from .common import (
    HelpText,
    RawHelpText,
    UsageError,
    command,
    is_refusal,
    own_warnings,
    print_error,
)
from .environment import checked_environment
from .flagtypes import age, count, seconds, store_url, word_of
from .forkat import at_advice, position
from .guessed import GUESSES, guessed
from .refused import refused_artifact, refused_change, restart_line
from .unknown import left_out, near_command, no_value, one_run, unknown_option

_REFUSALS = (RunNotFoundError, RunLockedError, ConfigurationError)
Handler = Callable[[argparse.Namespace, Store], int]


def main(argv: Sequence[str] | None = None) -> int:
    typed = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(typed).parse_args(typed)
    args.typed = typed  # a run id of several workflows: the command again, with each --workflow
    if getattr(args, "debug", False):  # the engine's frames too, not the traceback cut for a user (`_core.shown`)
        os.environ["DURABLE_TRACEBACK"] = "full"
    with own_warnings():  # importing `durable run`'s engine may warn (a bad DURABLE_LOG)
        handler = _handler(args.handler)
    try:
        with own_warnings():
            options = checked_environment(args, runs_code=args.command in ("run", "recover"))
            if args.no_pickle:
                options["allow_pickle"] = False
            if getattr(args, "durability", None) is not None:  # run, recover, fork
                options["durability"] = args.durability
            return handler(args, open_store(args.store, **options))
    except KeyboardInterrupt:  # Ctrl-C before a run had its graceful-stop handlers
        return 130
    except BrokenPipeError:  # `durable show --json | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except DefinitionChangedError as e:
        return refused_change(e, args)
    except DurableError as e:
        if isinstance(e, ArtifactMissingError) and is_refusal(e):
            return refused_artifact(e, args)
        refused = is_refusal(e) or isinstance(e, (*_REFUSALS, UsageError))
        code = print_error(e, args.debug, 2 if refused else 1, options=vars(args), durable=command(args), typed=typed)
        if fresh := restart_line(e, args):  # a damaged record, a refusal: the whole command
            print(fresh, file=sys.stderr)
        return code
    except Exception as e:  # a bug or an environment problem: still no traceback by default
        return print_error(e, args.debug, 1)


class _Parser(argparse.ArgumentParser):
    typed: Sequence[str] = ()  # the command line, for the store a hint keeps

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpText)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        guess = re.search(r"argument (COMMAND|ACTION): invalid choice: '([^']*)'", message)
        if guess and guess[1] == "COMMAND" and guess[2] in GUESSES:
            message += f"; to do that: {guessed(guess[2], self.typed)}"
        elif guess:
            message += near_command(guess[2], self, self.typed)
        told = unknown_option(message, self.typed, self) or one_run(message, self.typed, self)
        told = told or at_advice(message, self.typed) or _dashed(message, self.typed, self._command())
        super().error(message + left_out(message, self) + told)

    def _command(self) -> argparse.ArgumentParser:
        """The parser of the command typed (the top one reports the words
        no parser took), else this one."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                typed = [w for w in self.typed if w in action.choices]
                return action.choices[typed[0]] if typed else self
        return self


def _dashed(message: str, typed: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """How to give a value that starts with `-` (a run id `-x`), which
    argparse takes for an option: "required: RUN" alone did not say."""
    options = parser._option_string_actions
    takes_run = any(a.metavar == "RUN" for a in parser._actions)
    if valued := no_value(message, typed, parser):
        return valued
    if not takes_run or not re.search(r"required: RUN|unrecognized arguments", message):
        return ""
    stray = [w for w in typed if w[:1] == "-" and w.split("=")[0] not in options and w != "--"]
    if stray:
        return f"; if {stray[0]} is a run id: {program()} {shell_words(*typed)}"
    return f"; `{program()} runs` lists the run ids" if "required: RUN" in message else ""


def _common(*, top: bool) -> _Parser:
    # Accepted before and after the command; after it, an absent flag must not
    # reset what was given before it (argparse copies sub-parser defaults).
    common = _Parser(add_help=False)
    unset: dict[str, object] = {} if top else {"default": argparse.SUPPRESS}
    common.add_argument("--store", metavar="URL", type=store_url, **unset,  # type: ignore[arg-type]
                        help="store URL or folder (default: $DURABLE_STORE, else ./.durable)")  # fmt: skip
    common.add_argument("--debug", action="store_true", help="show tracebacks", **unset)  # type: ignore[arg-type]
    common.add_argument("--no-pickle", action="store_true", **unset,  # type: ignore[arg-type]
                        help="never load a pickled value from the store (also "
                        "DURABLE_ALLOW_PICKLE=0); such values are refused or not previewed")  # fmt: skip
    return common


def build_parser(typed: Sequence[str] = ()) -> argparse.ArgumentParser:
    common = _common(top=False)
    top: list[Any] = [_common(top=True)]
    parser = _Parser(
        prog=program(), description="Manage and run durable workflows.", epilog=EPILOG,
        parents=top, formatter_class=RawHelpText,
    )  # fmt: skip
    parser.typed = typed
    parser.add_argument("--version", action="version", version=f"durable {durable.__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )

    def command(name: str, handler: Handler | str, text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=text, description=text)
        p.set_defaults(handler=handler)
        p.typed = typed
        return p

    p = command("runs", manage.cmd_runs, "list runs, newest first")
    p.epilog = ("STEPS: the run's finished operations (steps, loops, sleeps, inputs), as `durable show` "
                "counts them. A run the store fails to read (a permission error, a request that keeps "
                "failing) is listed as unreadable with the store's error, after the others; "
                "the command then exits 1 (0 when every run was read).")  # fmt: skip
    p.add_argument("workflow", nargs="?", metavar="WORKFLOW",
                   help="only this workflow's runs (its name as `durable runs` shows it)")  # fmt: skip
    p.add_argument("--status", action="append", metavar="STATUS",
                   help=f"only runs with this status (repeatable): {', '.join(RUN_STATUSES)}")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")
    p = command("show", manage.cmd_show, "show a run's steps")
    p.add_argument("run_id", metavar="RUN", help=_RUN)
    p.add_argument("--workflow", "-w", metavar="WORKFLOW", help=_WORKFLOW)
    p.add_argument("--json", action="store_true", help="print a JSON document")
    p.add_argument(
        "--values", action="store_true", help="with --json: full outputs and arguments"
    )
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML timeline")
    p = command("rm", manage.cmd_rm, "remove runs and their records (never one a live process holds)")
    p.add_argument("run_ids", metavar="RUN", nargs="+", help="the ids of the runs to remove")
    p.add_argument("--workflow", "-w", metavar="WORKFLOW", help=_WORKFLOW)
    p.add_argument("--json", action="store_true", help="print JSON: one object per RUN, removed or not")
    p = command(
        "gc", manage.cmd_gc,
        "remove old runs of every workflow; every filter given narrows what goes: "
        "--keep-last 3 --older-than 7d keeps the 3 newest completed runs (and any newer run) "
        "and, of the rest, removes "
        "those older than 7 days",
    )  # fmt: skip
    p.add_argument("--keep-last", type=count, metavar="N",
                   help="keep the N newest completed runs of each workflow and every run newer "
                   "than them; unfinished runs (a fork not yet run, a failed run) never count, "
                   "so older ones go; a suspended run (waiting for input) stays unless "
                   "--status suspended names it; look first with --dry-run")  # fmt: skip
    p.add_argument("--older-than", metavar="AGE", type=age,
                   help="remove only runs last updated longer ago: 90s, 30m, 12h, 7d, 2w")  # fmt: skip
    p.add_argument("--status", action="append", metavar="STATUS",
                   help="remove only runs with this status (repeatable): "
                   f"{', '.join(RUN_STATUSES)}")  # fmt: skip
    p.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")
    p.add_argument("--workflow", metavar="WORKFLOW", help="only the runs of this workflow")
    p.add_argument("--json", action="store_true", help="print JSON: the runs removed (or that would go)")
    p = command("fork", manage.cmd_fork, "copy a run's records before position N into a new run "
                "(nothing runs; resume it with durable run ... --run-id NEW --resume)")  # fmt: skip
    p.add_argument("run_id", metavar="RUN", help="the id of the run to copy")
    p.add_argument("--at", type=position, required=True, metavar="N",
                   help="first position to re-run, as `durable show RUN` numbers them (POS)")  # fmt: skip
    p.add_argument("--new-run-id", metavar="ID",
                   help="the new run's id (default: RUN-fork-<random>); printed on stdout")  # fmt: skip
    p.add_argument("--workflow", "-w", metavar="WORKFLOW", help=_WORKFLOW)
    p.add_argument("--json", action="store_true", help="print JSON: the new run, as `durable runs --json` lists it")
    _durability(p, code=False)
    p = command("run", "durable._cli.run:cmd_run", "run or resume a workflow: path/to/file.py:wf or package.module:wf")
    p.add_argument("target", metavar="TARGET", help=_TARGET)
    p.add_argument("--run-id", metavar="ID",
                   help="the run to start or resume (default: the workflow's run_id=, else one "
                   "derived from the arguments; with --resume, the newest unfinished run); "
                   "one that starts with -: --run-id=-x")  # fmt: skip
    p.add_argument(
        "--resume", action="store_true", help="continue an existing run (never start one)"
    )
    # Both at once: the restart won silently, and every step ran again.
    either = p.add_mutually_exclusive_group()
    either.add_argument("--restart", action="store_true", help="discard the run's records, start "
                        "fresh with the --var given and the defaults (not its recorded arguments)")  # fmt: skip
    either.add_argument("--rebase-checkpoint", action="store_true",
                        help="accept a changed definition and replay the recorded steps")  # fmt: skip
    p.add_argument("--on-change", choices=CHOICES["on_change"], type=word_of("on_change", "--on-change"),
                   help="what to do when the code or arguments changed (default: the workflow's, "
                   "else durable.configure(), else $DURABLE_ON_CHANGE, else refuse)")  # fmt: skip
    p.add_argument("--wait", type=seconds, metavar="SECONDS",
                   help="when another process holds the run, wait this long for it")  # fmt: skip
    _durability(p)
    p.add_argument("--var", action="append", metavar="KEY=VALUE",
                   help="a workflow argument (repeatable); JSON when it parses as JSON, "
                   "else a string: --var n=5 --var name=Ada --var dry_run=false; a Path, "
                   "date, datetime, time or Enum annotation makes it one (--var "
                   "day=2024-05-31); a value of another type than the annotation is "
                   "refused")  # fmt: skip
    p.add_argument("--json", action="store_true",
                   help="print JSON where the run ended (its value, or why not) instead of its value")  # fmt: skip
    p.add_argument("--input", action="append", metavar="NAME=VALUE",
                   help="answer the run's durable.wait_for(NAME) on resume (NAME@POSITION: only "
                   "the wait at that position; repeatable; JSON "
                   "or a string; a number JSON does not give back as typed, 1.10, is "
                   "refused: quote it, --input 'v=\"1.10\"', for the text)")  # fmt: skip
    p = command("cancel", "durable._cli.cancel:cmd_cancel",
                "cancel a run: its holder stops at its next look for the mark (a step boundary, or its end); it ends `cancelled`, and only `durable run --restart` runs it again (`durable show RUN` prints that line)")  # fmt: skip
    p.add_argument("run_id", metavar="RUN", help="the id of the run to cancel")
    p.add_argument("--workflow", "-w", metavar="WORKFLOW", help=_WORKFLOW)
    p.add_argument("--json", action="store_true", help="print JSON")
    p = command("recover", "durable._cli.recover:cmd_recover",
                "resume every interrupted or failed run of a workflow whose holder is gone; "
                "exit 1 if one failed again or could not be read, else 2 if one was refused "
                "(its code changed)")  # fmt: skip
    p.add_argument("target", metavar="TARGET", help=_TARGET)
    p.add_argument("--json", action="store_true", help="print JSON")
    _durability(p)
    cache.add_commands(sub, common, age, typed)
    return parser


_RUN = "the run's id, as `durable runs` lists it (one that starts with -: after --, as in -- -x)"
_WORKFLOW = "the run's workflow, when the run id exists under several workflows"
_TARGET = "the workflow: path/to/file.py:function or package.module:function"
EPILOG = """\
examples:
  durable run flow.py:pipeline --var n=5       run pipeline(n=5) from flow.py
  durable run flow.py:pipeline --resume        resume its newest unfinished run
  durable runs                                 list the runs, newest first
  durable show RUN                             the steps of one run
  durable --store s3://bucket/runs runs        the runs in another store

exit codes: 0 done, 1 failed, 2 refused or usage error (also a run id,
workflow or step named that matches nothing, or a store folder that is not
there), 3 suspended, 4 cancelled, 130/143 stopped by SIGINT/SIGTERM.
`durable COMMAND --help` describes a command."""


def _durability(p: argparse.ArgumentParser, *, code: bool = True) -> None:
    # Only the commands that append records to a run's log (run, recover,
    # fork) take it: the others read, or write only manifests, markers and
    # deletions, which are synced at every level. `code`: it runs the user's
    # code, whose workflow option and configure() may set it (a fork's not).
    p.add_argument("--durability", choices=CHOICES["durability"], type=word_of("durability", "--durability"),
                   help="when this command's records are fsync'ed to a local store (default: "
                   + ("the workflow's, else the store's, else durable.configure(), else " if code else
                      "") + "$DURABLE_DURABILITY, else fsync)")  # fmt: skip


def _handler(handler: Handler | str) -> Handler:
    """A command's function. `durable run` names its module instead: it
    loads the engine and the user's code, which the commands that manage
    runs never do (`durable runs` stays fast and safe on any store)."""
    if callable(handler):
        return handler
    module, _, name = handler.partition(":")
    found: Handler = getattr(importlib.import_module(module), name)
    return found
