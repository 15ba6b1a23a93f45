"""What a step is to the engine: its spec (name, fingerprint, function,
retry policy, options, cache), read back from a decorated function, and
fingerprinted afresh when a run or a cached call needs the code as it is now."""

from __future__ import annotations

import inspect
import sys
import threading
import types
from collections.abc import Callable, Hashable, Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from .._fingerprint.fingerprint import Fingerprint
from .._fingerprint.memo import memo_fingerprint, memo_key, memo_witness
from .._fingerprint.reach import may_answer
from .._fingerprint.scriptnames import module_label
from .._frozen import Frozen, dataclass
from .._valuetext import error_message
from ..errors import DefinitionChangedError, DurableError, ValidationError
from .bound import bare, binds
from .context import RunState
from .named import names_modules
from .retry import RetryPolicy
from .unfilled import reads_no_fill
from .written import quiet

if TYPE_CHECKING:
    from .cacheoption import Cache


@dataclass(frozen=True)
class StepSpec(Frozen):
    """What the engine needs to know of a step."""

    name: str
    fingerprint: str
    fn: Callable[..., Any]
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    persist: bool = True
    artifacts: Callable[[Any], Iterable[Any]] | None = None
    artifacts_policy: str = "rerun"
    verify: str = "digest"
    # How the decorator fingerprinted it, so a run can fingerprint it afresh.
    pinned_name: str | None = None
    version: str | None = None
    deep: bool = True
    # Computed once at decoration: the argument digest binds every call to it.
    signature: inspect.Signature | None = field(default=None, compare=False)
    cache: Cache | None = field(default=None, compare=False)  # see `cache`
    # What an attempt calls: fn, or fn followed by its `validate=` check.
    body: Callable[..., Any] | None = field(default=None, compare=False)
    validate: Callable[[Any], object] | None = field(default=None, compare=False)
    # No cache, validator, derived artifacts or retries: a live call's one
    # try runs without a plan (`livecall.run_once`). Decided once, here.
    direct: bool = field(init=False, compare=False, repr=False)
    # How errors name a call of it (`RunState.take_position`), spelled once.
    what: str = field(init=False, compare=False, repr=False)
    # Which step of its name it is (`module.qualname`, or the `name=` given,
    # as in its fingerprint): steps of one name in two modules keep cache
    # entries apart by fingerprint, and `cache_info` counts them apart by this.
    owner: tuple[str, str] = field(init=False, compare=False, repr=False)
    # A partial, bound method or callable object: what it binds (`bound`) is
    # an argument of each call.
    binds: bool = field(init=False, compare=False, repr=False)
    # Its fingerprint's key in the memo (`refingerprint`), made once.
    memo: Hashable = field(init=False, compare=False, repr=False)
    # [(the code its function had, the module-level values it writes that
    # another step reads)] (`cache.ticket_for`): decided once per code.
    writes: list[tuple[Any, tuple[str, ...]]] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        direct = self.cache is None and self.body is None and self.artifacts is None
        object.__setattr__(self, "direct", direct and self.retry.retries == 0)
        module, qualname = getattr(self.fn, "__module__", "?"), getattr(self.fn, "__qualname__", "?")
        # The script's module by the name an import gives it (`flow`, not `__main__`), as its identity.
        object.__setattr__(self, "owner", (self.name, self.pinned_name or f"{module_label(module)}.{qualname}"))
        object.__setattr__(self, "what", f"step {self.name!r}")
        object.__setattr__(self, "binds", binds(self.fn))
        object.__setattr__(self, "memo", memo_key(self.fn, self.pinned_name, self.version, self.deep))
        object.__setattr__(self, "writes", [(None, ())])

    def attempt(self) -> Callable[..., Any]:
        return self.body if self.body is not None else self.fn

    def accepts(self, output: Any) -> bool:
        """Whether `validate=` accepts an output that did not just pass it:
        a cache entry, let in by another (or no) validator."""
        if self.validate is None:
            return True
        try:
            check_output(self.validate, self.name, output)
        except ValidationError:
            return False
        return True

    def fingerprint_in(self, ctx: RunState) -> str:
        """The fingerprint as of this run's start (helpers and constants
        may have changed since decoration). A step the workflow does not
        reach by name (called through `getattr`, passed in as an argument)
        is fingerprinted afresh when the run first calls it, never taken
        at its decoration-time value; one whose code cannot be established
        refuses the run."""
        fp = ctx.fingerprints.get(id(self))
        if fp is not None:
            return fp
        found = ctx.unreached.get(id(self))
        if found is None or found[0] is not self:
            try:
                fresh = refingerprint(self).value
            except DurableError as e:
                raise ctx.refuse(e) from None
            found = ctx.unreached[id(self)] = (self, fresh)
        return str(found[1])

    def check_code(self, ctx: RunState, fp: str) -> None:
        """Refuse the run when the code this step runs is no longer what `fp`,
        its fingerprint as the run started, describes: a notebook cell (or a
        reload) redefined it or a helper it calls while the run went on in a
        thread or a task of the kernel's loop, and its output would be
        recorded under the old code's fingerprint. A fingerprint changed by
        values alone (a class attribute or a global an earlier step of the
        run set) is vouched for by the witness of the last one
        (`Witness.code_changed`); none to ask, it counts as code (fail
        closed). Asked as a live call's output is about to be recorded (once:
        the fingerprints of steps calling each other are costly to ask
        inside one another), and only when other code may have run."""
        if not _others_may_run():
            return
        held = ctx.vouched.get(id(self))
        last = held[1] if held is not None and held[0] is self else fp
        try:  # a file edited meanwhile changes no code object that runs: not asked (`files`)
            now = refingerprint(self, files=False).value
        except DurableError as e:
            raise ctx.refuse(e) from None
        if now == last:
            return
        then = memo_witness(self.memo, last)
        if then is None or then.code_changed():
            raise ctx.refuse(_ChangedMidRun(ctx, self.name, fp, now))
        ctx.vouched[id(self)] = (self, now)

    def plain_in(self, ctx: RunState, fp: str) -> None:
        """Note, after a call of this run, that its calls are identified by
        their digest alone: it binds nothing (`binds`), reads no argument of
        the run (`held_by` said so), writes nothing another step reads
        (`written.quiet`), names no module by its arguments (`named`), and
        `fp` is its fingerprint in the run. Only for a
        function holding nothing (`bound.bare`): what a closure cell holds
        may change between calls (`held_by` decides that a function holds
        nothing once, as this does). `steps.replay_or_prepare` checks at
        each call that its code is still this one; the entry keeps the
        spec, so that no other takes its id while the run lasts."""
        fn = self.fn
        if self.binds or not bare(fn) or not quiet(fn) or names_modules(fn):
            return
        if any(body.fills for body in ctx.bodies):  # `held_by` looks at what they fill
            noted = ctx.plain.get(id(self))
            if noted is not None and noted[0] is self and noted[1] is None:
                return  # decided for the run: it may read one (no code is ever None)
            if not reads_no_fill(fn, ctx.bodies):
                ctx.plain[id(self)] = (self, None, fp)
                return
        ctx.plain[id(self)] = (self, fn.__code__, fp)


def with_validator(
    fn: Callable[..., Any], validate: Callable[[Any], object], step: str
) -> Callable[..., Any]:
    """fn, then `validate` on its output: a false result or an exception
    raises `ValidationError` inside the attempt, so it fails like the step
    itself would (retries apply) and nothing is recorded."""

    def check(output: Any) -> Any:
        return check_output(validate, step, output)

    if inspect.iscoroutinefunction(fn):

        async def validated_async(*args: Any, **kwargs: Any) -> Any:
            return check(await fn(*args, **kwargs))

        return validated_async

    def validated(*args: Any, **kwargs: Any) -> Any:
        return check(fn(*args, **kwargs))

    return validated


def check_output(validate: Callable[[Any], object], step: str, output: Any) -> Any:
    """The output, when `validate` accepts it; else `ValidationError`."""
    who = getattr(validate, "__qualname__", None) or repr(validate)
    try:
        ok = validate(output)
    except Exception as e:
        raise ValidationError(step, who, output, f"it raised {type(e).__name__}: {error_message(e)}") from e
    if not ok:
        # A validator that only raises on a bad output returns None on a good
        # one: it rejected every output, with no hint of why.
        hint = (
            ": a validator returns True to accept the output; one that raises on a bad "
            "output must end with `return True`"
            if ok is None
            else ""
        )
        raise ValidationError(step, who, output, f"it returned {ok!r}{hint}")
    return output


def step_spec(obj: object) -> StepSpec | None:
    """The spec of a `@durable.step`, None for anything else."""
    if type(obj) is types.ModuleType and not may_answer(obj.__dict__, "__durable_step__"):
        spec = obj.__dict__.get("__durable_step__")  # what getattr finds, with no exception
    else:
        spec = getattr(obj, "__durable_step__", None)
    return spec if isinstance(spec, StepSpec) else None


def own_step_spec(obj: object) -> StepSpec | None:
    """`step_spec` when obj is the step itself (or a method bound to it),
    None for a function that only copied its attributes: a decorator put
    over a step with `functools.wraps` runs code of its own around it, which
    running the step's body in its place would skip."""
    spec = step_spec(obj)
    return spec if spec is not None and getattr(obj, "__wrapped__", None) is spec.fn else None


def current_fingerprint(spec: StepSpec) -> str:
    """The fingerprint a step counts for where another step or a helper
    calls it, or where it is passed as an argument: as of now
    (`refingerprint`), since the one from its decoration misses a helper
    defined below it or rebound since."""
    return refingerprint(spec).value


# The same dicts for the life of the process (a fork's child clears and refills them).
_LIMBO: dict[Any, Any] = threading._limbo  # type: ignore[attr-defined]
_THREADS: dict[Any, Any] = threading._active  # type: ignore[attr-defined]


def _others_may_run() -> bool:
    """Whether code other than the run's own may have run since it started:
    another thread, an IPython shell's cells, an event loop's other tasks.
    Else only the run's body and steps did, which a resume runs or replays
    alike, and asking the witness (which walks what a step's globals hold:
    4 ms a call for a 100,000-int list) would cost every call for nothing."""
    # `threading.active_count()` without its lock and call (every live call asks):
    # `_limbo` read first, since a starting thread enters `_active` before it
    # leaves `_limbo` (a move between the two reads counts it twice, never not).
    if len(_LIMBO) + len(_THREADS) > 1 or "IPython" in sys.modules:
        return True
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and asyncio.events._get_running_loop() is not None


def refingerprint(spec: StepSpec, *, files: bool = True) -> Fingerprint:
    """Fingerprint a step again (at a run's start, or for a cached plain
    call): helpers, constants and steps defined below it (or re-run in a
    notebook cell) exist only now. When that fails (its file was edited
    after import, a helper has no source) the error propagates: a step
    whose code cannot be established is never replayed under the
    fingerprint it had at decoration. Memoised while nothing it was
    computed from changed (`_fingerprint.memo`); without `files`, whether
    the source files were edited since is not asked (`Witness.holds`)."""
    return memo_fingerprint(
        spec.fn, name=spec.pinned_name, version=spec.version, deep=spec.deep, files=files
    )


class _ChangedMidRun(DefinitionChangedError):
    """A step's code (or a helper's) changed while its run went on."""

    def __init__(self, ctx: RunState, step: str, old: str, new: str) -> None:
        why = f"its code or a helper's changed while run {ctx.run_id!r} went on"
        DefinitionChangedError.__init__(self, ctx.workflow, ctx.run_id, old, new, {step: why})
        DurableError.__init__(
            self,
            f"step {step!r} of run {ctx.run_id!r} of {ctx.workflow!r}: {why} (a notebook cell "
            f"or a reload redefined it after the run started: fingerprint {old[:12]}, now "
            f"{new[:12]}). Nothing was recorded for this call. Call the workflow again once the "
            "code is as you want it: the run goes on from its records under the code as it is then.",
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (DefinitionChangedError, (self.workflow, self.run_id, self.old_fingerprint,
                                         self.new_fingerprint, self.changed_steps))  # fmt: skip
