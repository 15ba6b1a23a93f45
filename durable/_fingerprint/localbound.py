"""The locals of a function bound to (a part of) what other names hold: a
write into one of them (`log.append(x)`, `row["n"] = 2`, and on a list,
dict, set or deque `log += [x]`) changes the object those names hold, so a
step writing a global through such a local writes the global
(`stepreach.written_in`).

Pure standard library."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from typing import Any

from .inplace import roots
from .nodes import walk

# Calls giving the items of what they are handed themselves, not copies of them.
_EACH = frozenset({"enumerate", "zip", "reversed", "sorted", "filter", "iter"})
# The method `x op= y` runs when the type of `x` has it: then it changes `x` in place.
_IN_PLACE = {
    ast.Add: "__iadd__", ast.Sub: "__isub__", ast.Mult: "__imul__", ast.MatMult: "__imatmul__",
    ast.Div: "__itruediv__", ast.FloorDiv: "__ifloordiv__", ast.Mod: "__imod__", ast.Pow: "__ipow__",
    ast.LShift: "__ilshift__", ast.RShift: "__irshift__", ast.BitOr: "__ior__", ast.BitAnd: "__iand__",
    ast.BitXor: "__ixor__",
}  # fmt: skip
_UNTOLD = object()  # a value not found without running the user's code
_Bound = tuple[ast.AST, bool]  # what a local is bound to, and whether to each item of it


def bound_locals(nodes: list[ast.AST], globs: Mapping[str, Any] | None = None) -> dict[str, set[str]]:
    """Each name `nodes` bind, with the names whose object (or a part of
    it) it is bound to, through other locals too: `log = LOG`, `xs =
    CFG["xs"]`, `c = CFG.get("c")`, `log: list = LOG`, `(log := LOG)`, `a, b
    = CFG["a"], CFG["b"]`, `log = LOG or []`, `row` of `for row in ROWS` or
    of `enumerate(ROWS)`, `xs = cfg["xs"]` of `cfg = CFG`. Not a copy (`log =
    list(LOG)`) nor a value a call makes, nor a name bound to one as well
    (`data = DATA` then `data = [d for d in data if d]`). With the module's
    globals `globs`, an augmented assignment (`xs += [x]`) to a name bound
    to what has the in-place method (`in_place_grown`) keeps it bound: it
    changes the object, it does not rebind the name."""
    found: dict[str, set[str]] = {}
    values: dict[str, list[_Bound]] = {}
    aliasing: set[int] = set()  # the `ast.Name`s binding a part of other names
    for node in nodes:
        for target, value, each in _pairs(node):
            held = [] if isinstance(value, (ast.Tuple, ast.List)) else roots(value)
            # Only the names bound (`log = LOG`, `a, b = ...`): `SHARED["k"] = CFG` binds no name, and
            # taken for one it made each write of SHARED a write of CFG (`written._bindings` holds it).
            for bound in (n for n in walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)) if held else ():
                found.setdefault(bound.id, set()).update(held)
                values.setdefault(bound.id, []).append((value, each and bound is target))
                aliasing.add(id(bound))
    if globs is not None:
        aliasing |= {id(n.target) for n in in_place_grown(nodes, values, globs)}
    stored = (n for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    for other in {n.id for n in stored if id(n) not in aliasing}:
        found.pop(other, None)
    grown = True
    while grown:  # `cfg = CFG`, `xs = cfg["xs"]`: xs is a part of CFG
        grown = False
        for parts in found.values():
            more = {g for h in list(parts) for g in found.get(h, ())} - parts
            parts |= more
            grown = grown or bool(more)
    return found


def _pairs(node: ast.AST) -> list[tuple[ast.AST, ast.AST, bool]]:
    """(target, value, to each item of it) of what `node` binds; a tuple of
    values to a tuple of targets each to each, else every target to every value."""
    pairs: list[tuple[ast.AST, ast.AST]]
    if isinstance(node, ast.Assign):
        pairs = [(t, node.value) for t in node.targets]
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        pairs = [(node.target, node.value)]
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        items = node.iter
        name = items.func.id if isinstance(items, ast.Call) and isinstance(items.func, ast.Name) else ""
        return [(node.target, e, True) for e in (items.args if name in _EACH else [items])]  # type: ignore[attr-defined]
    else:
        return []
    each: list[tuple[ast.AST, ast.AST, bool]] = []
    for target, value in pairs:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            same = len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts)
            each += [(t, v, False) for t, v in zip(target.elts, value.elts, strict=True)] if same else [(target, v, False) for v in value.elts]
        else:
            each.append((target, value, False))
    return each


def in_place_grown(nodes: list[ast.AST], values: Mapping[str, list[_Bound]], globs: Mapping[str, Any]) -> list[ast.AugAssign]:
    """The augmented assignments of `nodes` to a local (`values`: what each
    is bound to) that may change a global's object in place: bound to a
    list, dict, set, bytearray, deque (what has `__iadd__`, `__ior__`...),
    or to what is not found without running code (fail closed). Not one
    bound only to an int, str or tuple (`n = CFG["n"]; n += 1` rebinds `n`)."""
    found: list[ast.AugAssign] = []
    for node in nodes:
        if not isinstance(node, ast.AugAssign) or not isinstance(node.target, ast.Name):
            continue
        dunder = _IN_PLACE.get(type(node.op), "")
        for value, each in values.get(node.target.id, ()):
            if not set(roots(value)) & set(globs):
                continue  # bound to a local or a parameter: no global of the module
            got = _value(value, globs)
            items = _items(got) if each and got is not _UNTOLD else [got]
            if any(v is _UNTOLD or hasattr(type(v), dunder) for v in items):
                found.append(node)
                break
    return found


def _items(value: Any) -> list[Any]:
    """The items of a builtin container `for` goes over; untold for another."""
    if type(value) in (list, tuple, set, frozenset) and len(value) <= 10_000:
        return list(value)
    if type(value) is dict and len(value) <= 10_000:
        return list(value)
    return [_UNTOLD]


def _value(expr: ast.AST, globs: Mapping[str, Any]) -> Any:
    """What `expr` (a global, `G["k"]`, `G.get("k", d)`, `G.attr`) holds,
    found without running the user's code; `_UNTOLD` otherwise."""
    if isinstance(expr, ast.Name):
        return globs.get(expr.id, _UNTOLD)
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        base = _value(expr.value, globs)
        if type(base) in (dict, list, tuple):
            try:
                return base[expr.slice.value]
            except (LookupError, TypeError):
                return _UNTOLD
    if isinstance(expr, ast.Attribute):
        base = _value(expr.value, globs)
        try:
            got = inspect.getattr_static(base, expr.attr) if base is not _UNTOLD else _UNTOLD
        except AttributeError:
            return _UNTOLD
        return _UNTOLD if hasattr(type(got), "__get__") and not callable(got) else got
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "get":
        base = _value(expr.func.value, globs)
        consts = [a.value for a in expr.args if isinstance(a, ast.Constant)]
        if type(base) is dict and len(consts) == len(expr.args) in (1, 2) and not expr.keywords:
            try:
                return base.get(*consts)
            except TypeError:
                return _UNTOLD
    return _UNTOLD
