"""Fingerprints of steps and workflows (pure: stdlib, `durable.errors` and siblings).

A fingerprint is 12 hex digits of SHA-256 over a function's identity and its
*parts*: the canonical AST of its source (`canon`; checked to be that of the
running code, `source`), the names it reads (`reads`: how each counts), its
default and closure values (`live`, `heldmodules`) and, when `deep`, the same
for the plain functions of the user's own code it reaches. The parts are kept
so that a mismatch can say what changed. Values are tokenised in `values`;
what a function reaches without reading its source is in `reach`.
"""

from __future__ import annotations

import ast
import functools
import types
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from .._frozen import Frozen, dataclass
from ..errors import ConfigurationError
from .analysis import NOW, SAID, UNHASHED, Analysis
from .canon import definition_tokens, node_hash
from .changes import IDENTITY, describe_change, helper_said
from .execsource import exec_source
from .heldmodules import partial_bound, read_held_modules, self_bound
from .holds import dispatched
from .live import read_held, read_live, read_wrappers, wrappers_of
from .passes import one_pass
from .reach import durable_fingerprint_of, identity_of, is_durable, target_of
from .reads import read_names
from .references import referenced_objects
from .source import (
    Source,
    find_definitions,
    rank_on_line,
    runs_this_source,
    source_of,
    stale_source,
)
from .spelled import read_spelled
from .values import _live_tokens, hash_tokens
from .witness import live_state, witnessed

# The rest of the package and the tests import these from here, wherever they are defined.
__all__ = [
    "IDENTITY",
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


@dataclass(frozen=True)
class Fingerprint(Frozen):
    """A function's fingerprint: its value, its name, and the parts hashed."""

    value: str
    identity: str
    parts: Mapping[str, str] = field(default_factory=dict)
    #: Global names the code reads that were not bound yet (a helper or
    #: constant defined further down the file): recompute once they are.
    unresolved: frozenset[str] = frozenset()
    #: Without `steps`: the steps and workflows it reaches, each with the
    #: part it counts under (`stepgraph` stamps them, once for all).
    reached: tuple[tuple[str, object], ...] = field(default=(), compare=False, repr=False)
    #: With `steps`: per part stamping a step, that step's `stepgraph.Stamp`
    #: (what its stamp would be without the contents of globals, and those):
    #: whether a change of the stamp is one of contents alone (`_core.definition`).
    stamps: Mapping[str, tuple[str, str, Mapping[str, str]]] = field(default_factory=dict, compare=False, repr=False)


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
    leaves out only the steps and workflows, listing them (`reached`) for a
    caller that stamps them itself (`stepgraph`, a workflow's definition)."""
    if steps and deep and version is None:
        from .stepgraph import graph_fingerprint  # built on this module

        def alone(node: tuple[Any, str | None, str | None, bool]) -> Fingerprint:
            return fingerprint_function(node[0], name=node[1], version=node[2], deep=node[3], steps=False)

        with one_pass():
            return graph_fingerprint((fn, name, version, deep), lambda n: (id(n[0]), *n[1:]), alone)
    if version is not None:
        identity = witnessed(identity_of, fn, name)
        parts: dict[str, str] = {"version": str(version)}
        return Fingerprint(digest(identity, *_flatten(parts)), identity, parts)
    reached: list[tuple[str, object]] = []
    with one_pass():
        root = _analyse(fn, role="function", named=name is not None)
        # After the analysis, which witnessed what the identity is made of.
        identity = identity_of(fn, name)
        parts = {**root.parts, **(_reached_parts(fn, root, reached) if deep else {})}
    value = digest(identity, *_flatten(parts))
    return Fingerprint(value, identity, parts, frozenset(root.unresolved), tuple(reached))


def combine(identity: str, own: str, children: Mapping[str, str]) -> str:
    """A workflow's definition fingerprint: its own and its steps'."""
    chunks = [identity, own]
    for k in sorted(children):
        chunks += [k, children[k]]
    return digest(*chunks)


# ---------------------------------------------------------------- analysis


def _analyse(fn: Any, *, role: str, named: bool, passed: Mapping[str, object] | None = None) -> Analysis:
    if isinstance(fn, functools.partial):
        witnessed(_partial_state, fn)
        inner = _analyse(fn.func, role=role, named=named, passed=partial_bound(fn))
        bound = _live_tokens((fn.args, tuple(sorted(fn.keywords.items()))), inner.reached)
        inner.parts["bound"] = hash_tokens(bound)
        read_held("bound:", [*fn.args, *fn.keywords.values()], inner, fn.func)  # `partial(lookup, REG)`
        return inner
    if passed is None and isinstance(fn, types.MethodType):
        passed = self_bound(fn)  # `self.cfg.THRESHOLD` of its instance
    state = witnessed(function_state, fn)
    target, code, globs = state[:3]
    if not isinstance(code, types.CodeType):
        raise ConfigurationError(
            f"{identity_of(fn)} is not a Python function; pass version='...' to fingerprint it"
        )
    src = source_of(code.co_filename, globs)
    src = witnessed(exec_source, code, globs) or src if not src.text else src  # `exec(SRC, globals())`
    nodes = _source_nodes(target, code, _definitions(code, src, globs), role, named)
    out = Analysis({"code": _code_hash(nodes)})
    if len(nodes) > 1:
        # Lambdas sharing a line are hashed together: which one runs tells
        # two of them apart (under one name= they shared cache entries; a
        # helper `OPS = {"a": lambda x: 2 * x, "b": lambda x: 3 * x}` chosen
        # by `OPS["b"]` was taken for the other).
        out.parts["code"] += f"#{rank_on_line(code, src, globs)}"
    out.reached.extend(state[4 + state[3] :])  # `@fmt.register` implementations
    read_names(target, nodes, code, src.rebound, out)
    read_live(target, code, out)
    read_wrappers(fn, target, nodes, out)  # `@scaled(int(os.environ["K"]))` under the step
    read_held_modules(target, nodes, code, out, passed or {})  # `settings.THRESHOLD` of a held module
    read_spelled(target, nodes, code, out)  # `getattr(settings, NAME)`
    return out


def function_state(fn: Any) -> tuple[Any, ...]:
    """What `_analyse` reads of a function that may change while its source
    does not, as one flat tuple (one witnessed call, checked by identity
    item by item): the function that runs (`target_of`), its code and
    globals, its `live_state` (what `read_live`, `read_names` and
    `identity_of` read of it: its length first) and, last, the
    implementations `dispatched` from it."""
    if type(fn) is types.FunctionType and not fn.__dict__:
        # The common case, asked on every cached plain call: no wrapper to
        # follow, no implementations registered on it.
        live = live_state(fn)
        return (fn, fn.__code__, fn.__globals__, len(live), *live)
    target = target_of(fn)
    code, globs = getattr(target, "__code__", None), getattr(target, "__globals__", None)
    if not isinstance(code, types.CodeType):  # refused by the caller
        return target, code, globs, 0
    live = (*live_state(target), *(x for w in wrappers_of(fn, target) for x in live_state(w)))
    return (target, code, globs, len(live), *live, *dispatched(fn))


def _partial_state(fn: functools.partial[Any]) -> tuple[Any, ...]:
    return fn.func, fn.args, tuple(fn.keywords.items())


def _definitions(
    code: types.CodeType, src: Source, globs: Mapping[str, Any] | None
) -> list[ast.AST] | None:
    """The nodes of `fn`'s definition in `src`, or None when `src` is not the
    source of the running code (the file was edited after import)."""
    if not src.text:
        return []
    if not runs_this_source(code, src, globs):
        return None
    return find_definitions(code, src) or None


def _source_nodes(
    fn: Any,
    code: types.CodeType,
    nodes: list[ast.AST] | None,
    role: str,
    named: bool,
) -> list[ast.AST]:
    who = identity_of(fn)
    if nodes is None and not code.co_filename.startswith("<"):
        raise stale_source(who, code.co_filename, getattr(fn, "__module__", None) or "?")
    if not nodes:  # exec, `python -c`, or a `<string>` cache entry of other code
        hint = "" if role == "function" else " or deep=False"
        if code.co_filename == "<stdin>":  # Python keeps no source of what it read there
            raise ConfigurationError(
                f"cannot read the source of {role} {code.co_name} (defined in <stdin>: the "
                "plain Python prompt or `python -` keep no source). Put it in a file and "
                "run that (a script, a module, or a Jupyter/IPython cell, which keep their "
                f"source), or pass version='...'{hint} to the decorator and change it "
                "whenever the code changes; bytecode is never used instead."
            )
        # `exec(text, NS)` into a dict of no module: its name, not "?.made".
        who = f"{code.co_name} (made by exec, in no module)" if who.startswith("?.") else who
        raise ConfigurationError(
            f"cannot read the source of {role} {who} (defined in {code.co_filename}: exec, "
            f"`python -c` or a deleted file; the text a module of yours hands to exec as a "
            f"string it holds is read). Pass version='...'{hint} to the decorator so "
            "that durable knows when its code changes; bytecode is never used instead."
        )
    if len(nodes) > 1 and role == "function" and not named:
        raise ConfigurationError(
            f"{len(nodes)} lambdas start on line {code.co_firstlineno} of "
            f"{code.co_filename} and cannot be told apart; give this one name='...' "
            "(or define it with def)"
        )
    return nodes  # a named lambda is fingerprinted with its neighbours: conservative


def _code_hash(nodes: list[ast.AST]) -> str:
    if len(nodes) == 1:
        return node_hash(nodes[0])
    return hash_tokens(t for n in nodes for t in definition_tokens(n))


def _reached_parts(
    fn: Callable[..., Any], root: Analysis, listed: list[tuple[str, object]]
) -> dict[str, str]:
    """Every user function and step reachable from `fn`, breadth first, each
    seen once (so cycles end). A function contributes its own parts; a step
    or workflow is not walked: it is put in `listed` with the name of the
    part its fingerprint counts under. A helper
    only the statements binding a global `fn` only writes reach (`made`),
    after all others, counts without the program's state it reads now."""
    seen, queue, made = {id(fn), id(target_of(fn))}, list(root.reached), list(root.made)
    found: dict[str, list[str]] = {}
    wheres: dict[str, str] = {}
    while queue or made:
        only_made = not queue
        obj = made.pop(0) if only_made else queue.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if is_durable(obj):  # stamped by `stepgraph`, which knows which steps call each other
            listed.append(("step:" + witnessed(identity_of, obj), obj))
            continue
        sub = _analyse(obj, role="helper", named=False)
        root.unresolved |= sub.unresolved - {getattr(fn, "__name__", "")}
        parts = {k: v for k, v in sub.parts.items() if not (only_made and k.startswith(NOW))}
        key = "helper:" + identity_of(obj)
        found.setdefault(key, []).append(hash_tokens(_flatten(parts)))
        wheres.update((k, v) for k, v in parts.items() if k.startswith(UNHASHED))
        said = helper_said(parts)  # a refusal names the constant it reads that changed
        if said:
            wheres[SAID + key] = said
        (made if only_made else queue).extend(sub.reached)
        made.extend(sub.made)
    # Two helpers with one identity (two module-level lambdas): keep both, and say neither's parts.
    wheres = {k: v for k, v in wheres.items() if len(found.get(k[len(SAID) :], ())) < 2}
    return {**{k: v[0] if len(v) == 1 else hash_tokens(sorted(v)) for k, v in found.items()}, **wheres}


# ---------------------------------------------------------------- helpers


def _flatten(parts: Mapping[str, str]) -> list[str]:
    return [x for k in sorted(parts) if not k.startswith(UNHASHED) for x in (k, parts[k])]
