"""What the errors' messages and pickling use, kept apart from the error
classes so that `errors` stays one screen of classes: a position's type, the
command lines messages print, a time stamp or span, the names a mistyped one
meant. It imports nothing of durable, as `errors` does not (`_valuetext`: a
value or an error as a message shows it)."""

from __future__ import annotations

import ast
import datetime
import functools
import os
import sys
import warnings
from collections.abc import Iterable, Mapping

# A position as errors see it: `3` in the body, a path such as (2, 0, 1)
# inside an asyncio task (the storage layer's `PositionPath` prints `2.0.1`).
Position = int | tuple[int, ...]


# The options of `durable` that take a value, and those that do not: any
# other word that starts with `-` is a value (a run id `-x`).
_VALUED = frozenset({
    "--store", "--run-id", "--workflow", "-w", "--at", "--new-run-id", "--var", "--input",
    "--wait", "--on-change", "--durability", "--status", "--keep-last", "--older-than", "--html",
})  # fmt: skip
_SWITCHES = frozenset({"--resume", "--restart", "--rebase-checkpoint", "--json", "--values",
                       "--debug", "--no-pickle", "--dry-run", "--help", "-h", "--"})  # fmt: skip


def shell_words(*words: object) -> str:
    """The words of a command a message advises, each one word of the shell
    as printed (quoted where it needs it): a run id such as `it's;v2` or a
    workflow `flow(v2)` printed bare gave a line the shell split or choked
    on. Every advised command's ids and names go through here. A value that
    starts with `-` is one argparse reads as an option: it is joined to its
    option (`--run-id=-x`), or, as a positional (`show -x`), put after `--`."""
    import shlex  # here and in `id_word`: a run that advises nothing need not load it
    out: list[str] = []
    loose: list[str] = []
    rest = iter(str(w) for w in words)
    for word in rest:
        value = next(rest, None) if word in _VALUED else None
        if value is not None:
            out += [f"{word}={value}"] if value.startswith("-") else [word, value]
        elif word.startswith("-") and word not in _VALUED | _SWITCHES:
            loose.append(word)
        else:
            out.append(word)
    return " ".join(shlex.quote(w) for w in [*out, *(["--", *loose] if loose else [])])


@functools.cache  # first called by `main()`'s parser, before `durable run` sets sys.argv for the script
def program() -> str:
    """The words to start each printed command with: `python -m durable` as
    typed when started so, the console script's path (a venv not activated)
    when `durable` on PATH is not that script, else `durable` when the one on
    PATH is this Python's own (a script's Suspended too), else `-m durable`."""
    import shlex
    import shutil

    typed = getattr(sys, "orig_argv", [])
    head = typed[: len(typed) - len(sys.argv) + 1]
    if len(head) >= 3 and head[-2] == "-m" and head[-1] in ("durable", "durable.__main__"):
        return shlex.join(head)
    found, script = shutil.which("durable"), sys.argv[0] if sys.argv else ""
    if os.path.basename(script) == "durable" and os.path.isfile(script):  # the console script
        return "durable" if found and os.path.samefile(found, script) else shlex.quote(script)
    own = shutil.which("durable", path=os.path.dirname(sys.executable))
    if found and own and os.path.samefile(found, own):
        return "durable"
    return f"{shlex.quote(sys.executable)} -m durable" if sys.executable else "durable"


def id_word(value: str) -> str:
    """A run id as a status line prints it: bare when it is a plain word of
    the shell, else quoted as the errors quote it (`run '-x' completed`): an
    id that starts with `-` printed bare reads as an option."""
    import shlex

    return value if not value.startswith("-") and shlex.quote(value) == value else repr(value)


def and_list(names: Iterable[str], word: str = "and") -> str:
    """Names as a sentence lists them: "MEM", "MEM and TOOLS", "A, B and C"
    (`word`: "or" for a choice). THE joining of names in durable's messages:
    ", ".join alone said "MEM, TOOLS, which a writes"."""
    said = list(names)
    return f"{', '.join(said[:-1])} {word} {said[-1]}" if len(said) > 1 else "".join(said)


PLACEHOLDER = "VALUE"  # what a printed command leaves to fill in: `durable run` refuses it as typed


def to_fill(flag: str, names: Iterable[str] = ()) -> str:
    """`--var NAME=VALUE` (`flag`) for each parameter named, else for NAME."""
    return shell_words(*(w for n in (list(names) or ["NAME"]) for w in (flag, f"{n}={PLACEHOLDER}")))


def asked_for(reason: str, arguments: Mapping[str, object]) -> list[str]:
    """The parameters a suspend() asks for, as far as can be told: those its
    reason names (`suspend("waiting for decision")`), else those that are None."""
    import re
    named = [n for n in arguments if len(n) > 1 and re.search(rf"(?<!\w){re.escape(n)}(?!\w)", reason)]  # not "a"
    return named or [n for n, v in arguments.items() if v is None]


PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
CLI = os.path.join(PACKAGE, "_cli") + os.sep


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn at the user's line nearest to the cause: the first caller outside
    durable. A fixed stacklevel pointed into durable's own files, or past
    them (`bin/durable:8`), whenever the path of calls differed. Under the
    `durable` command a warning about the run as a whole has no line of the
    user's: it stays at the command's, which prints it as its own. Frames
    of the import system are passed over, as `warnings` skips them."""
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and not frame.f_code.co_filename.startswith(CLI):
        name = frame.f_code.co_filename
        if not name.startswith(PACKAGE) and "importlib" not in name:  # a lazy import's frames
            break
        frame = frame.f_back
        level += not _skipped(frame.f_code.co_filename)
    warnings.warn(message, category, stacklevel=level)


def _skipped(filename: str) -> bool:
    # `warnings`' own rule: these frames are not counted in a stacklevel.
    return "importlib" in filename and "_bootstrap" in filename


def stamp(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def try_said(attempt: int, of_call: int, allowed: int) -> str:
    """A failed try as a retry's message numbers it (each 0 first):
    `try 1 of 3` of the call's budget, and the run's count when earlier
    calls made tries too (`try 1 of 3, try 4 of the run`): "try 4" alone,
    with `retries=2`, read as a budget overrun (`StepRetried`'s fields)."""
    said = f"try {of_call + 1} of {allowed}"
    return said if attempt == of_call else f"{said}, try {attempt + 1} of the run"


def duration(seconds: float | None) -> str:
    """A span of time as people read it: `10ms`, `1.50s`, `2m05s`, `1h03m`
    (a retry's delay of 0.01 s printed with one decimal read `0.0s`)."""
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.2f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


NO_DIGEST = "cannot be digested"  # an argument's change, as `changed_arguments` says it


# How a refusal says a step's write that another step reads is undone (`changed._written`).
NOT_AS_LEFT = "writes and another step reads"
READ_BACK = "writes and reads back at its next call"  # and one its own next call reads (`state_reread`)


def other_call(changed: Mapping[str, str]) -> str:
    """How a refusal at a position opens: not "other arguments" when a write
    the replay cannot redo may be the cause, which each step's line names first."""
    if any(NOT_AS_LEFT in why or READ_BACK in why for why in changed.values()):
        return "is not the call made there now (what a step wrote, or its arguments)"
    return "was made by a call with other arguments"


def arguments_message(workflow: str, run_id: str, arguments: Mapping[str, str]) -> str:
    lines = "\n".join(f"  - {name}: {change}" for name, change in sorted(arguments.items()))
    show = f"durable show {shell_words(run_id)}"  # resume() cannot: it needs such an argument again
    read = show if any(c.startswith(NO_DIGEST) for c in arguments.values()) else f"resume({run_id!r}) returns it ({show})"
    return (
        f"run {run_id!r} of {workflow!r} completed with other arguments than this call's:\n"
        f"{lines}\nIts recorded result was not returned and nothing was executed. Ways out:\n"
        f"  * read the result it completed with: {read}\n"
        "  * start fresh with these arguments: with_options(restart=True) / durable run --restart\n"
        "  * use another run id (or none: a derived run id follows the arguments)\n"
        "  * re-run from the first step whose arguments differ: " + RERUN
    )


# How to set on_change="rerun", in every place it can be set (the default stays "refuse").
RERUN = (
    "@durable.workflow(on_change='rerun') or with_options(on_change='rerun'); for every "
    "workflow, durable.configure(on_change='rerun') or DURABLE_ON_CHANGE=rerun; "
    "durable run --on-change rerun"
)


def plain_data(pickles: bool) -> str:
    """What a value must be to be recorded, as advice: under
    allow_pickle=False, what cloudpickle carries is refused too."""
    if pickles:
        return "Return plain data (or something cloudpickle can carry)"
    return ("Return plain data (a store with allow_pickle=False, as with --no-pickle or "
            "DURABLE_ALLOW_PICKLE=0, records nothing else)")  # fmt: skip


def unrecordable(name: str, *, answer: bool, block: bool, pickles: bool) -> dict[str, str]:
    """The subject and advice of a SerializationError for a value that is
    not a step's output: a `wait_for` answer given from outside (nothing
    computed it, and no step can be marked persist=False for it), or a
    `loop_over` block's or item's outputs. Empty: a step's, the default."""
    if answer:
        return {
            "subject": f"the input {name!r} given to the resume",
            "advice": "Give plain data" + plain_data(pickles).removeprefix("Return plain data")
            + " as its value. Nothing was recorded at the wait: resume again with another one.",
        }
    if block:
        return {"advice": f"{plain_data(pickles)} from the function given to loop_over. "
                "Earlier records are intact; fix it and call again to resume."}  # fmt: skip
    return {}


def lease_lost_text(run_id: str, why: str | None, position: Position | None, written: bool) -> str:
    """`LeaseLostError`'s message: what the holder wrote, only what is known.
    `written`: the loss was found after the write just made had landed (at
    the segment write that followed it); without it, the step at `position`
    may have run, its record being the write refused."""
    cause = why or (
        "it stalled past the expiry and another process took the run over, or the "
        "run's lease was deleted"
    )
    if position is None:
        later = "nothing more was written"
    else:
        since = "after it" if written else f"from position {position} on"
        later = f"nothing {since} was recorded, and no later step was started"
    if written:
        done = "the write just made" if position is None else f"the record at position {position}"
        later = f"{done} was written before that was found; {later}"
    return (
        f"run {run_id!r}: this process lost its lease ({cause}); {later}. If another "
        "process took the run over, it continues it: call again later to see its "
        "result. If the run was removed (durable rm, its folder deleted), call again "
        "to start it afresh."
    )


def waiting_reason(name: str) -> str:
    """The reason a run suspended at `wait_for(name)` keeps (`is_waiting_for` reads it)."""
    return (
        f"waiting for input {name!r}; resume with inputs={{{name!r}: ...}} "
        f"(durable run ... --resume --input {shell_words(f'{name}=VALUE')})"
    )


def said_reason(reason: str | None) -> str | None:
    """A reason as a command line shows it: a wait_for's without its
    `durable run ... --input` (not a command: the line after it is)."""
    name = waited_input(reason)
    return reason if name is None else f"waiting for input {name!r}"


def waited_input(reason: str | None) -> str | None:
    """The name of the input a suspended run's reason (`waiting_reason`) says
    it waits for; None for a `suspend()`. The name's repr may hold a `;`."""
    head = "waiting for input "
    rest = (reason or "")[len(head):] if (reason or "").startswith(head) else ""
    for end in (i for i, c in enumerate(rest) if c == ";"):
        try:
            name = ast.literal_eval(rest[:end])
        except (ValueError, SyntaxError):
            continue
        return name if isinstance(name, str) else None
    return None


def near(word: str, choices: Iterable[str], cutoff: float = 0.6, n: int = 1) -> list[str]:
    """The choices a mistyped word most likely meant, best first (none when
    none is near): one rule for a command (`durable shwo`), an option of the
    command line and a keyword of the API (`step(retry=3)`)."""
    import difflib  # here: a run that mistypes nothing need not load it

    return difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)


def near_name(word: str, names: Iterable[str]) -> list[str]:
    """The name (of a workflow, of a cached step) a typed name that matches
    none meant: the same function qualified another way (`ca.embed` for a
    step's `embed`, `pipeline` for the workflow `flow.pipeline`), then in
    another case, else one near it; [] when none is."""
    tails, last = {name: name.rpartition(".")[2] for name in names}, word.rpartition(".")[2]
    same = [n for n, t in tails.items() if t == last] or [n for n, t in tails.items() if t.casefold() == last.casefold()]
    return same[:1] or near(word, tails, cutoff=0.8)
