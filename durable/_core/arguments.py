"""A run's arguments: merged from the defaults, the recorded ones, the call's
and resume overrides; encoded into the manifest (what cannot be is left
out); one digest per argument, compared with the recorded ones; and the run
id a call derives from them."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from .._calls import an_option
from .._errortext import NO_DIGEST, near
from .._storage import codec
from .._storage.base import Store
from .._storage.keys import check_key_part
from .._storage.manifest import manifest_arguments
from .._storage.records import RunRecord
from .._valuetext import preview_of
from ..errors import ConfigurationError
from .changed import why_no_digest
from .identity import (
    MAX_DEPTH,
    Undigestable,
    _arguments_digest,
    fresh_token,
    is_token,
    value_digest,
)
from .signature import fill_defaults, signature_of


def merge_arguments(
    fn: Callable[..., Any],
    recorded: Mapping[str, Any],
    given: inspect.BoundArguments | None,
    overrides: Mapping[str, Any],
    *,
    restart: bool = False,
    digests: Mapping[str, str] | None = None,
    checked: inspect.Signature | None = None,
) -> inspect.BoundArguments:
    """defaults < recorded < given now < overrides; every parameter without
    a default must have a value (else nothing runs and nothing is deleted).
    An override of a dict parameter, and one for a `**kwargs` parameter,
    merges by key into the value it overrides (see `_override`). `digests`:
    the run's argument digests, when resuming from the `recorded` ones."""
    # A call bound just now was bound against the signature as it is now,
    # and `checked` is what `check_overrides` gave for these overrides just
    # now: resolving it again would cost a second check of what it is made of.
    if given is not None and not overrides:
        sig = given.signature
    else:
        sig = checked if checked is not None else check_overrides(fn, overrides)
    merged = dict(recorded)
    if given is not None:
        merged.update(given.arguments)
    # The run's arguments it could not record: an override cannot be merged into them.
    unknown = {n: d for n, d in (digests or {}).items() if n not in merged}
    touched = {_override(sig, merged, name, value) for name, value in overrides.items()}
    _merged_blind(fn, sig, merged, touched & unknown.keys(), overrides, unknown)
    bound = inspect.BoundArguments(sig, merged)  # type: ignore[arg-type,unused-ignore]
    # Under a wrapper that fills what a call leaves out (a `Forwarded`
    # signature), the wrapper's default is the one the body gets, not the
    # wrapped function's: given both, the call fails ("multiple values").
    fill_defaults(bound)
    missing = [p.name for p in sig.parameters.values() if p.name not in bound.arguments
               and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]  # fmt: skip
    if digests:
        missing += _left_out(bound, digests, {*recorded, *touched}, missing)
    if missing:
        new = [n for n in missing if digests is not None and n not in digests]  # renamed or added since
        why = "restart=True starts from this call's arguments and the defaults only" if restart else (
            f"the run recorded no argument {', '.join(new)}, only {', '.join(digests or ()) or 'none'} (a parameter "
            "renamed or added since it started?)" if new else "the run did not record them (they could not be serialised)")  # fmt: skip
        raise ConfigurationError(
            f"{getattr(fn, '__qualname__', fn)} needs argument(s) {', '.join(missing)}: {why}. "
            "Pass them to the call (or as resume overrides). Nothing was executed."
        )
    return bound


def _left_out(
    bound: inspect.BoundArguments, digests: Mapping[str, str], have: set[str], missing: list[str]
) -> list[str]:
    """The run's arguments a resume has no value for: left out of the
    record (they could not be serialised) and not passed again. The
    parameter's default stands for one only when the run was called with
    it (the same digest); any other value would run another call than the
    one the run made, under the run's id."""
    out = []
    for name, recorded in digests.items():
        if name in have or name in missing or name not in bound.signature.parameters:
            continue
        if name not in bound.arguments or value_digest(bound.arguments[name]) != recorded:
            out.append(name)
    return out


def _override(sig: inspect.Signature, merged: dict[str, Any], name: str, value: Any) -> str:
    """The one merge rule of resume overrides, per key: defaults < recorded
    < overrides. A name that is no named parameter goes into the `**kwargs`
    dict (as in a call); a dict given for a dict parameter updates it key by
    key (one level deep), so overriding one setting keeps the others.
    Returns the parameter it set."""
    param = sig.parameters.get(name)
    if param is None or param.kind is param.VAR_KEYWORD:
        var = next(p.name for p in sig.parameters.values() if p.kind is p.VAR_KEYWORD)
        merged[var] = {**merged.get(var, {}), name: value}
        return var
    base = merged.get(name, param.default)
    if isinstance(value, dict) and isinstance(base, dict):
        value = {**base, **value}
    merged[name] = value
    return name


def _merged_blind(
    fn: Callable[..., Any],
    sig: inspect.Signature,
    merged: dict[str, Any],
    names: set[str],
    overrides: Mapping[str, Any],
    unknown: Mapping[str, str],
) -> None:
    """Refuse a merge of overrides into an argument the run could not
    record (`_override` merged them into the parameter's default, or into
    no `**kwargs` at all): the result mixes in values the run was never
    called with. It stands when the default it was merged into is the
    run's value (its recorded digest); the override replaces it when it is
    that value whole."""
    for name in sorted(names):
        param = sig.parameters[name]
        var = param.kind is param.VAR_KEYWORD
        base: Any = {} if var else param.default
        if not var and not (isinstance(base, dict) and isinstance(overrides.get(name), dict)):
            continue  # replaced whole, not merged
        if value_digest(base) == unknown[name]:
            continue  # called with the default: merged into it
        whole = merged[name] if var else overrides[name]  # no `**kwargs` recorded: only the overrides
        # Without a digest (a lock in it) it cannot be told the run's: it is
        # the value given, as any other argument the run could not record is.
        if is_token(unknown[name]) or value_digest(whole) == unknown[name]:
            merged[name] = whole  # the run's very value, not merged into the default
            continue
        given = "keyword arguments" if var else "a dict"
        raise ConfigurationError(
            f"{getattr(fn, '__qualname__', fn)}: {given} given for {name} on resume cannot be merged "
            f"into the run's value of {name}: the run could not record it (it could not be "
            f"serialised), and the default is not what the run was called with. Pass {name} "
            "whole, as the run was called with it (or restart). Nothing was executed."
        )


def check_overrides(fn: Callable[..., Any], overrides: Mapping[str, Any]) -> inspect.Signature:
    sig = signature_of(fn)
    if not overrides or any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return sig  # every name is an argument of a `**kwargs` workflow
    unknown = [k for k in overrides if k not in sig.parameters]
    if unknown:
        # A run suspended at wait_for(name) says "resume with name": the
        # answer is no argument, and resume(run_id, name=...) lands here.
        # ...or one of resume's and fork's own keywords, or a parameter, mistyped.
        meant = near(unknown[0], [*sig.parameters, "inputs", "new_run_id", "mutate"], cutoff=0.8)
        said = an_option(getattr(fn, "__name__", "wf"), unknown, ".resume(...)")  # `resume(r, restart=True)`
        raise ConfigurationError(
            f"{getattr(fn, '__qualname__', fn)} has no parameter(s) {', '.join(unknown)}; "
            f"it takes {', '.join(sig.parameters) or 'no parameter'}{said + '.' if said else f'; did you mean {meant[0]}=?' if meant else '.'} "
            f"Nothing was executed. If {unknown[0]!r} "
            f"is the name of a durable.wait_for(), give its answer as "
            f"inputs={{{unknown[0]!r}: ...}}."
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
    return manifest_arguments(store, manifest)  # one reader, shared with run management


def argument_digests(bound: inspect.BoundArguments) -> dict[str, str]:
    """One digest per argument (defaults applied), by the one identity rule."""
    return {name: value_digest(value) for name, value in bound.arguments.items()}


def arguments_digest(digests: Mapping[str, str]) -> str:
    """One digest of all the run's arguments (`argument_digests`); a fresh
    token when one of them has none: they cannot be told the same again."""
    if any(is_token(d) for d in digests.values()):
        return fresh_token()
    return value_digest(sorted(digests.items()))


def inherited(store: Store, manifest: RunRecord) -> tuple[dict[str, Any], dict[str, str] | None]:
    """What a resume starts from: the run's recorded arguments, and its
    argument digests (`argument_digests`), which tell those it could not
    record (`merge_arguments`), but for those it was called with at their
    default (`at_default`: the default stands for them); None for a run
    recorded without them (an older version)."""
    digests = manifest.extra.get("arg_digests")
    if not isinstance(digests, dict):
        return decode_arguments(store, manifest), None
    defaulted = manifest.extra.get("defaulted") or ()
    kept = {name: d for name, d in digests.items() if name not in defaulted}
    return decode_arguments(store, manifest), kept


def at_default(bound: inspect.BoundArguments) -> list[str]:
    """The arguments a run was called with at their parameter's default that
    are not plain data (a client, an executor): the run may not record
    them, nor tell them the same by digest, and a resume fills them with
    the default again (`inherited`)."""
    params = bound.signature.parameters
    return [
        name for name, value in bound.arguments.items()
        if name in params and value is params[name].default and not codec.is_plain(value)
    ]  # fmt: skip


def recorded_arguments(store: Store, manifest: RunRecord) -> dict[str, Any]:
    """The run's recorded arguments for a message; {} when unreadable."""
    try:
        return decode_arguments(store, manifest)
    except Exception:  # a preview must never hide the refusal it explains
        return {}


def changed_arguments(
    manifest: RunRecord,
    digests: Mapping[str, str],
    bound: inspect.BoundArguments,
    recorded_now: Callable[[], Mapping[str, Any]],
) -> dict[str, str]:
    """Arguments of this call that differ from the run's, as "old -> new".
    A run recorded without digests (an older version) differs in every
    argument: its identity cannot be established, so it is not the same call."""
    old = manifest.extra.get("arg_digests")
    if not isinstance(old, dict):
        old = {}
    differ = [n for n in sorted(set(old) | set(digests)) if n not in old or old[n] != digests.get(n)]
    recorded = recorded_now() if differ else {}
    out: dict[str, str] = {}
    for name in differ:
        if is_token(digests.get(name)):  # a lock, a socket: no call is the same again
            value = bound.arguments.get(name)
            out[name] = (
                f"{NO_DIGEST} ({preview_of(value, 60)}{why_no_digest(value)}): no call with it is ever "
                "the same as the recorded one (fail closed); pass what identifies it (a key, a path, a "
                "version string) and build the object inside a step"
            )
            continue
        before = preview_of(recorded[name]) if name in recorded else "(not recorded)"
        if name not in old:
            before += " (recorded without an argument digest)"
        after = preview_of(bound.arguments[name]) if name in bound.arguments else "(none)"
        if after == before:  # what differs does not show: a function's code, hidden state
            after += " (looks the same, but its content differs: its code or its state)"
        out[name] = f"{before} -> {after}"
    return out


def derive_run_id(
    workflow: str, chosen: str | Callable[..., str] | None, given: inspect.BoundArguments
) -> str:
    """The explicit id, the id the `run_id=` callable gives, or
    `<workflow>-<12 hex>` over the arguments with defaults applied."""
    if callable(chosen):
        try:
            made = chosen(*given.args, **given.kwargs)
        except TypeError as e:  # `lambda day, **_:` for (day, extra): said as the option's
            shown = ", ".join(f"{k}={preview_of(v, 60)}" for k, v in given.arguments.items())
            raise ConfigurationError(
                f"the run_id= function of {workflow} raised TypeError: {e}; it is called as "
                f"the workflow is, with its arguments in order: ({shown}). Nothing was run"
            ) from e
        try:
            return check_key_part("run id", made)
        except ConfigurationError as e:  # an id nobody typed: say what made it
            raise ConfigurationError(f"the run_id= function of {workflow}, given this call's arguments, gave {e}") from None
    if chosen is not None:
        return check_key_part("run id", chosen)
    try:
        digest = run_id_digest(given)
    except Undigestable as e:
        raise ConfigurationError(
            f"cannot derive a run id for {workflow}: {e}. "
            f"Pass one explicitly: {workflow}.with_options(run_id='...')(...)"
        ) from None
    return f"{workflow}-{digest[:12]}"


def run_id_digest(bound: inspect.BoundArguments) -> str:
    """The digest a derived run id is made of: the same as `call_digest` of
    that call, without the code of the user's functions and classes among
    the arguments: the same call after a fix to that code resumes its run,
    where the calls given that code count as changed (by the run's policy),
    instead of starting a new run that executes every step again. Unlike a
    step's digest this one raises Undigestable: a random token would give a
    new run id on every call, so the workflow could never be resumed; the
    caller asks for an explicit run id instead."""
    full = inspect.BoundArguments(bound.signature, dict(bound.arguments))
    # The defaults the body is called with (`merge_arguments`): `f(1)` and
    # `f(x=1)` are one run; none through a wrapper that fills its own.
    fill_defaults(full)
    try:
        return _arguments_digest(list(full.arguments.items()), code=False)
    except RecursionError:
        raise Undigestable(f"nested deeper than {MAX_DEPTH} levels") from None
