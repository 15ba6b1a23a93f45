"""Text and JSON renderings of runs and histories for the command line."""

from __future__ import annotations

import bisect
import datetime
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._errortext import duration as duration
from .._errortext import id_word, said_reason, shell_words, stamp, waited_input

# The JSON builders live with run management (the progress file uses them too).
from .._manage.document import iso as iso
from .._manage.document import run_doc as run_doc
from .._manage.document import show_document
from .._manage.document import step_doc as step_doc
from .._manage.history import StepInfo
from .._manage.runs import RunInfo
from .._storage.keys import top_level

if TYPE_CHECKING:  # `runs` and `show` never load the engine (its events)
    from ..events import RunWaiting


def local(t: float | None) -> str:
    if not t:
        return "-"
    return datetime.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


def waiting_line(event: RunWaiting, durable: str) -> str:
    """`durable run --wait`'s one line when it starts waiting: whom for, how
    long, and what to do meanwhile (a silent wait looked like a hang);
    `durable`: the command as common.command() gives it."""
    most = "as long as it is held" if math.isinf(event.wait) else f"up to {event.wait:g}s"
    return (
        f"durable: run {id_word(event.run_id)} of {event.workflow} is being executed by {event.holder} "
        f"(since {stamp(event.since)}); waiting {most} for it to end or stop\n"
        f"  `{durable} {shell_words('show', event.run_id)}` shows where it is; Ctrl-C stops waiting"
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; the last one is left ragged."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        padded = [c.ljust(w) for c, w in zip(cells[:-1], widths[:-1], strict=False)]
        return "  ".join([*padded, cells[-1]]).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)])


def runs_table(infos: Sequence[RunInfo]) -> str:
    rows = [
        [i.workflow, i.run_id, i.status + (" (resume refused)" if i.refused else ""), str(i.steps), i.fingerprint[:12] or "-", local(i.updated)]
        for i in infos
    ]
    return table(["WORKFLOW", "RUN ID", "STATUS", "STEPS", "FINGERPRINT", "UPDATED"], rows)


def show_doc(info: RunInfo, steps: Sequence[StepInfo], *, values: bool = False) -> str:
    return json.dumps(show_document(info, steps, values=values), indent=2)


def _of_total(info: RunInfo) -> str:
    """The known total, a count of top-level positions: set against the
    finished ones when every one is top-level, else against those that are
    (an async run's tasks have positions of their own: '6 finished of 4')."""
    if info.steps_total is None:
        return ""
    if info.top_level is None or info.top_level == info.steps:
        return f" of {info.steps_total}"
    return f" ({info.top_level} of {info.steps_total} top-level positions)"


def durability(info: RunInfo) -> str:
    """The level a run's last attempt wrote under: what a power loss may
    take of it (docs/storage.md, durability levels). On an object store,
    which makes every level "fsync" (`Store.run_level`), "fsync" alone
    read as the level asked (`--durability none`) ignored or lost."""
    store = info._store
    if info.durability != "fsync" or store is None or store.run_level("none") == "none":
        return str(info.durability)
    return ("fsync (an object store: each record is durable once its write returns, "
            "whatever level was asked; --durability changes nothing there)")  # fmt: skip


def show_text(info: RunInfo, steps: Sequence[StepInfo], child: RunInfo | None = None) -> str:
    """`child`: the child run a suspended run waits in (`waiting_child`)."""
    head = [
        f"workflow  {info.workflow}",
        f"run       {info.run_id}",
        f"status    {info.status}" + (f" ({said_reason(info.reason)})" if says_more(info) else "")
        + (" (resume refused; see below)" if info.refused else ""),
        *([f"refused   {info.refused}"] if info.refused else []),
        f"started   {local(info.created)}    updated {local(info.updated)}",
        *([f"durability {durability(info)}"] if info.durability else []),
        f"steps     {info.steps} finished" + _of_total(info)
        + ("" if info.position is None else f", next position {info.position}"),
    ]
    if info.error:
        head.append(f"error     {first_line(info.error)}")
    rows = [
        [
            str(s.position),
            s.kind,
            s.name + (f" (run {s.child})" if s.child else ""),
            s.status,
            tries_cell(info, s),
            duration(s.duration),
            cell(said),
        ]
        for s, said in shown_rows(info, steps, child)
    ]
    body = table(["POS", "KIND", "NAME", "STATUS", "TRIES", "TIME", "OUTPUT / ERROR"], rows)
    files = [
        f"  {s.position}  {a.get('url')}  {a.get('state')}" for s in steps for a in s.artifacts
    ]
    return "\n".join([*head, "", body, *(["", "artifacts", *files] if files else [])])


def tries_cell(info: RunInfo, s: StepInfo) -> str:
    """A step's tries, and when more than one attempt of the run made some,
    how many each made (`6 (3+3)`): each call has a retry budget of its
    own, and "6" alone, with `retries=2`, read as a budget overrun."""
    made = _made(info, s)
    if s.attempts > len(s.failures):  # the try that returned: its attempt's
        made.append(_made(info, s, s.ended or s.started or math.inf)[-1])
    counts = [made.count(k) for k in sorted(set(made))]
    return str(s.attempts) if len(counts) < 2 else f"{s.attempts} ({'+'.join(map(str, counts))})"


def failed_tries(info: RunInfo, s: StepInfo) -> list[str]:
    """Each failed try of a step, as `show --html` names it: numbered in its
    call's budget (the run's attempt that made it), with the run's count
    where that differs, as the log says it ("try 1 failed (try 4 of the
    run)"): the run's count alone read as a budget overrun."""
    made = _made(info, s)
    return [
        f"try {made[:n].count(k) + 1} failed" + (f" (try {n + 1} of the run)" if made[:n].count(k) != n else "")
        for n, k in enumerate(made)
    ]


def _made(info: RunInfo, s: StepInfo, *more: float) -> list[int]:
    """Which of the run's attempts made each failed try (and each time in
    `more`): how many times it was resumed before."""
    cuts = sorted(at for at, _ in info.resumes)
    return [bisect.bisect_right(cuts, at) for at in [*(f.at for f in s.failures), *more]]


def shown_rows(info: RunInfo, steps: Sequence[StepInfo], child: RunInfo | None = None) -> list[tuple[StepInfo, str]]:
    """The rows `durable show` has, the text view's and the HTML timeline's
    alike, each with what its OUTPUT / ERROR cell says (whole: the text
    view cuts it to a cell)."""
    changed = [top_level(s.position) for s in steps if s.status == "changed"]
    after = frozenset(s.position for s in steps if changed and top_level(s.position) > min(changed))
    return [(s, _outcome(s, after)) for s in _with_in_flight(info, steps, child)]


def _with_in_flight(info: RunInfo, steps: Sequence[StepInfo], child: RunInfo | None) -> list[StepInfo]:
    """A running, interrupted or suspended run's next position as a row: a
    step has no record until it ends (nor after a kill -9 or Ctrl-C in it),
    nor has the wait_for or suspend() a run stopped at, and a table without
    it (empty for a run that stopped in its first step) hid where the run
    is. A step's name is the last attempt's plan's, if any. A `changed`
    record there (a rerun stopped before it) comes after the row."""
    out, pos = list(steps), info.position
    if info.status not in ("running", "interrupted", "suspended") or pos is None:
        return out
    if (info.error or "").startswith("Stopped: stopped by "):
        return out  # a graceful stop: between two steps (not at once: `Stopped.at_once`)
    if any(top_level(s.position) == pos and not _stand_in(s) for s in out):
        return out  # a retry, a sleep, a block's items: shown as such
    planned = [s for s in out if s.position == pos and s.status == "pending"]
    before = [s for s in out if s.position == pos - 1]
    row = _waiting(pos, info.reason, child) if info.status == "suspended" else _stepping(info.status, pos, planned, before)
    return [s for s in out if s not in planned and top_level(s.position) < pos] + [row] + [
        s for s in out if s not in planned and top_level(s.position) >= pos
    ]


def _stand_in(step: StepInfo) -> bool:
    """A row that does not say where the run is: the plan's `pending` one
    (a sleep's has its wake-up time), a record of changed code."""
    return step.status == "changed" or (step.status == "pending" and step.ended is None)


def _stepping(status: str, pos: int, planned: list[StepInfo], before: list[StepInfo]) -> StepInfo:
    """Nothing is written when a step starts (a write per step would cost
    what a record costs): without an earlier attempt's plan, what is known
    is where the run is and what ended last, not whether a step or the body
    between two steps runs there, nor which step."""
    if planned:
        what = "not recorded until it ends" if status == "running" else "started, no record (its process stopped)"
        return StepInfo(pos, planned[0].kind, planned[0].name, status, "", None, None, None, 1, (), None, what, None)
    if status == "running":
        what = "in the next step or the body" if before else "in the first step or the body"
        what += f", after position {pos - 1} ({before[0].name}) ended" if before else "; no step has ended yet"
    elif before:
        what = f"stopped after position {pos - 1} ({before[0].name}) ended, in the next step or the body"
    else:
        what = "stopped in the first step or the body, before any step ended"
    return StepInfo(pos, "-", "(not recorded)", status, "", None, None, None, 1, (), None, what, None)


def _waiting(pos: int, reason: str | None, child: RunInfo | None) -> StepInfo:
    """Where a suspended run waits: in a child run, at its wait_for (an
    `input` once answered), else at a suspend() in the body or in the step
    at that position (not the plan's name there: a suspend() in the body
    takes no position, the plan's is the operation after it)."""
    name = waited_input(reason)
    if child is not None:
        return StepInfo(pos, "workflow", child.workflow, "suspended", "", None, None, None, 0, (), None,
                        "waits in its child run", None, child=child.run_id)  # fmt: skip
    kind, what = ("input", f"waits for --input {shell_words(f'{name}=VALUE')}") if name else ("-", f"waits: {reason}")
    return StepInfo(pos, kind, name or "suspend()", "suspended", "", None, None, None, 0, (), None, what, None)


def _outcome(step: StepInfo, after: frozenset[object] = frozenset()) -> str:
    """The output, or the error, after what a failed block kept (its items
    checkpointed): the error alone would hide them, and a long error cut to
    the cell's width would cut them off if they came last."""
    if step.kind == "sleep" and step.status in ("sleeping", "pending") and step.ended:
        return f"wakes at {local(step.ended)}"  # the timer's whole point, not "-"
    if step.status == "changed":  # its own code, or a step before it (`changed.after_changed`)
        why = "after a changed step: runs again" if step.position in after else "code changed since it ran"
        return f"{why} (was: {step.preview or '-'})"
    if not step.error:
        return step.preview or ""
    kept = f"{step.preview}; " if step.preview else ""
    return kept + first_line(step.error)


def says_more(info: RunInfo) -> bool:
    """Whether the run's reason says more than its status (a cancelled run's
    reason is "cancelled")."""
    return bool(info.reason) and info.reason != info.status


def first_line(text: str) -> str:
    """A table cell holds one line: a multi-line message keeps its first."""
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def cell(text: str, limit: int = 80) -> str:
    """One line of at most `limit` characters, whatever the value's repr
    (a DataFrame's spans many lines): whitespace runs collapse to a space."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def value_text(value: Any) -> str:
    """The final value for stdout: strict JSON when it is JSON, else its
    repr. NaN and infinities are not JSON (a reader such as `jq` rejects
    them), so a value holding one is printed as its repr: `nan`, `inf`."""
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)
