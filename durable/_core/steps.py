"""A step's call inside a run: look its record up, else run it (with
retries) and record its output. Written once as a plan that
`drive_sync` and `drive_async` run; the plan never calls user code itself."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from .._errortext import warn
from .._storage import clock
from .._storage.codec import pack_plain
from .._storage.keys import Position
from .._storage.records import Attempt, StepRecord, keep_plain
from ..errors import ArtifactMissingError, ControlFlow, LeaseLostError
from . import cancel, context, notify, redact, runread
from .attempts import attempt_record, budget_used, save_failures
from .bound import bound_arguments, held_by, with_bound, with_held
from .changed import in_place_warning
from .context import RunState
from .identity import call_digest, changed_in_place
from .loadback import PRUNED, load_value
from .named import named_in, with_named
from .plan import Call, Plan, drive_sync
from .replay import boundary, commit, lease_lost, lookup, reopen
from .replayrow import MISS, replayed
from .retry import RetryPolicy, retrying
from .spec import StepSpec
from .written import with_written

# The cache and the artifacts' checks are imported where a step has either:
# a run whose steps have neither never loads them (ten modules, 3% of the
# CPU of such a process).
if TYPE_CHECKING:
    from .cache import Ticket


def sync_caller(spec: StepSpec) -> Callable[..., Any]:
    """What a sync step's name calls: in a run's body, its call in the run,
    no frame between (a replayed record returns at once, else `_run_once`
    or the plan runs); outside one, the function plainly."""
    def call_step(*args: Any, **kwargs: Any) -> Any:
        ctx = context.active_or_unset()  # through the module: a step pickled by value
        if ctx is context.NOT_SET:  # (for a worker) must not carry the ContextVar
            ctx = context.active_run()
        if ctx is None:
            if spec.cache is not None:
                from .cacheplain import plain_call

                return plain_call(spec, args, kwargs)
            return spec.attempt()(*args, **kwargs)
        found = replay_or_prepare(ctx, spec, args, kwargs, None)
        if type(found) is not _Live:
            return found
        # Most steps: their one try runs without a plan; not one resuming a budget of more.
        if spec.direct and not (ctx.budgets and found.pos in ctx.budgets):
            return _run_once(ctx, spec, args, kwargs, found)
        return drive_sync(_live_plan(ctx, spec, args, kwargs, found))

    return call_step


def step_plan(ctx: RunState, spec: StepSpec, args: tuple[Any, ...], kwargs: dict[str, Any],
              pos: Position | None = None) -> Plan[Any]:  # fmt: skip
    """`pos`: the position the caller took already (an async step takes it when called)."""
    found = replay_or_prepare(ctx, spec, args, kwargs, pos)
    if type(found) is _Live:
        return (yield from _live_plan(ctx, spec, args, kwargs, found))
    return found


class _Live(NamedTuple):  # what the live part of a call needs from its identification
    pos: Position
    fp: str
    digest: str
    rec: StepRecord | None  # a persist=False marker at pos
    reopened: str | None  # why a record at pos was forgotten
    reads: bool  # reads the run's arguments through its closure (`held_by`)


_made = tuple.__new__  # a `_Live` without the Python `__new__` a NamedTuple has
_new = object.__new__


def replay_or_prepare(
    ctx: RunState,
    spec: StepSpec,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    pos: Position | None,
) -> Any:
    """The recorded value of this call (THE replay of a step), or a `_Live` when it must run: no
    record, a changed one under "rerun", a persist=False marker, or an artifact missing or changed."""
    if pos is None:
        pos = ctx.take_position(spec.what)
    # Before the position is looked up: a call that does not bind fails at once.
    digest = call_digest(spec.signature, args, kwargs, spec.name)
    fn, plain = spec.fn, ctx.plain.get(id(spec))
    # Most calls: a step this run found plain (`StepSpec.plain_in`), its code still the one
    # it was found with (as `written.quiet` asks): the call's digest alone is its identity.
    if (
        plain is not None
        and plain[0] is spec
        and fn.__code__ is plain[1]
        and "__wrapped__" not in fn.__dict__
    ):
        fp, reads, written, shown = plain[2], False, digest, args
    else:
        held, bodies = ctx.argument_values, ctx.bodies
        reads = bool((held or bodies) and held_by(fn, held, bodies))
        if spec.binds:
            digest = with_bound(fn, digest, held, bodies)
        elif reads:  # it binds nothing
            digest = with_held(fn, digest, held, bodies)
        fp = ctx.fingerprints.get(id(spec)) or spec.fingerprint_in(ctx)  # reached by name: most steps
        shown = (*bound_arguments(fn), *args) if spec.binds else args
        # `call_tool("tools", q)`: the code its arguments name (never a plain step's: `named`)
        written = named_in(ctx, fn, spec.name, fp, with_written(fn, digest, spec.name), args, kwargs)
        if not reads and not spec.binds:
            spec.plain_in(ctx, fp)
    if type(pos) is int:  # most replayed steps: compared as their row, no record made
        value = replayed(ctx, pos, spec.name, fp, written)
        if value is not MISS:
            return value
    rec = lookup(ctx, pos, spec.name, fp, written, call=(shown, kwargs))
    if rec is None:
        return _made(_Live, (pos, fp, digest, None, None, reads))  # every recorded step
    reopened = _recheck(ctx, spec, rec) if rec.persisted and rec.artifacts else None
    if reopened is not None:
        return _Live(pos, fp, digest, None, reopened, reads)
    if not rec.persisted:
        return _Live(pos, fp, digest, rec, None, reads)
    value = load_value(ctx, rec, pruned=True)
    if value is PRUNED:
        reopen(ctx, rec.position)
        return _Live(pos, fp, digest, None, "its cached output was pruned", reads)
    if ctx.watched:  # `notify.replayed` returns at once otherwise
        notify.replayed(ctx, rec)
    return value


def _live_plan(
    ctx: RunState, spec: StepSpec, args: tuple[Any, ...], kwargs: dict[str, Any], live: _Live
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
            pos, fp, digest = live.pos, live.fp, with_named(spec.fn, with_written(spec.fn, live.digest, spec.name), args, kwargs)
            return commit(ctx, cache.served(ctx, ticket, hit[0], pos, fp, digest), hit[1], live=False)
    tries = _Tries.begin(ctx, spec, live)
    tries.watch = ticket.read if ticket is not None else None  # (`runread`)
    call = functools.partial(tries.call, args=args, kwargs=kwargs)
    look = cancel.look(ctx) if tries.policy.retries else None  # a delay only a retry waits
    value = yield from retrying(tries.policy, call, tries.failed, tries.used, look)
    return tries.finish(value, ticket, (args, kwargs))


def _run_once(
    ctx: RunState, spec: StepSpec, args: tuple[Any, ...], kwargs: dict[str, Any], live: _Live
) -> Any:
    """`_live_plan` of a `spec.direct` step (no cache, validator, derived
    artifacts or retries), without a generator to drive: its one try runs
    here, as `drive_sync` would run it, and fails as `retrying` fails a try
    its policy does not retry (a suspend or a stop is no failure)."""
    tries = _Tries.begin(ctx, spec, live)
    n = tries.used  # the one try of its budget (`retrying` makes at least one)
    try:
        # `tries.enter(n)` without its call: `found` was made empty by `begin`.
        reset = context.enter_step(live.pos, tries.given_up + n, tries.found, live.digest)
        try:
            value = spec.fn(*args, **kwargs)
        finally:
            reset()
    except Exception as exc:
        if not isinstance(exc, ControlFlow):
            tries.failed(exc, n)
        raise
    return tries.finish(value, None, (args, kwargs))


class _Tries:
    """The tries of one live call, for both ways of running them (the plan
    and `_run_once`): the scope a try runs in, what a failed try records
    and announces, and the record of the output."""

    __slots__ = (
        "ctx", "failures", "found", "given_up", "live", "policy", "spec", "started", "used", "watch"
    )  # fmt: skip
    ctx: RunState
    spec: StepSpec
    policy: RetryPolicy  # the step's, or the one its open budget was opened with
    live: _Live
    failures: list[Attempt]
    used: int
    given_up: int
    started: float
    found: list[tuple[str, str | None]]  # artifacts the current try registers
    watch: list[bool] | None  # a cached call's reads of its run (`runread`)

    @classmethod
    def begin(cls, ctx: RunState, spec: StepSpec, live: _Live) -> _Tries:
        # Not `_Tries(...)`: a class call runs `__init__` from C, costlier than this call.
        self = _new(cls)
        self.ctx, self.spec, self.live = ctx, spec, live
        # Tries are numbered in the run, as history and events count them: a
        # call resumed after failed tries (or a crash) does not start at 0 again,
        # nor with a fresh budget: n counts the tries of this call's budget,
        # the `used` ones made before it.
        if ctx.failures and live.pos in ctx.failures:
            self.failures = list(ctx.failures[live.pos])
            earlier, self.used = budget_used(ctx, live.pos, (live.fp, live.digest))
            self.given_up = earlier - self.used
        else:  # no try failed at pos (most calls): nothing used, nothing given up
            self.failures, self.used, self.given_up = [], 0, 0
        # An open budget keeps the retries= it was opened with, whatever the
        # code says now: a resume makes the tries left of it, at least one.
        kept = ctx.budgets.get(live.pos) if self.used else None
        self.policy = spec.retry if kept is None else replace(spec.retry, retries=kept)
        self.started, self.found, self.watch = clock.clock.time(), [], None  # `clock.now()`
        return self

    def enter(self, n: int) -> Callable[[], None]:
        """Try n's body runs from here until the returned reset."""
        self.found.clear()
        return context.enter_step(self.live.pos, self.given_up + n, self.found, self.live.digest)

    def call(self, n: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
        if n > self.used:  # a retry is a boundary, once its delay is over: as an item's (`tries`)
            boundary(self.ctx, self.live.pos)  # refused, cancelled or taken over meanwhile
        enter = runread.watched(functools.partial(self.enter, n), self.watch)
        return Call(self.spec.attempt(), args, kwargs, enter)

    def failed(self, exc: Exception, n: int) -> float | None:
        """Record the failed try n; the wait before the next (`retrying`)."""
        ctx, spec, pos = self.ctx, self.spec, self.live.pos
        if ctx.refusal is not None:
            return None  # a refusal inside the step body is not the step failing
        failures, started = self.failures, self.started
        failures.append(attempt_record(exc))
        wait = self.policy.after(exc, n)
        ended = self.given_up if wait is not None else None  # None: this call gives up, its budget ends
        call, kept = (self.live.fp, self.live.digest), {"retries": self.policy.retries}
        save_failures(
            ctx, pos, failures, name=spec.name, started=started, given_up=ended, extra=kept, call=call
        )
        tried = len(failures) - 1  # counting the tries of earlier attempts of the run
        notify.failed(ctx, pos, spec.name, self.live.fp, tried, exc, started=started, retry_in=wait)
        return wait

    def finish(
        self, value: Any, ticket: Ticket | None, call: tuple[tuple[Any, ...], dict[str, Any]]
    ) -> Any:
        """Record the output of the try that returned (made with `call`'s
        arguments); the value the run goes on with."""
        ctx, spec, found = self.ctx, self.spec, self.found
        pos, fp, digest, rec, reopened, reads = self.live
        spec.check_code(ctx, fp)  # not redefined since the run started (a notebook cell)
        derived = list(spec.artifacts(value)) if spec.artifacts is not None else []
        produced = []
        if found or derived:
            from . import artifacts

            produced = artifacts.produced(ctx, pos, spec.name, found + derived, spec.verify)
        if rec is not None:  # a persist=False marker is already there
            ctx.executed += 1
            notify.executed(ctx, rec)
            return value
        # What it wrote that another step reads, as it left it (`written.with_written`).
        written = with_named(spec.fn, with_written(spec.fn, digest, spec.name), *call)
        record = StepRecord.made(pos, spec.name, fp, written, self.started, self.failures, produced)
        if reopened is not None:
            record.extra["reopened"] = reopened
        held, bodies = (ctx.argument_values, ctx.bodies) if reads else ((), ())
        rejoin = (
            functools.partial(with_bound, spec.fn, held=held, bodies=bodies)
            if spec.binds or reads
            else None
        )
        # Not `*call`: a star call runs the function from C, costlier than a plain call.
        if changed_in_place(spec.signature, call[0], call[1], spec.name, digest, rejoin):
            record.extra["in_place"] = True  # its replay is a changed call (`replay.lookup`)
            warn(in_place_warning(spec.name))
        # One pass in C decides plain data, which holds no `Redacted`; only a
        # value that is not plain is walked for one.
        packed = None
        if spec.persist and ticket is None:
            try:
                packed = pack_plain(value)
            except ValueError:  # too deep or too large: `commit` raises it as a SerializationError
                pass
        redacted = packed is None and redact.holds_redacted(value)
        if redacted:
            record.extra["redacted"] = True
        elif ticket is not None:
            from . import cache

            value = cache.stored(ctx, ticket, record, value)
        elif packed is not None:
            try:  # a large output's blob: the record's first write (`commit` says so too)
                keep_plain(ctx.store, (ctx.workflow, ctx.run_id), record, packed)
            except LeaseLostError as e:
                raise lease_lost(ctx, record.position, e) from None
        return commit(ctx, record, value, persist=spec.persist and not redacted)


def _recheck(ctx: RunState, spec: StepSpec, rec: StepRecord) -> str | None:
    """Before a record is replayed: when an artifact it lists is missing or
    changed, forget it and every later record (they were built on it), run
    the rest as under on_change="rerun", and return why."""
    if not rec.artifacts:
        return None
    from . import artifacts

    try:
        why = artifacts.check_record(ctx, rec, spec.artifacts_policy)
    except ArtifactMissingError as e:
        raise ctx.refuse(e) from None
    if why is not None:
        reopen(ctx, rec.position)
    return why
