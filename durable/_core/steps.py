"""A step's call inside a run: look its record up, else run it (with
retries) and record its output. Written once as a plan that
`drive_sync` and `drive_async` run; the plan never calls user code itself."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._storage.keys import Position
from . import cancel, context, notify, unkept
from .bound import bound_arguments, held_by, with_bound, with_held
from .callbytes import call_bytes, digest_of
from .context import RunState
from .identity import call_digest
from .livecall import Live, Tries, made, run_once, still_plain
from .loadback import PRUNED, load_value
from .named import named_in, names_modules, with_named
from .plan import Plan, drive_sync
from .replay import commit, lookup, reopen
from .replayrow import MISS, replayed
from .retry import retrying
from .sharing import back
from .spec import StepSpec
from .written import quiet, with_written

# The cache and the artifacts' checks are imported where a step has either:
# a run whose steps have neither never loads them (ten modules, 3% of the
# CPU of such a process).


def sync_caller(spec: StepSpec) -> Callable[..., Any]:
    """What a sync step's name calls: in a run's body, its call in the run,
    no frame between (a replayed record returns at once, else `livecall.run_once`
    or the plan runs); outside one, the function plainly."""
    def call_step(*args: Any, **kwargs: Any) -> Any:
        ctx = context.active_or_unset()  # through the module: a step pickled by value
        if ctx is context.NOT_SET:  # (for a worker) must not carry the ContextVar
            ctx = context.active_run()
        if ctx is None:
            if spec.cache is not None:
                from .cacheplain import plain_call

                return plain_call(spec, args, kwargs)
            if not spec.persist:  # in a step's body or an item: what holds it is not kept either
                return unkept.returned(spec.attempt()(*args, **kwargs))
            return spec.attempt()(*args, **kwargs)
        found = replay_or_prepare(ctx, spec, args, kwargs, None)
        if type(found) is not Live:
            return found
        # Most steps: their one try runs without a plan; not one resuming a budget of more.
        if spec.direct and not (ctx.budgets and found.pos in ctx.budgets):
            return run_once(ctx, spec, args, kwargs, found)
        return drive_sync(_live_plan(ctx, spec, args, kwargs, found))

    return call_step


def step_plan(ctx: RunState, spec: StepSpec, args: tuple[Any, ...], kwargs: dict[str, Any],
              pos: Position | None = None) -> Plan[Any]:  # fmt: skip
    """`pos`: the position the caller took already (an async step takes it when called)."""
    found = replay_or_prepare(ctx, spec, args, kwargs, pos)
    if type(found) is Live:
        return (yield from _live_plan(ctx, spec, args, kwargs, found))
    return found


def replay_or_prepare(
    ctx: RunState,
    spec: StepSpec,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    pos: Position | None,
) -> Any:
    """The recorded value of this call (THE replay of a step), or a `Live`
    when it must run: no record, a changed one under "rerun", a
    persist=False marker, or an artifact missing or changed."""
    if pos is None:
        pos = ctx.take_position(spec.what)
    sig = spec.signature
    # Before the position is looked up: a call that does not bind fails at once. A call
    # with canonical bytes (most) is hashed only when something needs its digest.
    canonical = call_bytes(sig, args, kwargs) if sig is not None else None
    plain = still_plain(ctx, spec)
    # Most replayed calls: of a step this run found plain, their bytes their whole identity.
    replaying = False
    if plain is not None and canonical is not None and type(pos) is int:
        replaying = True
        value = replayed(ctx, pos, spec.name, plain[2], None, canonical)
        if value is not MISS:
            return value
    digest = call_digest(sig, args, kwargs, spec.name) if canonical is None else None
    fn = spec.fn
    # Most calls: a step this run found plain, its digest alone its identity.
    if plain is not None:
        fp, reads, written, shown = plain[2], False, digest, args
    else:
        held, bodies = ctx.argument_values, ctx.bodies
        reads = bool((held or bodies) and held_by(fn, held, bodies))
        fp = ctx.fingerprints.get(id(spec)) or spec.fingerprint_in(ctx)  # reached by name: most steps
        shown = (*bound_arguments(fn), *args) if spec.binds else args
        written = digest  # None while its bytes are its identity: made when needed
        if canonical is None or reads or spec.binds or not quiet(fn) or names_modules(fn):
            digest = digest or digest_of(canonical)  # type: ignore[arg-type]
            if spec.binds:
                digest = with_bound(fn, digest, held, bodies)
            elif reads:  # it binds nothing
                digest = with_held(fn, digest, held, bodies)
            # `call_tool("tools", q)`: the code its arguments name (never a plain step's: `named`)
            written = named_in(ctx, fn, spec.name, fp, with_written(fn, digest, spec.name, fp), args, kwargs)
            if written is not digest or reads or spec.binds:
                canonical = None  # its identity is more than the call's bytes
        if not reads and not spec.binds:
            spec.plain_in(ctx, fp)
    if type(pos) is int and not replaying:  # compared as their row, no record made
        value = replayed(ctx, pos, spec.name, fp, written, canonical)
        if value is not MISS:
            return value
    if digest is None:  # the plain path of a call with canonical bytes
        digest = written = digest_of(canonical)  # type: ignore[arg-type]
    rec = lookup(ctx, pos, spec.name, fp, written, call=(shown, kwargs))  # type: ignore[arg-type]
    if rec is None:
        return made(Live, (pos, fp, digest, None, None, reads, canonical))  # every recorded step
    reopened = None
    if rec.persisted and rec.artifacts:  # checked first: missing or changed, it is run again
        from .artifacts import recheck

        reopened = recheck(ctx, rec, spec.artifacts_policy)
    if reopened is not None:
        return Live(pos, fp, digest, None, reopened, reads, canonical)
    if not rec.persisted:
        return Live(pos, fp, digest, rec, None, reads, canonical)
    value = load_value(ctx, rec, pruned=True)
    if value is PRUNED:
        reopen(ctx, rec.position)
        return Live(pos, fp, digest, None, "its cached output was pruned", reads, canonical)
    if "shares" in rec.extra:  # parts of its arguments it returned: theirs again, when equal
        value = back(rec.extra, value, (args, kwargs))
    if ctx.watched:  # `notify.replayed` returns at once otherwise
        notify.replayed(ctx, rec)
    return value


def _live_plan(
    ctx: RunState, spec: StepSpec, args: tuple[Any, ...], kwargs: dict[str, Any], live: Live
) -> Plan[Any]:
    # Keyed by the fingerprint the call's record gets (`fingerprint_in`).
    ticket = None
    if spec.cache is not None:
        from . import cache

        # What it reads of the run's arguments (through what the body filled) joins the key too.
        held = with_held(spec.fn, "", ctx.argument_values, ctx.bodies) if live.reads else ""
        ticket = cache.ticket_for(ctx.store, spec, args, kwargs, live.fp, held)
        hit = ticket.lookup() if ticket is not None else None
        if ticket is not None and hit is not None:  # computed by another run or call
            # Its record counts what it logs as the run's own would (`written.with_written`).
            pos, fp, digest = live.pos, live.fp, with_named(spec.fn, with_written(spec.fn, live.digest, spec.name, live.fp), args, kwargs)
            value = back(hit[0].record.extra, hit[1], (args, kwargs))  # parts of its arguments: theirs
            return commit(ctx, cache.served(ctx, ticket, hit[0], pos, fp, digest), value, live=False)
    tries = Tries.begin(ctx, spec, live)
    tries.watch = ticket.read if ticket is not None else None  # (`runread`)
    call = functools.partial(tries.call, args=args, kwargs=kwargs)
    look = cancel.look(ctx) if tries.policy.retries else None  # a delay only a retry waits
    value = yield from retrying(tries.policy, call, tries.failed, tries.used, look)
    return tries.finish(value, ticket, (args, kwargs))

