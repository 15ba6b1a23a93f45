"""A workflow's definition (its fingerprint: the body and every step it
reaches) and the definition check at a run's start: what changed since the
run was recorded, named step by step (renames paired), and the policy the
run continues under (refused, re-run from the change, or rebased)."""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from .._errortext import warn
from .._fingerprint.analysis import SAID
from .._fingerprint.derived import made_in
from .._fingerprint.fingerprint import IDENTITY, describe_change
from .._fingerprint.heads import ANY
from .._fingerprint.said import made_by_calls
from .._frozen import Compared, dataclass
from .._storage.records import RunRecord
from ..errors import (
    DefinitionChangedError,
)
from .rules import KEY as RULES
from .rules import rules_note

BODY_KEY = "(workflow body)"


@dataclass
class Definition(Compared):
    """A workflow's definition: its fingerprint and its steps'."""

    fingerprint: str
    steps: dict[str, str]
    parts: dict[str, dict[str, str]] = field(default_factory=dict)
    # Per step object (id of its StepSpec): two steps may share a name (one
    # factory, two modules) and must still be compared by their own code.
    by_spec: dict[int, str] = field(default_factory=dict)
    # Why a listed step counts although the body never names it (None: it
    # does, or it is not known); asked only when a change is reported.
    why_listed: Callable[[str], str | None] | None = None
    # The steps it reaches that bind an object (`durable.step(model.predict)`),
    # and a digest of what they bind now: an argument of each of their calls,
    # compared as they replay, never by the fingerprint. A completed run
    # whose digest differs replays its body (`completed_outcome`).
    binding: list[Any] = field(default_factory=list)
    bound: str | None = None
    # The functions of the steps it reaches: what they write that another
    # step reads counts in its caller's record of it (a child run's: `child`).
    writers: list[Any] = field(default_factory=list)
    # The function of each step (and the body), for a refusal's words only
    # (`made_by_calls`: `START = time.time()` may differ in each process).
    fns: dict[str, Any] = field(default_factory=dict)
    # Per step, what each step it reaches stamps in it without the contents of
    # globals (`Fingerprint.stamps`): this process's, for `_only_filled` alone.
    stamps: dict[str, Mapping[str, tuple[str, str, Mapping[str, str]]]] = field(default_factory=dict)


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
            was, now = old.step_parts.get(name, {}), new.parts.get(name, {})
            consts = [k[6:] for k in now if k.startswith("const:") and was.get(k) not in (None, now[k])]
            why = describe_change(was, now, made_by_calls(new.fns.get(name), consts) if consts else None)
            if why == "no change":  # a run recorded before identities were kept
                why = "identity changed (module name or name=)"
            out[name] = f"{why}: {before} -> {after}"
    _pair_renames(old, new, out)
    for name in out:
        note = new.why_listed(name) if new.why_listed is not None else None
        if note:
            out[name] += f" ({note})"
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
    # Digests said beside the parts name what changed; a run recorded before they were kept has none.
    return {k: v for k, v in (parts or {}).items() if k != IDENTITY and not k.startswith(SAID)}


# Marks a run whose attempts were all refused, failed, interrupted,
# suspended or cancelled before recording anything (`lifecycle.refused`,
# `lifecycle.made_nothing`): no code made it, so the definition its manifest
# names is not its own, and other code (put back, or fixed) runs it. `start`
# clears it.
UNMADE = "unmade"


def choose_policy(
    manifest: RunRecord | None, definition: Definition, *, on_change: str, rebase: bool
) -> str:
    """Apply the definition check; return the per-position policy."""
    policy = "rebase" if rebase else on_change
    if manifest is None or manifest.fingerprint == definition.fingerprint or manifest.extra.get(UNMADE):
        return policy
    changed = changed_steps(manifest, definition)
    if policy == "refuse":
        raise DefinitionChangedError(
            manifest.workflow,
            manifest.run_id,
            manifest.fingerprint,
            definition.fingerprint,
            changed,
            note=rules_note(manifest.extra.get(RULES), manifest.run_id),
        )
    if policy == "rebase":
        warn(
            f"run {manifest.run_id!r}: definition changed ({manifest.fingerprint} -> "
            f"{definition.fingerprint}); replaying recorded steps anyway (rebase). "
            f"Changed: {', '.join(changed) or 'workflow body'}",
        )
    return policy


# Per workflow function (held: its id is not reused while listed): the
# definitions its calls in this process left behind, each with the one that
# call started from.
_LEFT: dict[int, tuple[object, dict[str, Definition]]] = {}


def left_behind(fn: object, start: Definition, now_of: Callable[[], Definition]) -> None:
    """After a call's body ran: `now_of()` is what it left. Its body may have
    filled globals that count by their contents (`set_rate(rate)` storing
    into a dict the module also clears in place), so that a resume in this
    process would count them as changed, while one in a new process, where
    import leaves them as this call found them, would not (`as_left`).
    Only when what changed is the contents of globals the body fills: a
    step that changed what it reads (a closure cell it rebinds) is a change."""
    filled = set(made_in(fn).homes) if isinstance(fn, types.FunctionType) else set()
    if not filled:
        return
    try:
        now = now_of()
    except Exception:  # nothing kept: the next call counts what it finds (fail closed)
        return
    if now.fingerprint == start.fingerprint or not _only_filled(start, now, filled):
        return
    if len(_LEFT) >= 256:
        _LEFT.clear()
    held, left = _LEFT.setdefault(id(fn), (fn, {}))
    if held is fn and len(left) < 16:
        left.setdefault(now.fingerprint, start)


def _only_filled(start: Definition, now: Definition, filled: set[str]) -> bool:
    """Whether every step (and the body) that differs differs only in the
    contents of globals of those names (`now:RATES`), its own or those of
    the steps it reaches (`rated` calling `scaled`, which reads RATES)."""
    if now.by_spec.keys() != start.by_spec.keys() or now.steps.keys() != start.steps.keys():
        return False
    # A constant too, of a module the body fills any global of (`globals().update(...)`).
    kinds = ("now", "const") if ANY in filled else ("now",)

    def fits(part: str) -> bool:
        kind, _, name = part.partition(":")
        base = name.split("[")[0].rpartition(".")[2]
        return kind in kinds and (base in filled or ANY in filled)

    for key in (k for k in now.steps if now.steps[k] != start.steps[k]):
        old, new = start.parts.get(key, {}), now.parts.get(key, {})
        # Not the attributes' digests beside a `now:` part: they name, they do not count.
        differ = [p for p in old.keys() | new.keys() if old.get(p) != new.get(p) and not p.startswith(SAID)]
        for part in differ or [""]:  # none: a change the parts do not tell
            was, is_ = start.stamps.get(key, {}).get(part), now.stamps.get(key, {}).get(part)
            if fits(part) or (was is not None and is_ is not None and _stamp_filled(was, is_, fits)):
                continue
            if part.startswith("helper:") and _said_filled(old.get(SAID + part), new.get(SAID + part), fits):
                continue
            return False
    return True


def _said_filled(was: str | None, now: str | None, fits: Callable[[str], bool]) -> bool:
    """Whether a helper's parts, as said beside it (`helper_said`: a digest
    of each), differ only in contents `fits` allows (`scale(n)` reading
    RATES); not when they are not said, or say no difference."""
    try:
        before, after = json.loads(was or "null"), json.loads(now or "null")
    except ValueError:
        return False
    if not isinstance(before, dict) or not isinstance(after, dict):
        return False
    differ = [k for k in before.keys() | after.keys() if before.get(k) != after.get(k)]
    return bool(differ) and all(fits(k) for k in differ)


def _stamp_filled(
    was: tuple[str, str, Mapping[str, str]], now: tuple[str, str, Mapping[str, str]], fits: Callable[[str], bool]
) -> bool:
    """Whether a step's stamp changed only by contents `fits` allows: the
    same without them, each that differs one of those (`stepgraph.Stamp`);
    not when nothing there tells the change."""
    held, is_held = was[2], now[2]
    differ = [k for k in held.keys() | is_held.keys() if held.get(k) != is_held.get(k)]
    return was[1] == now[1] and bool(differ) and all(fits(k.rpartition("\0")[2]) for k in differ)


def as_left(fn: object, found: Definition, manifest: RunRecord | None) -> Definition:
    """For a resume of a run recorded with the definition a call of this
    process started from, when `found` is exactly what that call left
    behind (the same code and step objects, every global as its body left
    it): that definition, as a resume in a new process finds it. Anything
    changed since makes `found` another definition, which counts as it is;
    and a new run records what it finds (its steps run with what the last
    call left)."""
    held, left = _LEFT.get(id(fn), (None, {}))
    start = left.get(found.fingerprint) if held is fn else None
    if start is None or manifest is None or start.fingerprint != manifest.fingerprint:
        return found
    if start.by_spec.keys() != found.by_spec.keys() or start.steps.keys() != found.steps.keys():
        return found
    return Definition(
        start.fingerprint, start.steps, start.parts, start.by_spec, found.why_listed, found.binding, found.bound,
        fns=found.fns, stamps=start.stamps,
    )
