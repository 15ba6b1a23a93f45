"""The locals of a function bound to (a part of) what other names hold: a
write into one of them (`log.append(x)`, `row["n"] = 2`) changes the
object those names hold, so a step writing a global through such a local
writes the global (`stepreach.written_in`).

Pure standard library."""

from __future__ import annotations

import ast

from .inplace import roots
from .nodes import walk

# Calls giving the items of what they are handed themselves, not copies of them.
_EACH = frozenset({"enumerate", "zip", "reversed", "sorted", "filter", "iter"})


def bound_locals(nodes: list[ast.AST]) -> dict[str, set[str]]:
    """Each name `nodes` bind, with the names whose object (or a part of
    it) it is bound to, through other locals too: `log = LOG`, `xs =
    CFG["xs"]`, `c = CFG.get("c")`, `log: list = LOG`, `(log := LOG)`, `a, b
    = CFG["a"], CFG["b"]`, `log = LOG or []`, `row` of `for row in ROWS` or
    of `enumerate(ROWS)`, `xs = cfg["xs"]` of `cfg = CFG`. Not a copy (`log =
    list(LOG)`) nor a value a call makes, nor a name bound to one as well
    (`data = DATA` then `data = [d for d in data if d]`)."""
    found: dict[str, set[str]] = {}
    aliasing: set[int] = set()  # the `ast.Name`s binding a part of other names
    for node in nodes:
        for target, value in _pairs(node):
            held = [] if isinstance(value, (ast.Tuple, ast.List)) else roots(value)
            for bound in (n for n in walk(target) if isinstance(n, ast.Name)) if held else ():
                found.setdefault(bound.id, set()).update(held)
                aliasing.add(id(bound))
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


def _pairs(node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """(target, value) of what `node` binds; a tuple of values to a tuple
    of targets each to each, else every target to every value."""
    pairs: list[tuple[ast.AST, ast.AST]]
    if isinstance(node, ast.Assign):
        pairs = [(t, node.value) for t in node.targets]
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        pairs = [(node.target, node.value)]
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        items = node.iter
        name = items.func.id if isinstance(items, ast.Call) and isinstance(items.func, ast.Name) else ""
        return [(node.target, e) for e in (items.args if name in _EACH else [items])]  # type: ignore[attr-defined]
    else:
        return []
    each: list[tuple[ast.AST, ast.AST]] = []
    for target, value in pairs:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            same = len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts)
            each += zip(target.elts, value.elts, strict=True) if same else [(target, v) for v in value.elts]
        else:
            each.append((target, value))
    return each
