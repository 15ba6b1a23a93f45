"""Answers bound to the wait they answer (`name@POSITION` in `inputs=`, the
position `Suspended` and `durable show` give): only the wait at that
position of that run takes one (`Bound`). Unbound, an answer given twice
for one wait (a double click, a webhook delivered again, two reviewers of
one round) went to the next wait of its name, which nobody had answered.
Once the bound wait is answered, the same value again is a repeat and
another is refused, before anything runs (`answered`).

An answer given unbound to a run stopped at a wait of its name is that
wait's (`WAITS_AT`): in an async run the waits of one name in its tasks
are reached in the order the tasks get there, which a resume does not
repeat (a step that ran live before the wait replays at once), so the
first one reached took the answer meant for the one the run said it
waited at."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errortext import shell_words, warn
from .._frozen import dataclass
from .._storage.keys import Position, parse_position, top_level
from .._storage.records import INPUT_KIND, StepRecord
from ..errors import ConfigurationError, Suspended
from .context import RunState
from .identity import value_digest
from .loadback import load_value


@dataclass(frozen=True)
class Bound:
    """An answer for the wait at `at` of run `run_id` only (`name@POSITION`)."""

    value: Any
    at: Position
    run_id: str


# The manifest's note of the wait a suspended run stopped at: its name and position.
WAITS_AT = "waits_at"


def note_wait(extra: dict[str, Any], s: Suspended, made: tuple[str, str]) -> None:
    """Note in a suspending run's manifest (`extra`) the wait it stopped at:
    its name, position and run (its own, or the child run's that waits, as
    `s` names it on its way up: `run.name_caller`), and `made`: the run's
    definition fingerprint and argument digest; none at a `suspend()`."""
    if s.waiting_for is not None and s.position is not None:
        extra[WAITS_AT] = [s.waiting_for, str(s.position), s.child or s.run_id, *made]
    else:
        extra.pop(WAITS_AT, None)


def stopped_at(extra: Any, made: tuple[str, str]) -> list[str] | None:
    """The wait a suspended run stopped at (`note_wait`) when its code and
    arguments are still `made`: name, position, run. Edited code or other
    arguments may have moved it (a step added before it) or put another
    wait there: then an answer goes to the first wait of its name without
    one, as a sync run stops at."""
    noted = extra.get(WAITS_AT) if isinstance(extra, dict) else None
    if not isinstance(noted, list) or len(noted) != 5 or tuple(noted[3:]) != made:
        return None
    return [str(part) for part in noted[:3]]


def bind(run_id: str, inputs: Mapping[str, Any], waits: list[str] | None = None) -> dict[str, Any]:
    """`inputs` by name, an answer given as `name@POSITION` bound to that
    wait of this run (`Bound`). A name without a position after its last
    `@` is a name as it is, bound to the wait the run stopped at when it
    is that wait's name (`waits`: `stopped_at`), which may be a child run's."""
    usable: dict[str, Any] = {}
    for key, value in inputs.items():
        name, _, at = key.rpartition("@")
        pos, where = (parse_position(at) if name else None), run_id
        if pos is None and waits and key == waits[0] and not isinstance(value, Bound):  # (a caller's stays)
            name, pos, where = key, parse_position(waits[1]), waits[2]
        if pos is not None:
            key, value = name, Bound(value, pos, where)
        if key in usable:
            raise ConfigurationError(
                f"run {run_id!r}: inputs= answers {key!r} twice (bound to a position and "
                "not, or to two positions): one answer a wait. Nothing was executed."
            )
        usable[key] = value
    return usable


def answered(ctx: RunState, usable: dict[str, Any]) -> None:
    """A bound answer for a wait the run recorded an answer at: the same
    value is a repeat, used up (for the callers too); another is refused,
    as is a position that holds no wait of that name."""
    for name, given in list(usable.items()):
        if not isinstance(given, Bound) or given.run_id != ctx.run_id:
            continue
        rec = ctx.records.get(given.at)
        if rec is None:
            continue  # taken when the run reaches that wait
        if rec.kind != INPUT_KIND or rec.name != name:
            raise ConfigurationError(
                f"run {ctx.run_id!r}: input {name!r} was given for position {given.at}, "
                f"which is not a wait_for({name!r}) (it records {rec.name!r}). Nothing was "
                "executed. Give the position the run waits at, as its Suspended or "
                "`durable show` says."
            )
        if value_digest(given.value) == answer_digest(ctx, rec):
            for supplied in [usable, *ctx.callers_inputs]:
                supplied.pop(name, None)
            continue
        raise ConfigurationError(
            f"run {ctx.run_id!r}: the wait_for({name!r}) at position {given.at} was answered "
            "already, with another value: a recorded answer is never replaced. Nothing was "
            "executed. Fork the run at that position "
            f"(durable {shell_words('fork', ctx.run_id, '--at', top_level(given.at))}) to "
            "answer it again."
        )


def not_here(ctx: RunState, name: str, given: Bound, pos: Position) -> None:
    """Say why a wait suspends the run though an answer of its name was given."""
    whose = "" if given.run_id == ctx.run_id else f" of run {given.run_id!r}"
    warn(
        f"run {ctx.run_id!r} waits for input {name!r} at position {pos}; the answer was "
        f"given for the wait at position {given.at}{whose}, so it is not taken here: "
        "answer the wait the run stops at now, which its Suspended names."
    )


def answer_digest(ctx: RunState, rec: StepRecord) -> Any:
    """The digest of the answer recorded at a wait: kept in the record,
    unless a fork's `mutate` replaced the value (the kept one is the old's)."""
    if rec.extra.get("mutated"):
        return value_digest(load_value(ctx, rec))
    return rec.extra.get("value_digest")
