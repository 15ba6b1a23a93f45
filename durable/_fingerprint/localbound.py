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
    it) it is bound to: `log = LOG`, `xs = CFG["xs"]`, `c = CFG.get("c")`,
    `row` of `for row in ROWS` or of `enumerate(ROWS)`. Not a copy
    (`log = list(LOG)`) nor a value a call makes, nor a name bound to one
    as well (`data = DATA` then `data = [d for d in data if d]`)."""
    found: dict[str, set[str]] = {}
    aliasing: set[int] = set()  # the `ast.Name`s binding a part of other names
    for node in nodes:
        pairs: list[tuple[ast.AST, ast.AST]] = []
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            pairs = [(node.targets[0], node.value)]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            items = node.iter
            name = items.func.id if isinstance(items, ast.Call) and isinstance(items.func, ast.Name) else ""
            pairs = [(node.target, e) for e in (items.args if name in _EACH else [items])]  # type: ignore[attr-defined]
        for target, value in pairs:
            held = [] if isinstance(value, (ast.Tuple, ast.List)) else roots(value)
            for bound in (n for n in walk(target) if isinstance(n, ast.Name)) if held else ():
                found.setdefault(bound.id, set()).update(held)
                aliasing.add(id(bound))
    stored = (n for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    for other in {n.id for n in stored if id(n) not in aliasing}:
        found.pop(other, None)
    return found
