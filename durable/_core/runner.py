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

from .._fingerprint.fingerprint import IDENTITY, describe_change
from .._storage import codec
from .._storage.base import Store
from .._storage.keys import Position, format_position, item_of, manifest_key, parse_name
from .._storage.lease import Lease
from .._storage.manifest import read_manifest
from .._storage.records import RunRecord, StepRecord, load_stored, unseal
from ..errors import (
    ConfigurationError,
    CorruptRecordError,
    DefinitionChangedError,
    IntegrityError,
    RunLockedError,
)
from .context import RunState

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
        return codec.encode_value(arguments, allow_pickle=allow_pickle)
    except Exception:
        keep = {}
        for name, value in arguments.items():
            try:
                codec.encode_value(value, allow_pickle=allow_pickle)
            except Exception:
                continue
            keep[name] = value
        return codec.encode_value(keep, allow_pickle=allow_pickle)


def decode_arguments(store: Store, manifest: RunRecord) -> dict[str, Any]:
    key = manifest_key(manifest.workflow, manifest.run_id)
    where = (manifest.workflow, manifest.run_id)
    args, blob = manifest.args, manifest.args_blob
    value = load_stored(store, where, manifest.args_encoding, args, blob, position=None, name=key)
    if not isinstance(value, dict):
        raise CorruptRecordError(manifest.run_id, None, key, "its arguments are not a mapping")
    return value


def load_context(store: Store, workflow: str, run_id: str, policy: str) -> RunState:
    ctx = RunState(run_id=run_id, workflow=workflow, store=store, policy=policy)
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
            ctx.timers[pos] = float(codec.unpack(_unseal(store, raw, run_id, pos, name)))
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
