"""What changed between a step's recorded parts and its parts now, in
words (`describe_change`), for a refusal: "code changed", "constant PROMPT
changed", "helper m.clean changed", the attribute of a global that differs
(`said`), the other modules whose code sets what a step reads.

Pure standard library."""

from __future__ import annotations

import json
from collections.abc import Mapping

from .analysis import SAID, UNHASHED, WHERE
from .builtnames import changed_modules
from .said import anew_advice, said_detail
from .values import hash_tokens

#: A part a workflow's definition records for each step (never hashed: the
#: identity is hashed by itself), so that a refusal can say "renamed".
IDENTITY = "identity"
_KINDS = {"const": "constant", "global": "global", "helper": "helper", "step": "step", "now": "the contents of"}
_GAINED = {
    "code": "source",
    "defaults": "default values",
    "closure": "closure",
    "bound": "bound arguments (functools.partial)",
    "made": "the statement that made it",
}
_WHOLE = {
    "code": "code changed",
    "defaults": "default values changed",
    "closure": "closure values changed",
    "bound": "bound arguments changed",
    "made": "the statement that made it changed",
}


def describe_change(
    old_parts: Mapping[str, str], new_parts: Mapping[str, str], made: Mapping[str, str] | None = None
) -> str:
    """What kind of change turned `old_parts` into `new_parts`, in words:
    "code changed", "constant PROMPT changed", "helper m.clean changed",
    "version changed ('1' -> '2')", "renamed (m.a -> b)", ... joined with
    "; ". `made`: the statement that made each constant by a call (`made_by_calls`)."""
    old_id, new_id = old_parts.get(IDENTITY), new_parts.get(IDENTITY)
    said = [f"renamed ({old_id} -> {new_id})" if old_id and new_id and old_id != new_id else ""]
    if "version" in old_parts or "version" in new_parts:
        said.append(_version_change(old_parts.get("version"), new_parts.get("version")))
    else:
        keys = [k for k in _ordered(old_parts, new_parts) if not _own_def(k, old_parts, new_parts)]
        said += [
            _describe_key(k, old_parts.get(k), new_parts.get(k), made or {})
            + _helper_detail(k, old_parts.get(SAID + k), new_parts.get(SAID + k))
            + (changed_modules(old_parts.get(SAID + k), new_parts.get(SAID + k)) if k.startswith("built-names:") else "")
            for k in keys
        ]
        said += [_describe_where(k, old_parts.get(k), new_parts.get(k)) for k in _wheres(old_parts, new_parts)]
        said.append(said_detail(old_parts, new_parts))  # `SETTINGS.started differs`
        said.append(anew_advice(made or {}))  # `START = time.time()`
    return "; ".join(s for s in said if s) or "no change"


def _own_def(key: str, old: Mapping[str, str], new: Mapping[str, str]) -> bool:
    """A global whose one binding statement is the step's own `def` (a list
    its body appends to, `seen.append(x)`, bound in no statement that can be
    read: another notebook cell): its digest is that of the step's code, on
    both sides (checked, not assumed), so its change is the code change,
    said already; naming it too read as a second change."""
    before, after = old.get("code"), new.get("code")
    return (
        key.startswith("global:") and before is not None and after is not None
        and old.get(key) == hash_tokens([before]) and new.get(key) == hash_tokens([after])
    )  # fmt: skip


def helper_said(parts: Mapping[str, str]) -> str:
    """A short digest of each part of a helper that reads more than its code
    (a constant, a global, a closure), kept beside the digest of the whole,
    never hashed: so that a refusal names which changed. "" for code alone."""
    own = {k: v[:10] for k, v in parts.items() if not k.startswith(UNHASHED)}
    return json.dumps(own, sort_keys=True) if set(own) - {"code"} else ""


def _helper_detail(key: str, old: str | None, new: str | None) -> str:
    """" (constant SCALE changed)" when a helper's code is the same and what
    it reads is not; "" when its code changed (said enough) or not told."""
    before, after = _said_parts(old), _said_parts(new)
    if not key.startswith("helper:") or not before or not after or before.get("code") != after.get("code"):
        return ""
    said = [_describe_key(k, before.get(k), after.get(k), {}) for k in _ordered(before, after)]
    return f" ({'; '.join(s for s in said if s)})" if any(said) else ""


def _said_parts(text: str | None) -> dict[str, str]:
    try:
        found = json.loads(text or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _wheres(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if k.startswith(WHERE) and a.get(k) != b.get(k))


def _describe_where(key: str, old: str | None, new: str | None) -> str:
    # Which modules a process loaded decides it: the usual cause when the code did not change.
    return f"{key[len(WHERE):]} is set by code of other loaded modules: {old or 'none'} when recorded, {new or 'none'} now"


def _version_change(old: str | None, new: str | None) -> str:
    if old is None:
        return f"now pinned with version={new!r}"
    if new is None:
        return f"version={old!r} removed: the source is fingerprinted now"
    return f"version changed ({old!r} -> {new!r})" if old != new else ""


def _ordered(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    order = {"code": 0, "defaults": 1, "closure": 2, "bound": 3}
    keys = {k for k in set(a) | set(b) if not k.startswith(UNHASHED)} - {IDENTITY}
    return sorted(keys, key=lambda k: (order.get(k, 4), k))


def _describe_key(key: str, old: str | None, new: str | None, made: Mapping[str, str]) -> str:
    if old == new:
        return ""
    if key in _WHOLE:
        return _WHOLE[key] if old and new else f"{_GAINED[key]} {'added' if new else 'removed'}"
    prefix, _, name = key.partition(":")
    kind = _KINDS.get(prefix, prefix)
    if old is None:
        return f"now uses {kind} {name}"
    if new is None:
        return f"no longer uses {kind} {name}"
    return f"{kind} {name} changed" + (f" (made by {made[name]})" if prefix == "const" and name in made else "")
