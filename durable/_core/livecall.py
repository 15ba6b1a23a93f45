"""A step's live call in a run: its one try run (`run_once`) or its
tries counted (`Tries`, which `steps._live_plan` drives), and the record
of its output (`finish`)."""

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
from ..errors import ControlFlow, LeaseLostError
from . import context, notify, redact, runread, unkept
from .attempts import attempt_record, budget_used, save_failures
from .bound import with_bound
from .callbytes import kept_bytes
from .changed import in_place_warning
from .context import RunState
from .identity import changed_in_place
from .named import with_named
from .plan import Call
from .replay import boundary, commit
from .retry import RetryPolicy
from .sharing import note
from .spec import StepSpec
from .stillheld import lease_lost
from .written import with_written

if TYPE_CHECKING:
    from .cache import Ticket


class Live(NamedTuple):  # what the live part of a call needs from its identification
    pos: Position
    fp: str
    digest: str
    rec: StepRecord | None  # a persist=False marker at pos
    reopened: str | None  # why a record at pos was forgotten
    reads: bool  # reads the run's arguments through its closure (`held_by`)
    canonical: bytes | None  # what its digest hashes, when that is its whole identity


def still_plain(ctx: RunState, spec: StepSpec) -> tuple[Any, Any, str] | None:
    """What this run found of a plain step (`StepSpec.plain_in`: its digest alone is
    its identity), while its code is still the one it was found with, as
    `written.quiet` asks: a body, a reload or a decorator may set a `__code__` or a
    `__wrapped__` since."""
    plain, fn = ctx.plain.get(id(spec)), spec.fn
    if plain is not None and plain[0] is spec and fn.__code__ is plain[1] and "__wrapped__" not in fn.__dict__:
        return plain
    return None


made = tuple.__new__  # a `Live` without the Python `__new__` a NamedTuple has
_new = object.__new__


def run_once(
    ctx: RunState, spec: StepSpec, args: tuple[Any, ...], kwargs: dict[str, Any], live: Live
) -> Any:
    """`_live_plan` of a `spec.direct` step (no cache, validator, derived
    artifacts or retries), without a generator to drive: its one try runs
    here, as `drive_sync` would run it, and fails as `retrying` fails a try
    its policy does not retry (a suspend or a stop is no failure). A call
    with no failed try at its position (most) makes no `Tries`: one is
    made only to record a failure."""
    tries: Tries | None = None
    if ctx.failures and live.pos in ctx.failures:  # tries made before: counted (`Tries.begin`)
        tries = begun = Tries.begin(ctx, spec, live)
        started, n, given_up, found = begun.started, begun.used, begun.given_up, begun.found
    else:  # what `begin` finds for a position without failures: nothing used or given up
        started, n, given_up, found = clock.clock.time(), 0, 0, []
    try:
        # `tries.enter(n)` without its call: `found` is empty.
        tokens = context.entered_step(live.pos, given_up + n, found, live.digest)
        try:
            value = spec.fn(*args, **kwargs)
        finally:
            context.left_step(tokens)
    except Exception as exc:
        if not isinstance(exc, ControlFlow):
            if tries is None:
                tries = Tries.begin(ctx, spec, live)
                tries.started = started
            tries.failed(exc, n)
        raise
    failures = tries.failures if tries is not None else []
    return finish(ctx, spec, live, started, failures, found, value, None, (args, kwargs))


class Tries:
    """The tries of one live call, for both ways of running them (the plan
    and `run_once`): the scope a try runs in, what a failed try records
    and announces, and the record of the output."""

    __slots__ = (
        "ctx", "failures", "found", "given_up", "live", "policy", "spec", "started", "used", "watch"
    )  # fmt: skip
    ctx: RunState
    spec: StepSpec
    policy: RetryPolicy  # the step's, or the one its open budget was opened with
    live: Live
    failures: list[Attempt]
    used: int
    given_up: int
    started: float
    found: list[tuple[str, str | None]]  # artifacts the current try registers
    watch: list[bool] | None  # a cached call's reads of its run (`runread`)

    @classmethod
    def begin(cls, ctx: RunState, spec: StepSpec, live: Live) -> Tries:
        # Not `Tries(...)`: a class call runs `__init__` from C, costlier than this call.
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
        entered = context.entered_step(self.live.pos, self.given_up + n, self.found, self.live.digest)
        return functools.partial(context.left_step, entered)

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
        budget = (n, self.policy.retries + 1)  # n: of this call's budget (`retrying`'s count)
        notify.failed(ctx, pos, spec.name, self.live.fp, tried, exc, started=started, retry_in=wait, of_call=budget)
        return wait

    def finish(
        self, value: Any, ticket: Ticket | None, call: tuple[tuple[Any, ...], dict[str, Any]]
    ) -> Any:
        """Record the output of the try that returned (made with `call`'s
        arguments); the value the run goes on with."""
        return finish(self.ctx, self.spec, self.live, self.started, self.failures, self.found,
                       value, ticket, call)  # fmt: skip


def finish(
    ctx: RunState, spec: StepSpec, live: Live, started: float, failures: list[Attempt],
    found: list[tuple[str, str | None]], value: Any, ticket: Ticket | None,
    call: tuple[tuple[Any, ...], dict[str, Any]],
) -> Any:  # fmt: skip
    """`Tries.finish`: the output of a live call recorded, `found` the
    artifacts its try registered, `failures` its failed tries."""
    pos, fp, digest, rec, reopened, reads, canonical = live
    if not spec.persist:  # nothing holding it is kept either (`unkept`)
        unkept.note(ctx, value)
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
    # What it wrote that another step reads, as it left it (`written.with_written`);
    # a step this run found plain writes nothing another reads, asked again after
    # its body, which may have set a `__code__` or `__wrapped__`.
    fn = spec.fn
    if still_plain(ctx, spec) is not None:
        written = digest
    else:  # and the code of the modules its arguments name (`named`)
        written = with_named(fn, with_written(fn, digest, spec.name, fp), *call)
    record = StepRecord.made(pos, spec.name, fp, written, started, failures, produced)
    kept = None
    if canonical is not None and written is digest:  # what its replay compares (`same_fields`)
        kept = record.args_bytes = kept_bytes(spec.signature, call[0], canonical)
        if kept is not None and ctx.unkept and unkept.holds(ctx, call[0]):  # they spell a persist=False output
            kept = record.args_bytes = None
    if reopened is not None:
        record.extra["reopened"] = reopened
    # Bytes kept hold numbers passed positionally, which no step can change: what
    # `changed_in_place` answers first (`immutable_call`), known here without asking.
    held: list[Any] = []  # the mutable objects its arguments hold (none: no walk of the output)
    if kept is None and _in_place(ctx, spec, reads, digest, call, held):
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
    if spec.persist:  # the parts of its arguments it returns, handed back by its replay
        note(record.extra, value, held, call, packed is not None)
    redacted = packed is None and redact.holds_redacted(value)
    if redacted:
        record.extra["redacted"] = True
    elif spec.persist and ctx.unkept and unkept.holds(ctx, value):  # before a blob or a cache entry is written
        redacted = record.extra["unkept"] = True
    elif ticket is not None:
        from . import cache

        value = cache.stored(ctx, ticket, record, value)
    elif packed is not None:
        try:  # a large output's blob: the record's first write (`commit` says so too)
            keep_plain(ctx.store, (ctx.workflow, ctx.run_id), record, packed)
        except LeaseLostError as e:
            raise lease_lost(ctx, record.position, e) from None
    return commit(ctx, record, value, persist=spec.persist and not redacted)


def _in_place(
    ctx: RunState, spec: StepSpec, reads: bool, digest: str,
    call: tuple[tuple[Any, ...], dict[str, Any]], met: list[Any],
) -> bool:  # fmt: skip
    """Whether the body changed an argument it was given (`identity.changed_in_place`)."""
    held, bodies = (ctx.argument_values, ctx.bodies) if reads else ((), ())
    rejoin = (
        functools.partial(with_bound, spec.fn, held=held, bodies=bodies)
        if spec.binds or reads
        else None
    )
    # Not `*call`: a star call runs the function from C, costlier than a plain call.
    return changed_in_place(spec.signature, call[0], call[1], spec.name, digest, rejoin, met)
