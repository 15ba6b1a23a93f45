"""One run's life: lease, manifest, definition check, argument merge,
loading records, and the final status. Used by `_workflow` for every call."""

from __future__ import annotations

import inspect
import time
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _codec
from ._context import RunContext
from ._engine import now
from ._errors import (
    ConfigurationError,
    CorruptRecordError,
    DefinitionChangedError,
    IntegrityError,
    RunLockedError,
)
from ._fingerprint import IDENTITY, describe_change
from ._lease import Lease
from ._manifest import pack_manifest, unpack_manifest
from ._records import (
    Position,
    RunRecord,
    StepRecord,
    format_position,
    item_of,
    load_stored,
    parse_name,
    unseal,
)
from ._store import Store

BODY_KEY = "(workflow body)"


@dataclass
class Definition:
    fingerprint: str
    steps: dict[str, str]
    parts: dict[str, dict[str, str]] = field(default_factory=dict)
    # Per step object (id of its StepSpec): two steps may share a name (one
    # factory, two modules) and must still be compared by their own code.
    by_spec: dict[int, str] = field(default_factory=dict)


def acquire(
    store: Store, workflow: str, run_id: str, wait: float | None, ttl: float = 30.0
) -> Lease:
    deadline = time.monotonic() + (wait or 0.0)
    while True:
        try:
            return store.acquire(workflow, run_id, ttl)
        except RunLockedError:
            if time.monotonic() >= deadline:
                raise
        # Waiting on another process's lease: polling is the only signal there is.
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))


def read_manifest(store: Store, workflow: str, run_id: str) -> RunRecord | None:
    raw = store.load_manifest(workflow, run_id)
    if raw is None:
        return None
    name = f"{workflow}/{run_id}/run"
    manifest = unpack_manifest(raw, store.signing_key, run_id=run_id, name=name)
    if (manifest.workflow, manifest.run_id) != (workflow, run_id):
        # A valid (even signed) manifest copied from another run.
        why = f"it belongs to run {manifest.run_id!r} of {manifest.workflow!r}"
        raise CorruptRecordError(run_id, None, name, why)
    return manifest


def existing_run(store: Store, workflow: str, run_id: str, *, restart: bool) -> RunRecord | None:
    """The run's manifest. With `restart` (the way out a damaged or
    unverifiable manifest's error names), one that cannot be read or decoded
    counts as absent: restarting discards it anyway."""
    try:
        return read_manifest(store, workflow, run_id)
    except (CorruptRecordError, IntegrityError):
        if not restart:
            raise
        return None


def write_manifest(store: Store, manifest: RunRecord) -> None:
    manifest.updated = now()
    data = pack_manifest(manifest, store.signing_key)
    store.save_manifest(manifest.workflow, manifest.run_id, data)


def changed_steps(old: RunRecord, new: Definition) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in sorted(set(old.steps) | set(new.steps)):
        before, after = old.steps.get(name), new.steps.get(name)
        if before == after:
            continue
        if before is None:
            out[name] = f"added ({after})"
        elif after is None:
            out[name] = f"removed (was {before})"
        else:
            why = describe_change(old.step_parts.get(name, {}), new.parts.get(name, {}))
            if why == "no change":  # a run recorded before identities were kept
                why = "identity changed (module name or name=)"
            out[name] = f"{why}: {before} -> {after}"
    _pair_renames(old, new, out)
    return out


def _pair_renames(old: RunRecord, new: Definition, out: dict[str, str]) -> None:
    """A step only in the old definition and one only in the new, with the
    same code, constants and helpers: one step under a new `name=`."""
    gone = [n for n in old.steps if n not in new.steps and _what(old.step_parts.get(n))]
    for name in (n for n in new.steps if n not in old.steps):
        twin = next(
            (g for g in gone if _what(old.step_parts.get(g)) == _what(new.parts.get(name))), None
        )
        if twin is not None:
            gone.remove(twin)
            del out[twin]
            out[name] = f"renamed ({twin} -> {name}): {old.steps[twin]} -> {new.steps[name]}"


def _what(parts: Mapping[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (parts or {}).items() if k != IDENTITY}


def choose_policy(
    manifest: RunRecord | None, definition: Definition, *, on_change: str, rebase: bool
) -> str:
    """Apply the definition check; return the per-position policy."""
    policy = "rebase" if rebase else on_change
    if manifest is None or manifest.fingerprint == definition.fingerprint:
        return policy
    changed = changed_steps(manifest, definition)
    if policy == "refuse":
        raise DefinitionChangedError(
            manifest.workflow,
            manifest.run_id,
            manifest.fingerprint,
            definition.fingerprint,
            changed,
        )
    if policy == "rebase":
        warnings.warn(
            f"run {manifest.run_id!r}: definition changed ({manifest.fingerprint} -> "
            f"{definition.fingerprint}); replaying recorded steps anyway (rebase). "
            f"Changed: {', '.join(changed) or 'workflow body'}",
            stacklevel=4,
        )
    return policy


def merge_arguments(
    fn: Callable[..., Any],
    recorded: Mapping[str, Any],
    given: inspect.BoundArguments | None,
    overrides: Mapping[str, Any],
    *,
    restart: bool = False,
) -> inspect.BoundArguments:
    """defaults < recorded < given now < overrides; every parameter without
    a default must have a value (else nothing runs and nothing is deleted)."""
    sig = check_overrides(fn, overrides)
    merged = dict(recorded)
    if given is not None:
        merged.update(given.arguments)
    merged.update(overrides)
    bound = inspect.BoundArguments(sig, merged)  # type: ignore[arg-type,unused-ignore]
    bound.apply_defaults()
    missing = [
        p.name
        for p in sig.parameters.values()
        if p.name not in bound.arguments
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if missing:
        why = (
            "restart=True starts from this call's arguments and the defaults only"
            if restart
            else "the run did not record them (they could not be serialised)"
        )
        raise ConfigurationError(
            f"{getattr(fn, '__qualname__', fn)} needs argument(s) {', '.join(missing)}: {why}. "
            "Pass them to the call (or as resume overrides). Nothing was executed."
        )
    return bound


def check_overrides(fn: Callable[..., Any], overrides: Mapping[str, Any]) -> inspect.Signature:
    sig = inspect.signature(fn)
    unknown = [k for k in overrides if k not in sig.parameters]
    if unknown:
        raise ConfigurationError(
            f"{getattr(fn, '__qualname__', fn)} has no parameter(s) {', '.join(unknown)}; "
            f"it takes {', '.join(sig.parameters)}. Nothing was executed."
        )
    return sig


def encode_arguments(
    bound: inspect.BoundArguments, *, allow_pickle: bool = True
) -> tuple[str, bytes]:
    """Record the arguments for resume; ones that cannot be serialised (a
    lock, an open socket; anything but plain data under allow_pickle=False)
    are left out and must be passed again on resume."""
    arguments = dict(bound.arguments)
    try:
        return _codec.encode_value(arguments, allow_pickle=allow_pickle)
    except Exception:
        keep = {}
        for name, value in arguments.items():
            try:
                _codec.encode_value(value, allow_pickle=allow_pickle)
            except Exception:
                continue
            keep[name] = value
        return _codec.encode_value(keep, allow_pickle=allow_pickle)


def decode_arguments(store: Store, manifest: RunRecord) -> dict[str, Any]:
    key = f"{manifest.workflow}/{manifest.run_id}/run"
    where = (manifest.workflow, manifest.run_id)
    args, blob = manifest.args, manifest.args_blob
    value = load_stored(store, where, manifest.args_encoding, args, blob, position=None, name=key)
    if not isinstance(value, dict):
        raise CorruptRecordError(manifest.run_id, None, key, "its arguments are not a mapping")
    return value


def load_context(store: Store, workflow: str, run_id: str, policy: str) -> RunContext:
    ctx = RunContext(run_id=run_id, workflow=workflow, store=store, policy=policy)
    for name, raw in store.load_records(workflow, run_id).items():
        parsed = parse_name(name)
        if parsed is None:
            item = item_of(name)
            if item is not None:  # a checkpointed loop_over item, decoded by its block
                body = _unseal(store, raw, run_id, item[0], name)
                ctx.items.setdefault(item[0], {})[item[1]] = body
            continue
        head, pos = parsed
        if head == "steps":  # most records
            ctx.records[pos] = _step_record(store, raw, run_id, pos, name)
        elif head == "timers":
            ctx.timers[pos] = float(_codec.unpack(_unseal(store, raw, run_id, pos, name)))
        else:
            ctx.failures[pos] = _step_record(store, raw, run_id, pos, name).attempts
    return ctx


def _step_record(store: Store, raw: bytes, run_id: str, pos: Position, name: str) -> StepRecord:
    body = _unseal(store, raw, run_id, pos, name)
    try:
        rec = StepRecord.from_bytes(body)
    except Exception as e:
        raise CorruptRecordError(run_id, pos, name, f"undecodable: {e}") from e
    if rec.position != pos:  # a valid record moved to another position
        why = f"it holds position {format_position(rec.position)}"
        raise CorruptRecordError(run_id, pos, name, why)
    return rec


def _unseal(store: Store, raw: bytes, run_id: str, pos: Position | None, name: str) -> bytes:
    return unseal(raw, store.signing_key, run_id=run_id, position=pos, name=name)


def error_summary(exc: BaseException) -> dict[str, str]:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
    return {"type": type(exc).__qualname__, "message": str(exc)[:2000], "traceback": tb[-4000:]}
