"""Fingerprints of steps and workflows (pure: stdlib, `_errors` and siblings).

A fingerprint is 12 hex digits of SHA-256 over a function's identity and its
*parts*: the canonical AST of its source (see `_canon`), the plain-data
module constants it reads, its default and closure values and, when `deep`,
the same for the plain functions of the user's own code it reaches. The
parts are kept so that a mismatch can say what kind of change happened.
Values are tokenised in `_fpvalues`; what a function reaches without reading
its source (and `referenced_objects`, for the engine) is in `_reach`.
"""

from __future__ import annotations

import ast
import builtins
import functools
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._canon import (
    definition_tokens,
    find_definitions,
    foreign_decorators,
    name_chains,
    parameters_match,
    rebound_names,
)
from ._errors import ConfigurationError
from ._fpvalues import _enum_tokens, _live_tokens, hash_tokens, plain_tokens
from ._reach import (
    _MISSING,
    _cell_value,
    _followable,
    _target,
    code_objects,
    durable_fingerprint_of,
    identity_of,
    is_durable,
    referenced_objects,
)

# The rest of the package and the tests import these from here, wherever
# they are defined.
__all__ = [
    "Fingerprint",
    "combine",
    "describe_change",
    "digest",
    "durable_fingerprint_of",
    "fingerprint_function",
    "identity_of",
    "is_durable",
    "referenced_objects",
]

_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class Fingerprint:
    value: str
    identity: str
    parts: Mapping[str, str] = field(default_factory=dict)
    #: Global names the code reads that were not bound yet (a helper or
    #: constant defined further down the file): recompute once they are.
    unresolved: frozenset[str] = frozenset()


def digest(*chunks: str) -> str:
    return hash_tokens(chunks, 12)


def fingerprint_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    version: str | None = None,
    deep: bool = True,
    steps: bool = True,
) -> Fingerprint:
    """Fingerprint `fn`. `version` replaces everything read from the source;
    `deep=False` leaves out the helpers (and steps) `fn` calls; `steps=False`
    leaves out only the steps and workflows, for a caller that combines
    their fingerprints itself (a workflow's definition)."""
    identity = identity_of(fn, name)
    if version is not None:
        parts: dict[str, str] = {"version": str(version)}
        return Fingerprint(digest(identity, *_flatten(parts)), identity, parts)
    root = _analyse(fn, role="function", named=name is not None)
    parts = {**root.parts, **(_reached_parts(fn, root, steps) if deep else {})}
    value = digest(identity, *_flatten(parts))
    return Fingerprint(value, identity, parts, frozenset(root.unresolved))


def combine(identity: str, own: str, children: Mapping[str, str]) -> str:
    """A workflow's definition fingerprint: its own and its steps'."""
    chunks = [identity, own]
    for k in sorted(children):
        chunks += [k, children[k]]
    return digest(*chunks)


# ---------------------------------------------------------------- analysis


@dataclass
class _Analysis:
    """What one function contributes by itself, and what it leads to."""

    parts: dict[str, str] = field(default_factory=dict)
    reached: list[object] = field(default_factory=list)
    unresolved: set[str] = field(default_factory=set)


def _analyse(fn: Any, *, role: str, named: bool) -> _Analysis:
    if isinstance(fn, functools.partial):
        inner = _analyse(fn.func, role=role, named=named)
        bound = _live_tokens((fn.args, tuple(sorted(fn.keywords.items()))), inner.reached)
        inner.parts["bound"] = hash_tokens(bound)
        return inner
    target = _target(fn)
    code = getattr(target, "__code__", None)
    if not isinstance(code, types.CodeType):
        raise ConfigurationError(
            f"{identity_of(fn)} is not a Python function; pass version='...' to fingerprint it"
        )
    nodes = _source_nodes(target, code, role=role, named=named)
    out = _Analysis({"code": hash_tokens(t for n in nodes for t in definition_tokens(n))})
    _read_globals(target, nodes, code, out)
    _read_live(target, code, out)
    return out


def _source_nodes(fn: Any, code: types.CodeType, *, role: str, named: bool) -> list[ast.AST]:
    who = identity_of(fn)
    nodes: list[ast.AST] = find_definitions(code, getattr(fn, "__globals__", None))
    if not nodes:
        hint = "" if role == "function" else " or deep=False"
        raise ConfigurationError(
            f"cannot read the source of {role} {who} (defined in {code.co_filename}: exec, "
            f"`python -c` or a deleted file). Pass version='...'{hint} to the decorator so "
            "that durable knows when its code changes; bytecode is never used instead."
        )
    if not all(parameters_match(n, code) for n in nodes):
        raise ConfigurationError(
            f"the source of {who} in {code.co_filename} no longer matches the running code "
            "(edited after import?); re-import the module or pass version='...'"
        )
    if len(nodes) > 1 and role == "function" and not named:
        raise ConfigurationError(
            f"{len(nodes)} lambdas start on line {code.co_firstlineno} of "
            f"{code.co_filename} and cannot be told apart; give this one name='...' "
            "(or define it with def)"
        )
    return nodes  # a named lambda is fingerprinted with its neighbours: conservative


def _read_globals(fn: Any, nodes: list[ast.AST], code: types.CodeType, out: _Analysis) -> None:
    """Constants and callables the body names: `X`, `mod.X`, `pkg.mod.f`.
    Only names the code really looks up globally (its `co_names`) count,
    so that a local that shadows a global is not mistaken for it. Program
    state is not a constant: names declared `global` anywhere in the file,
    and lists, dicts and sets unless their name is spelled like a constant
    (`MODELS = {...}` counts, `seen = set()` does not)."""
    names = {n for co in code_objects(code) for n in co.co_names}
    # Decorators are looked up around the function, not in it; ours do not count.
    names |= {c[0] for d in foreign_decorators(nodes) for c in name_chains(d)}
    names -= rebound_names(code, getattr(fn, "__globals__", None))
    # Recursion by name: while a decorator runs, the name is unbound (first
    # import) or still bound to the previous object (reload, a notebook cell
    # run again). Either way it is this function, already covered.
    if getattr(fn, "__qualname__", None) == getattr(fn, "__name__", None):
        names.discard(fn.__name__)
    globs: Mapping[str, Any] = getattr(fn, "__globals__", {})
    for chain in sorted({c for n in nodes for c in name_chains(n)}):
        if chain[0] not in names:
            continue
        path, obj = _resolve(globs, chain)
        if obj is _MISSING:
            if len(path) == 1 and path[0] not in _BUILTINS:
                out.unresolved.add(path[0])
            continue
        toks = plain_tokens(obj, mutable=_constant_style(path[-1])) or _enum_tokens(obj)
        if toks is not None:
            out.parts["const:" + ".".join(path)] = hash_tokens(toks)
        elif _followable(obj):
            out.reached.append(obj)


def _read_live(fn: Any, code: types.CodeType, out: _Analysis) -> None:
    kwdefaults = getattr(fn, "__kwdefaults__", None) or {}
    defaults = (getattr(fn, "__defaults__", None), tuple(sorted(kwdefaults.items())))
    if any(defaults):
        out.parts["defaults"] = hash_tokens(_live_tokens(defaults, out.reached))
    cells = getattr(fn, "__closure__", None) or ()
    if cells:
        pairs = tuple((n, _cell_value(c)) for n, c in zip(code.co_freevars, cells, strict=True))
        out.parts["closure"] = hash_tokens(_live_tokens(pairs, out.reached))


def _reached_parts(fn: Callable[..., Any], root: _Analysis, steps: bool) -> dict[str, str]:
    """Every user function and step reachable from `fn`, breadth first, each
    seen once (so cycles end). A function contributes its own parts; a step
    or workflow only its fingerprint, without being walked again."""
    seen = {id(fn), id(_target(fn))}
    queue = list(root.reached)
    found: dict[str, list[str]] = {}
    while queue:
        obj = queue.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if is_durable(obj):
            stamp = durable_fingerprint_of(obj) if steps else None
            if stamp is not None:
                found.setdefault("step:" + identity_of(obj), []).append(stamp)
            continue
        sub = _analyse(obj, role="helper", named=False)
        root.unresolved |= sub.unresolved - {getattr(fn, "__name__", "")}
        found.setdefault("helper:" + identity_of(obj), []).append(hash_tokens(_flatten(sub.parts)))
        queue.extend(sub.reached)
    # Two helpers with one identity (two module-level lambdas): keep both.
    return {k: v[0] if len(v) == 1 else hash_tokens(sorted(v)) for k, v in found.items()}


# ---------------------------------------------------------------- helpers


def _constant_style(name: str) -> bool:
    return name.isupper()  # PEP 8 spells constants in capitals


def _resolve(globs: Mapping[str, Any], chain: tuple[str, ...]) -> tuple[tuple[str, ...], Any]:
    """Follow `chain` through modules only (`cfg.LIMIT`, not `obj.attr`)."""
    obj = globs.get(chain[0], _MISSING)
    for i, attr in enumerate(chain[1:], start=1):
        if not isinstance(obj, types.ModuleType):
            return chain[:i], obj
        obj = getattr(obj, attr, _MISSING)
    return chain, obj


def _flatten(parts: Mapping[str, str]) -> list[str]:
    return [x for k in sorted(parts) for x in (k, parts[k])]


_KINDS = {"const": "constant", "helper": "helper", "step": "step"}
_GAINED = {
    "code": "source",
    "defaults": "default values",
    "closure": "closure",
    "bound": "bound arguments (functools.partial)",
}
_WHOLE = {
    "code": "code changed",
    "defaults": "default values changed",
    "closure": "closure values changed",
    "bound": "bound arguments changed",
}


def describe_change(old_parts: Mapping[str, str], new_parts: Mapping[str, str]) -> str:
    """What kind of change turned `old_parts` into `new_parts`, in words:
    "code changed", "constant PROMPT changed", "helper m.clean changed",
    "version changed ('1' -> '2')", ... joined with "; "."""
    if "version" in old_parts or "version" in new_parts:
        old_v, new_v = old_parts.get("version"), new_parts.get("version")
        if old_v is None:
            return f"now pinned with version={new_v!r}"
        if new_v is None:
            return f"version={old_v!r} removed: the source is fingerprinted now"
        return f"version changed ({old_v!r} -> {new_v!r})" if old_v != new_v else "no change"
    said = [
        _describe_key(k, old_parts.get(k), new_parts.get(k)) for k in _ordered(old_parts, new_parts)
    ]
    return "; ".join(s for s in said if s) or "no change"


def _ordered(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    order = {"code": 0, "defaults": 1, "closure": 2, "bound": 3}
    return sorted(set(a) | set(b), key=lambda k: (order.get(k, 4), k))


def _describe_key(key: str, old: str | None, new: str | None) -> str:
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
    return f"{kind} {name} changed"
