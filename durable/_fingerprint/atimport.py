"""The statements a module runs at import beyond its own: the bodies of
its functions a module-level statement calls (`def main(): random.seed(1)`
then `main()`), and the names that say a call sets something (`seed`,
`set_*`, `*config`). Shared by `libstate` (a library's state) and
`libcode` (a library's code changed).

Pure standard library."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@lru_cache(maxsize=4096)  # a module's statements, asked for each library a step reads, in two rules
def run_at_import(body: tuple[ast.AST, ...]) -> tuple[tuple[ast.stmt, ...], ...]:
    """The bodies of the module's functions a module-level statement of
    `body` calls, and of those they call in turn, each once."""
    defs = {s.name: s for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    todo = [name for s in body if not isinstance(s, _SCOPES) for name in _calls(s, defs)]
    seen: set[str] = set()
    found: list[tuple[ast.stmt, ...]] = []
    while todo:
        if (name := todo.pop()) in seen:
            continue
        seen.add(name)
        found.append(inner := tuple(defs[name].body))
        todo += [callee for s in inner for callee in _calls(s, defs)]
    return tuple(found)


def _named_setter(stmt: ast.AST) -> bool:
    for node in _outside_scopes(stmt):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if _SETTERS.search(func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")):
                return True
    return False


# `seed`, `manual_seed`, `set_state`, `setlocale`, `tzset`, `use_deterministic_algorithms`, `basicConfig`.
_SETTERS = re.compile(r"seed|^set|set$|^use_|^enable|^disable|config", re.IGNORECASE)


def _calls(stmt: ast.AST, defs: Mapping[str, ast.AST]) -> Iterator[str]:
    """The module's functions `stmt` calls by name, outside the scopes it defines."""
    for node in _outside_scopes(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in defs:
            yield node.func.id


def _outside_scopes(stmt: ast.AST) -> Iterator[ast.AST]:
    """`stmt` and the nodes in it, not those of a function, class or lambda it defines."""
    todo = [stmt]
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _SCOPES):
            todo.extend(ast.iter_child_nodes(node))
