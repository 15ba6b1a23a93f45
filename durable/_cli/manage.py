"""The commands that manage runs (`runs`, `show`, `rm`, `gc`, `fork`): one
run-management call each, then formatting. They never load the engine."""

from __future__ import annotations

import argparse
import json
import sys

from .._errortext import and_list, id_word, shell_words, waited_input
from .._manage import cleanup, delete, history, owners, runs
from .._manage.fork import fork_run
from .._manage.listed import listed
from .._manage.missing import store_below, store_beside
from .._storage.base import Store
from ..errors import (
    ConfigurationError,
    DurableError,
    RunLockedError,
    RunNotFoundError,
    StorageError,
)
from . import format, howto
from .common import UsageError, advised, command, not_there, note, nothing_there, print_error
from .forkat import fork_answer
from .html import render


def cmd_runs(args: argparse.Namespace, store: Store) -> int:
    infos = listed(store, args.workflow, status=args.status)
    if args.json:
        print(json.dumps([format.run_doc(i) for i in infos], indent=2))
    elif infos:
        print(format.runs_table(infos))
    for info in [] if args.json else [i for i in infos if i.status in _UNUSABLE]:  # the row says no why
        note(f"{info.workflow}/{info.run_id} is {info.status}: {advised(info.error or '', command(args))}")
    if infos:
        return _unreadable(infos, command(args))
    # A name that matches nothing exits 2, as a run id does for show, rm,
    # cancel and fork: a script can tell a typo from an empty listing (exit
    # 0: no name given, or --status filtering a workflow that has runs).
    unknown = runs.no_runs_of(store, args.workflow) if args.workflow else None
    if unknown is not None:  # the check and the words of `gc(workflow=)`
        print(f"durable: {unknown}", file=sys.stderr)
        return 2
    if not args.json or nothing_there(store):  # `[]` for a typo in --store: said why
        note(advised(_no_runs(args, store)))  # its `durable --store ...` as started
    return nothing_there(store)


# What a run is listed as when its manifest cannot be used (`durable show RUN` says it too).
_UNUSABLE = ("corrupt", "unverified", "newer")


def _unreadable(infos: list[runs.RunInfo], durable: str) -> int:
    """Exit 1 when the store failed to read a run (listed `unreadable`, the
    others listed as usual): a script must not take the listing for whole."""
    bad = [i for i in infos if i.status == "unreadable"]
    if not bad:
        return 0
    print(f"durable: {len(bad)} run{'s' if len(bad) != 1 else ''} could not be read "
          f"({', '.join(i.run_id for i in bad)}), listed as unreadable; the others are "
          "listed in full", file=sys.stderr)  # fmt: skip
    for info in bad:
        print(f"  {advised(info.error or '', durable)}", file=sys.stderr)
    return 1


def _no_runs(args: argparse.Namespace, store: Store) -> str:
    """Why the listing is empty: a folder that is not there (a typo in
    --store), or the status filter."""
    missing = runs.no_folder(store)
    if missing:
        return f"no runs in {store.url}: {missing}"
    status = f"{' or '.join(args.status)} " if args.status else ""
    of = f" of workflow {args.workflow}" if args.workflow else ""
    below = "" if args.status or args.workflow else store_below(store) or store_beside(store)
    return f"no {status}runs{of} in {store.url}" + (f"; {below}" if below else "")


def cmd_show(args: argparse.Namespace, store: Store) -> int:
    if args.values and not args.json:  # the table holds previews only
        raise UsageError(f"--values needs --json: {command(args)} "
                         f"{shell_words('show', args.run_id, '--json', '--values')}")  # fmt: skip
    workflow = owners.find_workflow(store, args.run_id, args.workflow)
    info, steps = history.describe(store, workflow, args.run_id)
    child = None if args.json and not args.html else runs.waiting_child(store, info)
    # The lines that go on with a run, under the table and on the page alike.
    ways = _how_to_continue(args, store, info) if args.html or not args.json else []
    if args.html:
        _write_html(args.html, render(info, steps, child, [w.strip() for w in ways]))
    if args.json:
        print(format.show_doc(info, steps, values=args.values))
    elif not args.html:
        print(format.show_text(info, steps, child))
    for line in [] if args.json else ways:  # stderr holds none beside a document
        print(line, file=sys.stderr)
    return 0


# What `durable show` adds for a run that stopped half way: `durable run`
# said it when the run stopped, maybe days before `show` is where one looks.
_HALF_WAY = frozenset({"suspended", "interrupted", "failed", "forked"})


def _how_to_continue(args: argparse.Namespace, store: Store, info: runs.RunInfo) -> list[str]:
    ways: list[str] = []
    if info.status == "cancelled" and not info.parent:  # a child run's goes with its parent's
        how = howto.restart_command(command(args), store, info.workflow, info.run_id)
        ways.append(f"  cancelled: it runs again only afresh, {how if how.startswith('in the ') else 'with: ' + how}")
    if info.status not in _HALF_WAY:
        return ways
    if howto.was_killed(info):  # --resume is refused again
        return ways + howto.killed_ways(command(args), store, info.workflow, info.run_id)
    top = info
    while top.parent:  # a child run goes on when the run on top of it resumes
        workflow, run_id = top.parent.rsplit("@", 1)[0].split("/", 1)
        try:
            top = runs.run_info(store, workflow, run_id)
        except DurableError:  # removed meanwhile: resumed alone, it is a run of its own
            break
    name = waited_input(info.reason)
    # The input or parameters named, as `durable run` says; none for a workflow without parameters.
    answer = howto.answer_flags(top, info.reason, name) if info.status == "suspended" else ""
    given = f", inputs={{{name!r}: VALUE}}" if name else ""
    if info.status == "forked":  # what its source stopped at, reached again
        answer, given = fork_answer(store, info, info.position)
    flags = f" {answer}" if answer else ""
    if info.refused and top is info:  # a plain --resume is refused again
        return ways + howto.refused_ways(command(args), store, info.workflow, info.run_id, answer)
    if top is not info:
        ways.append(f"  {id_word(info.run_id)} is a child run of run {id_word(top.run_id)} of {top.workflow}: it goes on "
                    "when that run resumes")  # fmt: skip
    target = howto.target(store, top.workflow, top.run_id)
    if target == "":
        if not name and top.status == "suspended" and (asks := howto.asked(top, info.reason)) != []:
            given = "".join(f", {n}=VALUE" for n in asks or ["NAME"])
        ways.append(f"  continue {howto.in_session(top.workflow, top.run_id, given)}")
        if info.status == "failed":
            ways.append("  after an edit of the code, add .with_options(on_change='rerun') before .resume")
        return ways
    ways.append(f"  continue with: {howto.run_line(command(args), target, top.workflow, top.run_id, '--resume' + flags)}")  # fmt: skip
    if info.status == "failed":  # the usual fix, an edit of the failed step, is refused otherwise
        ways.append("  after an edit of the code, add --on-change rerun to that line")
    return ways


def _write_html(path: str, page: str) -> None:
    # `--html /tmp` said only "[Errno 21] Is a directory: '/tmp'", as a failure (exit 1).
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:
        raise UsageError(
            f"cannot write the timeline to {path}: {e.strerror or e}; give --html the path of "
            "a file in an existing folder (--html timeline.html)"
        ) from None
    print(f"wrote {path}", file=sys.stderr)


def cmd_rm(args: argparse.Namespace, store: Store) -> int:
    """`--json`: one object per run id given, in order: `workflow` (when no
    run was found, the --workflow given, else null), `runId`, `removed`,
    `error` (why not, else null) and `childRuns` (its child runs' ids, which stay)."""
    code, docs = 0, []
    for run_id in args.run_ids:
        try:
            workflow = owners.find_workflow(store, run_id, args.workflow, leftovers=True)
            delete.delete_run(store, workflow, run_id)
        except (RunNotFoundError, RunLockedError, ConfigurationError, StorageError) as e:  # the next goes on
            others, failed = [r for r in args.run_ids if r != run_id], 1 if isinstance(e, StorageError) else 2
            code = max(code, print_error(e, args.debug, failed, durable=command(args),
                                         typed=getattr(args, "typed", None), others=others))  # fmt: skip
            docs.append({"workflow": args.workflow, "runId": run_id, "removed": False,
                         "error": advised(str(e).strip(), command(args)), "childRuns": []})  # fmt: skip
            continue
        children = _children_stay(store, workflow, run_id, command(args), said=not args.json)
        docs.append({"workflow": workflow, "runId": run_id, "removed": True, "error": None, "childRuns": children})
        if not args.json:
            print(f"removed {workflow}/{run_id}")
    if args.json:
        print(json.dumps(docs, indent=2))
    return code


def _children_stay(store: Store, workflow: str, run_id: str, durable: str, *, said: bool) -> list[str]:
    """A parent's removal leaves its child runs (they are runs of their own,
    maybe shared): say which, so that they are not forgotten in the store."""
    link = f"{workflow}/{run_id}@"
    ids = sorted(i.run_id for i in runs.list_runs(store) if (i.parent or "").startswith(link))
    if ids and said:
        print(f"  its child runs stay: {', '.join(ids)} ({durable} {shell_words('rm', *ids)} removes them)",
              file=sys.stderr)  # fmt: skip
    return ids


def cmd_gc(args: argparse.Namespace, store: Store) -> int:
    if args.keep_last is None and args.older_than is None and args.status is None:
        raise UsageError(
            "gc needs at least one of --keep-last N, --older-than AGE or --status STATUS; "
            "it never removes everything by default"
        )
    failed: dict[str, StorageError] = {}
    untried: list[runs.RunInfo] = []
    try:
        removed = cleanup.gc(
            store,
            keep_last=args.keep_last,
            older_than=args.older_than,
            status=args.status,
            dry_run=args.dry_run,
            workflow=args.workflow,
        )
    except cleanup.GcFailed as e:  # the others were removed: said as such, then each run left
        removed, failed, untried = e.removed, e.failed, e.untried
    verb = "would remove" if args.dry_run else "removed"
    if args.json:  # `removed`: what went, or with --dry-run what would go; `failed`: what stays, and why;
        # `untried`: what stays, not tried once the store failed alike too often in a row
        lost = [{"workflow": n.partition("/")[0], "runId": n.partition("/")[2], "error": advised(str(e), command(args))}
                for n, e in failed.items()]  # fmt: skip
        left = [{"workflow": i.workflow, "runId": i.run_id, "status": i.status} for i in untried]
        print(json.dumps({"dryRun": args.dry_run, "removed": [format.run_doc(i) for i in removed], "failed": lost,
                          "untried": left}, indent=2))  # fmt: skip
    elif removed:
        print(format.runs_table(removed))
    for name, error in failed.items():
        print_error(error, args.debug, 1, durable=command(args), about=f"could not remove {name}: ")
    said = f"{verb} {len(removed)} run{'s' if len(removed) != 1 else ''}"
    said += f"; failed to remove {len(failed)}, which stay{'s' * (len(failed) == 1)}" if failed else ""
    if untried:  # the same failure again and again: the store (its endpoint, its permissions) is the fault
        said += (f"; stopped after {cleanup.GIVE_UP} failures of one cause in a row: {len(untried)} more "
                 f"not tried, which stay{'s' * (len(untried) == 1)} (fix the cause above, then run gc again)")  # fmt: skip
    if where := "" if removed or failed else not_there(store):
        note(said + where)  # no store there: a typo in --store, not a report
    else:
        print(said, file=sys.stderr)
    return 1 if failed else 0 if removed else nothing_there(store)


def cmd_fork(args: argparse.Namespace, store: Store) -> int:
    workflow = owners.find_workflow(store, args.run_id, args.workflow)
    new_id = fork_run(store, workflow, args.run_id, args.at, new_run_id=args.new_run_id)
    if args.json:  # the new run as `durable runs --json` lists it, and where it came from
        doc = format.run_doc(runs.run_info(store, workflow, new_id))
        print(json.dumps(doc | {"forkedFrom": args.run_id, "at": args.at}, indent=2))
    else:
        print(new_id)
    target = howto.target(store, workflow, new_id)
    answer, given = fork_answer(store, runs.run_info(store, workflow, new_id), args.at)
    run_it = howto.in_session(workflow, new_id, given) if target == "" else howto.run_line(
        command(args), target, workflow, new_id, f"--resume {answer}".rstrip())
    print(
        f"forked {workflow}/{id_word(args.run_id)} at position {args.at} into {id_word(new_id)} "
        f"({args.at} position{'s' if args.at != 1 else ''} copied; nothing executed)\n"
        f"  run it {'' if target == '' else 'with: '}{run_it}",
        file=sys.stderr,
    )
    if others := sorted(runs.namesakes(store, workflow, new_id)):  # chosen: it was not refused
        show = f"{command(args)} {shell_words('show', new_id, '--workflow', workflow)}"
        note(f"run {new_id} is also a run of {and_list(others)}: a command that names {new_id} "
             f"needs --workflow ({show})")  # fmt: skip
    return 0
