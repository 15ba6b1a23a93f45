"""What `durable fork` says of its --at: given no number (`--at x`) or
left out, argparse said "invalid int value: 'x'" or "required: --at", and
neither what a position is nor where to see one; and what the line that
runs a fork (`fork`'s and `show`'s) gives its resume to answer."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence

from .._errortext import program, shell_words, to_fill, waited_input
from .._manage import runs
from .._storage.base import Store
from ..errors import DurableError
from .howto import asked

# Options of `fork` that `show` does not take: left out of the `show` line.
_FORK_ONLY = frozenset({"--at", "--new-run-id", "--durability"})
_VALUED = frozenset({"--store", "--workflow", "-w", *_FORK_ONLY})


def position(text: str) -> int:
    """--at's value: a whole number (one out of the run's range is said,
    with the range, by `fork_run`, which reads the run)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a position") from None


def at_advice(message: str, typed: Sequence[str]) -> str:
    """"; --at takes ..." with the `show` line that numbers the positions
    and the `fork` line to fill in, when argparse refused fork's --at or
    missed it; "" otherwise."""
    if "fork" not in typed or not re.search(r"argument --at:|required: .*--at", message):
        return ""
    head = list(typed[: list(typed).index("fork")])
    words, run = _words(list(typed[len(head) + 1 :]))
    show = shell_words(*head, "show", *(w for w, fork_only in words if not fork_only), run)
    fork = shell_words(*head, "fork", *(w for w, _ in words if w), run, "--at", "POS")
    return (
        "; --at takes the position of the first step to re-run (the steps before it are "
        f"copied), as the POS column of `{program()} {show}` numbers them: {program()} {fork}"
    )


def _words(rest: list[str]) -> tuple[list[tuple[str, bool]], str]:
    """The options typed after `fork` but --at (each with whether `show`
    lacks it), and the run id (RUN, to fill in, when none was typed)."""
    words: list[tuple[str, bool]] = []
    run = "RUN"
    items = iter(rest)
    for word in items:
        name = word.partition("=")[0]
        if name == "--at":
            if "=" not in word:
                next(items, None)
        elif name in _VALUED:
            value = [] if "=" in word else [next(items, "")]
            words += [(w, name in _FORK_ONLY) for w in [word, *value]]
        elif word.startswith("-") and word != "--":
            words.append((word, False))
        elif word != "--":
            run = word
    return words, run


def fork_answer(store: Store, info: runs.RunInfo, position: int | None) -> tuple[str, str]:
    """What the line that runs a forked run gives its resume, as flags and
    as a session's `resume` arguments: the input of its first position (a
    `fork --at` of a `wait_for`, answered again), as the source's last
    completed attempt's plan says; else the wait its source was suspended
    at, which no plan names (a suspended attempt writes none) and a fork at
    or before it reaches; or the parameters the suspend() its source
    stopped at asks for (`asked`), reached again too. Without them the line
    printed stopped there again."""
    try:
        manifest = runs.read_manifest(store, info.workflow, info.run_id)
    except DurableError:
        return "", ""
    plan, reason = manifest.plan or [], manifest.extra.get("source_reason")
    entry = plan[position] if position is not None and 0 <= position < len(plan) else None
    name = entry[1] if isinstance(entry, list) and len(entry) > 1 and entry[0] == "input" else None
    name = name if isinstance(name, str) else waited_input(reason)
    if name is not None:
        return to_fill("--input", [name]), f", inputs={{{name!r}: VALUE}}"
    asks = asked(info, reason) if isinstance(reason, str) else []
    if asks == []:  # no suspend() ahead, or a workflow without parameters: nothing to give
        return "", ""
    return to_fill("--var", asks or ()), "".join(f", {n}=VALUE" for n in asks or ["NAME"])
