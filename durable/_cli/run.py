"""`durable run TARGET`: load a workflow from a file or a module, then start,
resume or restart one of its runs, reporting where it ended."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from typing import Any

from .. import on_event
from .._api.asyncworkflow import AsyncWorkflow
from .._api.chosen import made_note
from .._api.naming import started_other_way
from .._api.signals import stop_on_signals
from .._api.workflow import Workflow, bind_call, run_id_of, store_of
from .._errortext import id_word, program, shell_words, try_said
from .._manage.runs import list_runs, no_folder, not_found, run_info
from .._storage.base import Store
from .._storage.keycheck import check_key_part
from ..errors import Cancelled, DurableError, Stopped, Suspended
from ..events import Event, RunStarted, RunWaiting, StepExecuted, StepReplayed, StepRetried
from .common import (
    UsageError,
    command,
    is_refusal,
    new_namesake,
    not_the_commands,
    renamed_runs,
)
from .format import duration, waiting_line
from .report import Report
from .restart import dropped_line, not_recorded, restart_with
from .target import load_target
from .typed import by_annotation, check_types
from .values import check_input_numbers, check_names, parse_vars


def cmd_run(args: argparse.Namespace, store: Store) -> int:
    wf = load_target(args.target, args.typed)
    if args.store is None:
        # Unless --store says otherwise: the decorator's store, else the script's
        # durable.configure(store=), else $DURABLE_STORE (as `python script.py` would).
        store = store_of(wf)
        if args.no_pickle:  # the command line's refusal holds for that store too
            store.allow_pickle = False
    variables = parse_vars(args.var or [])
    check_names(wf.name, wf.fn, variables)
    check_types(wf.name, wf.fn, args.var or [])
    variables = by_annotation(wf.name, wf.fn, args.var or [])
    # `--run-id ""` (an unset shell variable) is bad input, not "no run id":
    # another run, the derived or the newest unfinished one, would run.
    given = args.run_id
    run_id = check_key_part(
        "run id",
        given if given is not None else _implied_run_id(wf, store, variables, args),
    )
    before, name = store.load_manifest(wf.name, run_id), wf.name
    if before is None and (other := started_other_way(wf, store, None, run_id)) is not None:
        before, name = store.load_manifest(other.name, run_id), other.name  # the call continues it
    args.running = (name, run_id)  # a refusal of this run gets commands to type (`main`)
    args.restart_with = restart_with(args, store, wf, run_id, variables)  # and this one
    exists = before is not None
    if args.resume and not exists:
        raise not_found(store, wf.name, run_id, resuming=True)
    if exists and "inputs" in variables:  # `bound.resume(run_id, inputs=...)` takes that name
        raise UsageError(
            f"--var inputs=... cannot reach the parameter named 'inputs' of {wf.name} on a "
            "resume: resume's inputs= is the answers to durable.wait_for() (--input). Rename "
            f"the parameter, or remove the run ({command(args)} {shell_words('rm', run_id)}) and run "
            "it again"
        )
    inputs = parse_vars(args.input or [], flag="--input")
    check_input_numbers(args.input or [])
    if inputs and not exists:
        raise UsageError(
            f"--input answers a wait_for() of an existing run; run {id_word(run_id)} does not exist "
            "yet. Start it first (it suspends at the wait), then resume it with --input."
        )
    if not exists or args.restart:
        try:
            _check_arguments(wf, variables)
        except UsageError as e:
            if not exists:
                raise
            raise not_recorded(e, args, store, wf, run_id) from None
    if exists and args.restart and (dropped := dropped_line(args, store, wf, run_id, variables)):
        print(dropped, file=sys.stderr)
    bound = wf.with_options(
        run_id=run_id,
        store=store,
        restart=args.restart,
        rebase=args.rebase_checkpoint,
        on_change=args.on_change,
        wait=args.wait,
        durability=args.durability,
    )
    report = Report(args, store, wf.name, run_id)
    if args.store is None and not_the_commands(store):
        report.say(
            f"  run {id_word(run_id)} is kept in store {store.url} (the workflow's store=, or its "
            f"script's durable.configure(store=)): `{program()} {shell_words('--store', store.url)} "
            "runs` lists it"
        )
    if not exists and (namesake := new_namesake(args, store, wf.name, run_id)):
        report.say(namesake)
    unwatch = _print_operations(report)
    with stop_on_signals():
        try:
            call: Any = (
                bound.resume(run_id, inputs=inputs, **variables)
                if exists
                else bound.run(**variables)
            )
            if isinstance(bound, AsyncWorkflow):
                import asyncio  # an async workflow's only: a fifth of the command's start

                call = asyncio.run(call)
            run = call
        except Suspended as s:
            return report.suspended(s.reason, s.waiting_for, s.position if (s.run_id, s.child) == (run_id, None) else None)
        except Cancelled as e:
            if e.run_id == run_id:
                report.say(f"run {id_word(run_id)} was cancelled; it runs again only with --restart")
                report.say(f"  restart it with: {args.restart_with()}")
            else:  # a child run this run calls: restarting this one leaves it cancelled
                report.say(
                    f"run {id_word(e.run_id)} of {e.workflow} (a child run of {run_id}) was cancelled: "
                    f"remove it ({report.durable} {shell_words('rm', e.run_id, '--workflow', e.workflow)}) "
                    "so that "
                    f"{run_id} runs it afresh"
                )
            report.document()
            return 4
        except Stopped as e:
            return report.stopped(e.signum)
        except KeyboardInterrupt:
            return report.stopped(signal.SIGINT)
        except DurableError as e:
            if is_refusal(e, run_id) or not _failed_here(store, wf.name, run_id, before):
                raise  # `durable` reports it: exit 2 for a refusal or bad input
            return report.failed(e)
        except Exception as e:
            return report.failed(e)
        finally:
            unwatch()
    return report.done(run, existed=exists)


def _print_operations(report: Report) -> Callable[[], None]:
    """One line per operation of this run on stderr, as it executes or
    replays (a subscriber of the event stream); returns the way to stop."""
    run_id = report.run_id

    def line(event: Event) -> None:
        if isinstance(event, RunStarted) and event.run_id == run_id:
            report.started = True
        if isinstance(event, RunWaiting) and event.run_id == run_id:
            print(waiting_line(event, report.durable), file=sys.stderr, flush=True)
        if isinstance(event, StepRetried) and event.run_id == run_id:  # a silent delay looked hung
            tried = try_said(event.attempt, event.call_attempt, event.max_attempts)
            print(f"  [{event.position}] {event.name} failed on {tried} ({event.error}); retrying in "
                  f"{duration(event.delay)}", file=sys.stderr, flush=True)  # fmt: skip
        # A child run's own operations are left out: its position in this run says it.
        if event.run_id == run_id and isinstance(event, (StepExecuted, StepReplayed)):
            print(operation_line(event), file=sys.stderr, flush=True)

    return on_event(line).close


def operation_line(event: StepExecuted | StepReplayed) -> str:
    """`  [2] fetch executed in 1.30s`: what `durable run` prints for one operation."""
    what = "executed" if isinstance(event, StepExecuted) else "replayed"
    kind = "" if event.kind == "step" else f" ({event.kind})"
    # Only a duration worth reading: a trivial step's 0-2 ms is noise; why a
    # record was not replayed (an input changed), lest it read as one lost.
    took = f" in {duration(event.duration)}" if what == "executed" and event.duration >= 0.1 else ""
    again = f" again: {event.again}" if isinstance(event, StepExecuted) and event.again else ""
    return f"  [{event.position}] {event.name}{kind} {what}{took}{again}"


def _implied_run_id(
    wf: Workflow[Any, Any], store: Store, variables: dict[str, Any], args: argparse.Namespace
) -> str:
    pinned = wf.options.run_id
    if args.resume and isinstance(pinned, str):  # the workflow's own run id, as in Python
        return pinned
    if args.resume:  # the newest run that has not completed
        for info in list_runs(store, wf.name):
            if info.status not in ("completed", "cancelled"):
                return info.run_id
        folder = no_folder(store)
        then = f"The store: {folder}" if folder else (
            f"Pass --run-id ({command(args)} {shell_words('runs', wf.name)} lists them)"
        )
        raise UsageError(f"no unfinished run of {wf.name} in {store.url} to resume; nothing was "
                         f"executed. {then}" + ("" if folder else renamed_runs(args, store, wf.name)))  # fmt: skip
    bound = _check_arguments(wf, variables)
    run_id = run_id_of(wf, bound)
    if callable(made := wf.options.run_id):  # a refusal says the function made the id (`refused`)
        args.made_by = lambda e: made_note(made, run_id, bound, e, "--run-id ID")
    return run_id


def _check_arguments(wf: Workflow[Any, Any], variables: dict[str, Any]) -> Any:
    try:
        return bind_call(wf, variables)
    except TypeError as e:
        raise UsageError(f"{e}; pass the workflow's arguments with --var NAME=VALUE") from None


def _failed_here(store: Store, workflow: str, run_id: str, before: bytes | None) -> bool:
    """Whether this call started the run and recorded it `failed`: an error
    raised before the run started (bad options, an argument without a
    canonical form) leaves the manifest untouched and is not a failed run."""
    try:
        after = store.load_manifest(workflow, run_id)
        return after is not None and after != before and run_info(store, workflow, run_id).status == "failed"
    except DurableError:
        return False
