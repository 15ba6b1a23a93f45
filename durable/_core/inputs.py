"""Inputs at the point of pause (`durable.wait_for(name)`): a position
that records a value supplied from outside on resume. The first time the
run reaches it without the value it suspends; resumed with the value, it
records it there; every later replay returns the recorded value.

Fail closed: a value supplied again for an input already recorded must be
the recorded one. A different value is refused before anything runs
(`check_inputs`): the body before the wait was decided with the old answer,
so continuing with a new one would be a run nobody executed. A new answer
needs a fork from the wait's position (or a restart)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._storage.clock import now
from .._storage.keys import Position
from .._storage.records import StepRecord
from ..errors import ConfigurationError, Suspended
from .context import RunState
from .identity import value_digest
from .replay import commit, load_value, lookup

KIND = "input"


def wait_for_input(ctx: RunState, name: str, pos: Position) -> Any:
    """The recorded value, else the supplied one (recorded now), else suspend."""
    rec = lookup(ctx, pos, name, KIND, value_digest(name))
    if rec is not None:
        return load_value(ctx, rec)
    if name not in ctx.inputs:
        raise ctx.refuse(
            Suspended(
                ctx.run_id,
                f"waiting for input {name!r}; resume with inputs={{{name!r}: ...}} "
                f"(durable run ... --resume --input {name}=VALUE)",
            )
        )
    value = ctx.inputs[name]
    record = StepRecord(pos, KIND, name, KIND, value_digest(name), started=now())
    record.extra["value_digest"] = value_digest(value)
    return commit(ctx, record, value)


def check_inputs(ctx: RunState, inputs: Mapping[str, Any]) -> None:
    """Refuse, before the body runs, a supplied input that differs from the
    value already recorded for it (see the module docstring)."""
    if not inputs:
        return  # nothing to compare: records stay undecoded until replayed
    for rec in ctx.records.values():
        if rec.kind != KIND or rec.name not in inputs:
            continue
        # An undigestable value gets a fresh token: never equal, so refused.
        if value_digest(inputs[rec.name]) != rec.extra.get("value_digest"):
            raise ConfigurationError(
                f"run {ctx.run_id!r}: input {rec.name!r} was already recorded at position "
                f"{rec.position}; the run continues with the recorded value, not a new one. "
                "Nothing was executed. Resume without it, or fork the run at that position "
                f"(durable fork {ctx.run_id} --at {rec.position}) to answer again."
            )
