"""Inputs at the point of pause (`durable.wait_for(name)`): a position
that records a value supplied from outside on resume. The first time the
run reaches it without the value it suspends; resumed with the value, it
records it there; every later replay returns the recorded value.

One answer answers one wait: a value supplied to a resume goes to the first
`wait_for` of its name that has no recorded answer, and is then used up, so
a later wait of the same name (the next round of a review loop) suspends
the run again.

Fail closed (`usable_inputs`, before anything runs): a value supplied for a
name the run is not waiting for, while an answer of that name is recorded,
must be that latest answer (then it is a repeat, not used again); a
different one is refused. The body after the recorded wait was decided
with the old answer, so a new one would not change it; a new answer there
needs a fork from the wait's position (or a restart).

An answer is given for the run's arguments (`wait_digest`): one recorded
for other arguments is not this wait's, and is asked again under
on_change="rerun" (refused under "refuse").

A child run is offered its callers' inputs (`callers_inputs`): an answer it
takes is used up for them too; one it cannot take stays for them.

An answer may name the wait it answers (`answerat`): only that wait takes it."""

from __future__ import annotations

import inspect
import os
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from .._errortext import asked_for, program, shell_words, to_fill, waiting_reason, warn
from .._fingerprint.reach import script_name
from .._storage.clock import now
from .._storage.keys import Position, position_key, top_level
from .._storage.records import INPUT_KIND, StepRecord
from ..errors import ConfigurationError, Suspended
from . import notify
from .answerat import Bound, answer_digest, answered, bind, not_here
from .context import RunState
from .identity import is_token, value_digest
from .loadback import load_value
from .replay import commit, lookup

KIND = INPUT_KIND


def wait_for_input(ctx: RunState, name: str, pos: Position) -> Any:
    """The recorded value, else the supplied one (recorded now, and used
    up), else suspend."""
    digest = wait_digest(ctx, name)
    rec = lookup(ctx, pos, name, KIND, digest)
    if rec is not None:
        value = load_value(ctx, rec)  # one that cannot be loaded is refused, not replayed
        notify.replayed(ctx, rec)  # counted among the replayed: said as one too
        return value
    # A child run's answer comes from its callers' inputs: used up there too
    # (and not there any more if a caller's own wait took it meanwhile).
    offered = [ctx.inputs, *ctx.callers_inputs]
    value = ctx.inputs.get(name)
    if isinstance(value, Bound):  # taken at its wait only
        if (value.run_id, value.at) != (ctx.run_id, pos):
            not_here(ctx, name, value, pos)
            offered = []
        value = value.value
    if not offered or any(name not in supplied for supplied in offered):
        waits = Suspended(ctx.run_id, waiting_reason(name), waiting_for=name, position=pos)
        if name not in ctx.inputs:  # at the body's wait_for
            warn_unused(ctx, waits, f"waiting for input {name!r}")
        elif not offered:  # `not_here` said why
            _told.add(waits)
        raise ctx.refuse(waits)
    for supplied in offered:  # one answer, one wait: the next one waits again
        del supplied[name]
    record = StepRecord(pos, KIND, name, KIND, digest, started=now())
    record.extra["value_digest"] = value_digest(value)
    return commit(ctx, record, value)


def warn_unused(ctx: RunState, suspended: Suspended, why: str = "") -> None:
    """The run suspends again while no wait took the inputs given to it (a
    misspelt name, or answers meant for another run): say so, naming them,
    once per suspension (the runs it passes through on its way up say
    nothing more). They are dropped with this call. `why`: where it
    suspends, when not said by `suspended` itself."""
    if not ctx.inputs or suspended in _told:
        return
    _told.add(suspended)
    unused = ", ".join(map(repr, sorted(ctx.inputs)))
    own = suspended.run_id == ctx.run_id
    if not why:  # at a suspend(), or in a run of its own that this one called
        why = f"at suspend({suspended.reason!r})" if own else (
            f"in run {suspended.run_id!r}: {suspended.reason}"
        )
    hint = _ANOTHER if not own else _SUSPEND if suspended.waiting_for is None else ""
    warn(
        f"run {ctx.run_id!r} suspends again, {why}; no wait took the inputs given to this "
        f"call ({unused}): a misspelt name? They are not kept: give them again with the "
        f"next resume{hint}",
    )


def warn_untaken(ctx: RunState, ended: str, named_inputs: bool) -> None:
    """The run ended (`ended`: "completed", "failed") while no wait took
    some inputs given to this call: say so, as `warn_unused` does at a
    suspension. `named_inputs`: the workflow has a parameter named
    `inputs`, which resume's `inputs=` never sets (an override meant for it
    is taken for answers, and the argument keeps its recorded value)."""
    if not ctx.inputs:
        return
    unused = ", ".join(map(repr, sorted(ctx.inputs)))
    why = "a misspelt name?" if ended == "completed" else (
        "a misspelt name, or a wait the run did not reach? They are not kept: give them "
        "again with the next resume."
    )
    hint = _HIDDEN if named_inputs else ""
    warn(
        f"run {ctx.run_id!r} {ended}, and no wait took the inputs given to this call "
        f"({unused}): {why}{hint}",
    )


# Suspensions already warned of (`warn_unused`): weakly, they end with their call.
_told: weakref.WeakSet[BaseException] = weakref.WeakSet()
_ANOTHER = (
    ". Answers for a workflow called inside a step or a loop_over item, which runs "
    "as a run of its own and not as a child run, go to that run's own resume"
)
_SUSPEND = (
    ". A run stopped by suspend() takes new arguments, not inputs: "
    "resume(run_id, name=value) (durable run ... --resume --var name=value)"
)
_HIDDEN = (
    " resume(run_id, inputs=...) answers durable.wait_for(); it never sets the workflow's "
    "parameter named 'inputs', which kept its recorded value: rename the parameter to "
    "give it a new value on resume"
)


def wait_digest(ctx: RunState, name: str) -> str:
    """The identity of a wait: its name and the run's arguments (`ctx.arguments`)
    its answer is given for. An answer recorded for other arguments (a call
    under on_change="rerun" with new ones, a resume overriding one) is not
    this wait's: "rerun" asks again, "refuse" refuses (`replay.lookup`)."""
    if is_token(ctx.arguments):  # arguments without a digest: never the same again
        return ctx.arguments
    return value_digest((name, ctx.arguments))


def answer_text(
    s: Suspended, workflow: str, fn: Callable[..., Any], store: str, bound: inspect.BoundArguments
) -> str:
    """`Suspended`'s message once its run stopped: which run, where it waits,
    and the call and the command that answer it, as typed (`durable run`
    only where another process can load the workflow and reach the store),
    a suspend()'s naming the parameters it asks for (`asked_for`)."""
    at = "" if s.position is None else str(s.position)  # 3, or 2.0.1 in an asyncio task
    where = f" (in its child run {s.child!r}, at its position {at})" if s.child else (
        f" at position {at}" if at else "")  # fmt: skip
    call = f"{'await ' if inspect.iscoroutinefunction(fn) else ''}{fn.__name__}.resume"
    if s.waiting_for is None:
        by_name = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        settable = {n: v for n, v in bound.arguments.items() if bound.signature.parameters[n].kind in by_name}
        asks = [] if s.child else asked_for(s.reason, settable)  # a child's reason is not about these
        if settable:
            said = f"{where}: {s.reason} (durable.suspend). Resume it with the missing arguments as "
            said += f"overrides: {call}({s.run_id!r}, {', '.join(f'{n}=VALUE' for n in asks) or 'NAME=VALUE, ...'})"
        else:  # no parameter an override could set: `NAME=VALUE` would be a TypeError, `--var` refused
            said = f"{where}: {s.reason} (durable.suspend). Resume it, once what it waits for is there, with "
            said += f"{call}({s.run_id!r})"
        flag = to_fill("--var", asks) if settable else ""
    else:
        said = f"{where}, waiting for input {s.waiting_for!r} (durable.wait_for). Answer it with "
        said += f"{call}({s.run_id!r}, inputs={{{s.waiting_for!r}: VALUE}})"
        flag = to_fill("--input", [s.waiting_for])
    shell = _command(fn, store, s.run_id, flag)
    said += f", or from a shell: {shell}" if shell else "."  # no dot after a command
    return f"run {s.run_id!r} of workflow {workflow!r} is suspended{said}"


def _command(fn: Callable[..., Any], store: str, run_id: str, flag: str) -> str | None:
    target = _target(fn)
    if target is None or store.startswith("memory://"):  # no other process reaches either
        return None
    where = store if "://" in store else os.path.abspath(store)
    return f"{program()} {shell_words('--store', where, 'run', target, '--run-id', run_id)} --resume {flag}".rstrip()


def _target(fn: Callable[..., Any]) -> str | None:
    """`durable run`'s TARGET for the workflow: its file when it is the
    script run (relative to here when below it), else module:function; None
    for a function `durable run` cannot load (one defined in a function or
    in a notebook cell)."""
    if "<locals>" in fn.__qualname__:
        return None
    if fn.__module__ != "__main__":
        return f"{fn.__module__}:{fn.__qualname__}"
    if script_name(fn) is None:  # a notebook cell, `python -c`: no file to load
        return None
    path = os.path.abspath(fn.__code__.co_filename)
    here = os.path.relpath(path)
    return f"{path if here.startswith('..') else here}:{fn.__qualname__}"


def is_waiting_for(status: str | None, reason: str | None, name: str) -> bool:
    """Whether a run that ended with this status and reason stopped at a
    `wait_for(name)` that has no answer yet."""
    return status == "suspended" and (reason or "").startswith(f"waiting for input {name!r};")


def awaited(
    inputs: Mapping[str, Any], status: str | None, reason: str | None, fork: Mapping[str, Any] | None
) -> frozenset[str]:
    """The names in `inputs` that answer the wait a run stopped at (or one
    a fork not run yet may reach): see `usable_inputs`."""
    return frozenset(n for n in inputs if is_waiting_for(status, reason, n) or fork_may_take(fork, n))


def fork_may_take(fork: Mapping[str, Any] | None, name: str) -> bool:
    """Whether a fork not run yet, whose manifest's extra is `fork`, may take
    a new answer for `name` though one is recorded: a wait of that name is
    still to come (the source reached one at or after the fork's position,
    or stopped at one). Else the answer could only replace a recorded one.
    A fork made before forks kept this (no "waits_after") is not refused."""
    if fork is None:
        return False
    waits = fork.get("waits_after")
    if not isinstance(waits, list):
        return True
    return name in waits or is_waiting_for("suspended", fork.get("source_reason"), name)


def usable_inputs(
    ctx: RunState,
    inputs: Mapping[str, Any],
    *,
    status: str | None = None,
    reason: str | None = None,
    fork: Mapping[str, Any] | None = None,
    waits: list[str] | None = None,
) -> dict[str, Any]:
    """The supplied inputs the run may use, checked before the body runs
    (see the module docstring); `status` and `reason` are how the run's
    last attempt ended. Raises ConfigurationError for a refused one, unless
    the inputs are offered to a child run by its callers (`callers_inputs`):
    then the child leaves it (with a warning) to their later waits of that
    name. A repeat is used up, for the callers too.
    `fork`: the manifest's extra of a fork not run yet (`fork_may_take`);
    `waits`: the wait a suspended run stopped at (`answerat.stopped_at`)."""
    if not isinstance(inputs, Mapping) or not all(isinstance(k, str) for k in inputs):
        raise ConfigurationError(
            f"run {ctx.run_id!r}: inputs= must be a mapping of input names (str, as passed "
            f"to wait_for) to their values, not {inputs!r}. Nothing was executed."
        )
    usable = bind(ctx.run_id, inputs, waits if status == "suspended" else None)
    if not inputs:
        return usable  # nothing to compare: records stay undecoded until replayed
    answered(ctx, usable)
    answers = awaited(usable, status, reason, fork) | ctx.awaited
    latest: dict[str, StepRecord] = {}
    for rec in ctx.records.values():
        if rec.kind != KIND or rec.name not in usable or isinstance(usable[rec.name], Bound):
            continue
        seen = latest.get(rec.name)
        if seen is None or position_key(rec.position) > position_key(seen.position):
            latest[rec.name] = rec
    for name, rec in latest.items():
        if name in answers:
            continue  # the answer to the wait the run stopped at, or was forked before
        # An undigestable value gets a fresh token: never equal, so refused.
        if value_digest(usable[name]) == answer_digest(ctx, rec):
            # The recorded answer again: a repeat, not the next round's.
            for supplied in [usable, *ctx.callers_inputs]:
                supplied.pop(name, None)
            continue
        if ctx.callers_inputs:  # a caller's own later wait of that name may take it
            del usable[name]
            warn(_declined(ctx.run_id, name, rec.position))
            continue
        raise ConfigurationError(
            f"run {ctx.run_id!r}: input {name!r} was already recorded at position "
            f"{rec.position} (its latest wait_for({name!r})) and the run is not waiting for "
            "it now: the run continues with the recorded value, not a new one. Nothing was "
            "executed. Resume without it (a later wait of that name suspends the run, to be "
            "answered then), or fork the run at that position "
            f"(durable {shell_words('fork', ctx.run_id, '--at', top_level(rec.position))}) "
            "to answer it again."
        )
    return usable


def _declined(run_id: str, name: str, position: Position) -> str:
    return (
        f"child run {run_id!r} already recorded input {name!r} at position {position} and "
        "is not waiting for it: the input was left to the later waits of the run that "
        "called it, not used here. To answer that wait again, fork the calling run at the "
        "position of this child (the fork's child is a new run)."
    )
