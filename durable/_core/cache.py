"""`@durable.step(cache=...)`: a step's output reused by any run of any
workflow, and by a plain call, when the code that runs and the arguments are
the same (issue 16).

The key is the step's fingerprint (computed as at a run's start: helpers and
constants included) and its argument digest (`cachekey.call_key`: the
one argument rule, with `ignore=`d arguments left out, or the digest of a
`key=` function's result), with the values the step's closure captured. A
call whose key cannot be established (a secret among its arguments or in its
closure, an argument without a reproducible digest, code whose source no
longer matches) is neither served nor stored: it just runs. A cached step
called plainly (outside any run) goes through `cacheplain`."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from .._errortext import warn
from .._frozen import Compared, dataclass
from .._storage import cachemarks, cachestore
from .._storage.base import Store
from .._storage.cachestore import MISSING, Entry, is_missing
from .._storage.cacheuse import count_use
from .._storage.clock import now
from .._storage.files import first_stale
from .._storage.keys import Position
from .._storage.records import StepRecord
from ..errors import DurableError, LeaseLostError, StorageError
from .cachekey import call_key, captured_changed
from .cachestate import state_writes
from .cachewhy import tell_uncached, tell_written
from .changed import not_cached_in_place
from .context import RunState
from .identity import value_digest
from .named import with_named
from .replay import fence
from .spec import refingerprint

if TYPE_CHECKING:
    from .spec import StepSpec

# A hit writes the entry's use marker (for `durable cache prune`, least
# recently used first) at most once a minute per entry and process.
TOUCH_EVERY = 60.0


_touched: dict[tuple[str, str], float] = {}  # (store url, entry key) -> last use written
# (store url, ref key, the run's creation time) written by this process: a
# run removed and made again under its id (or in another folder, for a
# relative store URL) is another run, whose ref marker may be gone.
_refs: set[tuple[str, str, float | None]] = set()


@dataclass(slots=True)  # one per cached call
class Ticket(Compared):
    """One call's place in the cache."""

    store: Store
    spec: StepSpec
    key: str
    fingerprint: str
    digest: str
    call: str | None = None  # the call's `call_digest` before it ran, when the key gave it
    base: str | None = None  # the key's digest before the captured values joined it
    wrote: bool = False  # `keep` created the entry there (not another process)
    read: list[bool] = field(default_factory=list)  # its body read its run (`runread`)

    def lookup(self) -> tuple[Entry, Any] | None:
        """The entry and its value when it may be reused, else None (a
        miss; an expired, stale or damaged entry is removed)."""
        entry = cachestore.read_entry(self.store, self.key)
        value = self._usable(entry) if entry is not None else MISSING
        if value is MISSING:
            count_use(self.spec.owner, False)
            if entry is not None:
                self._forget()
            return None
        assert entry is not None
        count_use(self.spec.owner, True)
        self._touch()
        return entry, value

    def _usable(self, entry: Entry, *, new: bool = False) -> Any:
        rec, option = entry.record, self.spec.cache
        seconds = option._limits[0] if option is not None else None
        if rec.fingerprint != self.fingerprint or rec.args_digest != self.digest:
            return MISSING  # a key reused by other code: never trust it
        # An entry stamped in this clock's future (its writer's clock ran
        # ahead, or this one was set back) has no age to trust: a miss;
        # unless `new`: written since this call's lookup, whatever its stamp.
        if seconds is not None:
            age = now() - entry.created
            if not age <= seconds or (age < 0.0 and not new):
                return MISSING
        # Files the step produced are checked like a replay: missing or changed runs it.
        if rec.artifacts and first_stale(rec.artifacts, self.store) is not None:
            return MISSING
        value = cachestore.entry_value(self.store, entry)
        # The validator is no part of the key: a stricter one must not be
        # served what a laxer one (or none) let in.
        spec = self.spec
        return (
            value if spec.validate is None or value is MISSING or spec.accepts(value) else MISSING
        )

    def _forget(self) -> None:
        """Remove the call's entry, which is not served (expired, stale,
        damaged). A store that refuses (a cache shared read-only) keeps it,
        with a warning: the call runs all the same, as on a miss."""
        try:
            cachestore.remove(self.store, [self.key])
        except StorageError as e:
            cachemarks.refused(self.store, e, "could not remove cache entries that are not "
                               "served from {url} ({error}); the calls run instead")  # fmt: skip

    def _touch(self) -> None:
        slot, t = (self.store.url, self.key), now()
        last = _touched.get(slot)
        if last is None or t - last >= TOUCH_EVERY:
            cachemarks.touch(self.store, self.key)
            _touched[slot] = t

    def changed_captured(self) -> bool:
        """Whether the call, having run, changed a captured value its key
        counts (`cachekey.captured_changed`): then its output is not kept."""
        if not captured_changed(self.spec.fn, self.base, self.digest):
            return False
        warn(not_cached_in_place(self.spec.name, "a value its closure captured or a global it reads"))
        return True

    def read_its_run(self) -> bool:
        """Whether the call, having run, read its run (`durable.current_run()`):
        then its output is not kept (`runread`)."""
        if not self.read:
            return False
        warn(
            f"step {self.spec.name} read durable.current_run() (its run id, idempotency key or "
            "attempt), so its output may be made of the run, which its cache key (its code and "
            "arguments) does not hold: it was not cached, and another run computes it again. "
            "Pass what it needs of the run as an argument to cache it"
        )
        return True

    def keep(
        self,
        value: Any,
        artifacts: list[dict[str, Any]],
        started: float,
        claim: Callable[[str], None] | None = None,
        shares: Any = None,
    ) -> tuple[Entry, Any]:
        """Store a computed value (create-only). The entry that is there
        afterwards and its value: ours, or the one another process wrote
        first (both processes go on with that one). `claim` is told a large
        value's blob before the blob is written (`stored`); `shares`: the
        parts of its arguments the value holds (`sharing.note`)."""
        rec = StepRecord(0, cachestore.KIND, self.spec.name, self.fingerprint, self.digest)
        rec.started, rec.ended, rec.artifacts = started, now(), artifacts
        rec.extra["of"] = self.spec.owner[1]  # which step of its name (`cache_info`)
        if shares is not None:
            rec.extra["shares"] = shares
        cachestore.encode(self.store, rec, value, claim)
        self.wrote = cachestore.write_entry(self.store, self.key, rec)
        if not self.wrote:
            won = cachestore.read_entry(self.store, self.key)
            theirs = self._usable(won, new=True) if won is not None else MISSING
            if won is not None and not is_missing(theirs):
                return won, theirs
            cachestore.remove(self.store, [self.key])  # unreadable: ours replaces it
            self.wrote = cachestore.write_entry(self.store, self.key, rec)
        _touched[self.store.url, self.key] = rec.extra["created"]
        return Entry(self.key, rec), value


# -- inside a run (hooks called by `_engine.step_plan`) --------------------------


def served(
    ctx: RunState, ticket: Ticket, entry: Entry, pos: Position, fp: str, digest: str
) -> StepRecord:
    """The run's record of a call served from the cache: the run's own
    identity of the call, the entry's value (a large one by reference)."""
    fence(ctx, pos)  # the blob's reference is written for the run
    rec = StepRecord(pos, "step", ticket.spec.name, fp, digest, started=now())
    _adopt(ctx, ticket, rec, entry, "hit")
    return rec


def stored(ctx: RunState, ticket: Ticket, record: StepRecord, value: Any) -> Any:
    """Store a value the run computed and point its record at the entry;
    the value the run continues with (another process's, if it won).
    Only while the run's lease holds: a holder stalled past it and taken
    over writes nothing more, in the run or in the cache. A call that
    changed its arguments in place (`steps` marked it) is not kept: a hit
    could not redo the change."""
    if record.extra.get("in_place") or ticket.changed_captured() or ticket.read_its_run():
        return value
    # The run's reference to a blob is there before the blob: a `clear` or
    # `prune` meanwhile, which lists blobs before references, keeps it.
    refer = functools.partial(_refer, ctx)
    shares = record.extra.get("shares")
    entry, value = kept_for(ctx, record.position, ticket, value, record.artifacts, record.started, refer, shares)
    _adopt(ctx, ticket, record, entry, "stored")
    return value


def kept_for(
    ctx: RunState,
    pos: Position,
    ticket: Ticket,
    value: Any,
    artifacts: list[dict[str, Any]],
    started: float,
    claim: Callable[[str], None] | None = None,
    shares: Any = None,
) -> tuple[Entry, Any]:
    """`ticket.keep` on a run's behalf (a step's position, a `loop_over`
    item, a cached step called in a step's body): only while the run's
    lease holds, checked before and again once written. An entry landing
    late (its PUT stalled with the renewals) was served after a clear: the
    one this holder wrote is taken back, at worst a miss, never a value no
    run recorded."""
    fence(ctx, pos)
    kept = ticket.keep(value, artifacts, started, claim, shares)
    try:
        fence(ctx, pos)
    except LeaseLostError:
        if ticket.wrote:
            _take_back(ticket)
        raise
    return kept


def _take_back(ticket: Ticket) -> None:
    """Remove the entry a holder wrote after losing the lease. A store error
    here must not hide the LeaseLostError that says what happened: it is
    warned about, with what to do (the entry may be served until cleared)."""
    try:
        cachestore.remove(ticket.store, [ticket.key])
    except StorageError as e:
        warn(
            f"step {ticket.spec.name}: this process lost the run's lease while its cache entry "
            f"was being written, and the entry could not be taken back ({e}); it may be served "
            f"to later calls: remove it with `durable cache clear {ticket.spec.name}`",
            RuntimeWarning,
        )


def _adopt(ctx: RunState, ticket: Ticket, rec: StepRecord, entry: Entry, how: str) -> None:
    src = entry.record
    rec.encoding, rec.value, rec.blob = src.encoding, src.value, src.blob
    rec.artifacts = list(src.artifacts)
    rec.extra["cache"] = how
    rec.extra.pop("shares", None)  # the entry's, whose value it is (another process's, if it won)
    if "shares" in src.extra:
        rec.extra["shares"] = src.extra["shares"]
    if src.blob is not None:  # the run now refers to the blob: prune keeps it
        _refer(ctx, src.blob)
        again = cachestore.read_entry(ctx.store, entry.key)
        if again is None or again.record.to_bytes() != src.to_bytes():  # (lists read as tuples)
            # Removed before that reference was written (`cache clear`, `prune`): its
            # sweep may not see the reference and delete the blob. The run keeps its own.
            # An entry written since (the call computed again) vouches for nothing:
            # that sweep saw neither it nor the reference (even when it names this blob).
            rec.encoding, rec.value, rec.blob = None, None, None


def _refer(ctx: RunState, blob: str) -> None:
    ref = cachestore.ref_key(blob, ctx.workflow, ctx.run_id)
    if (ctx.store.url, ref, ctx.created) not in _refs:
        ctx.store.create(ref, b"")
        _refs.add((ctx.store.url, ref, ctx.created))


def ticket_for(
    store: Store,
    spec: StepSpec,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    fp: str | None,
    held: str = "",
) -> Ticket | None:
    """`held`: the digest of the run's arguments the step reads other than
    by its own arguments (`bound.with_held`), which join its key: a step
    reading what the body filled from `k` was served another run's output."""
    assert spec.cache is not None
    fn, (seen, written) = spec.fn, spec.writes[0]  # one tuple: read whole by any thread
    code = fn.__code__ if type(fn) is types.FunctionType else None
    if code is None or seen is not code:  # a partial, or a new `__code__` (%autoreload)
        written = state_writes(fn)  # `by_code` keeps it too: here without a call
        spec.writes[0] = (code, written)
    if written:  # a hit could not redo the write: neither served nor kept
        tell_written(spec, written)
        return None
    digest, call, base = call_key(spec.cache, spec.signature, args, kwargs, spec.name, spec.fn)
    digest = value_digest((digest, held)) if held and digest is not None else digest
    digest = with_named(spec.fn, digest, args, kwargs) if digest is not None else None  # (`named`)
    if digest is None:  # a secret, or no reproducible digest: run it, keep nothing
        tell_uncached(spec, args, kwargs)
        return None
    if fp is None:
        fp = _fresh_fingerprint(spec)
        if fp is None:
            return None
    key = cachestore.entry_key(spec.name, fp, digest)
    return Ticket(store, spec, key, fp, digest, call, base)


def _fresh_fingerprint(spec: StepSpec) -> str | None:
    """As a run would compute it at its start, never the decoration-time
    value (a helper or constant may have been rebound since). A source
    file edited since import is not looked for: the code that runs is the
    one imported, whose entries these are; a run's start reports the edit."""
    try:
        return refingerprint(spec, files=False).value
    except DurableError as e:
        warn(f"{e}; step {spec.name} ran without its cache")
        return None
