"""Whether a module of the user's is read only through names it binds.

Pure standard library. `helpers.f(x)` reads `helpers` only to look `f` up
in it: `f` counts as a helper, by its code, as `from helpers import f`
makes it count. The chain `helpers` that the walk also finds there is no
use of the module as a whole (`getattr(helpers, name)`, `run(helpers)`,
`vars(helpers)`), and counted whole (its text, every function it holds),
an edit of any other function of the module refused the resume of a step
that never calls it. A module read through a name it does not bind itself
(a PEP 562 `__getattr__` answers it, or it is not bound yet), or through a
dunder (`helpers.__dict__[name]`), still counts whole."""

from __future__ import annotations

import ast
import types
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from .imports import user_module
from .nodes import walk
from .witness import witnessed


@lru_cache(maxsize=4096)  # nodes come from trees cached by their text, and are held here
def standalone_chains(nodes: tuple[ast.AST, ...]) -> frozenset[tuple[str, ...]]:
    """The dotted names `nodes` read as they are, not only as the head of
    a longer one: `helpers.f` and `f` in `helpers.f(x)`, not `helpers`;
    `helpers` too in `getattr(helpers, name)`."""
    heads = {id(sub.value) for node in nodes for sub in walk(node) if isinstance(sub, ast.Attribute)}
    found: set[tuple[str, ...]] = set()
    for node in nodes:
        for sub in walk(node):
            chain = _chain(sub) if id(sub) not in heads else None
            if chain is not None:
                found.add(chain)
    return frozenset(found)


def _chain(node: ast.AST) -> tuple[str, ...] | None:
    """The chain `canon.name_chains` finds at `node`, if any."""
    if isinstance(node, ast.Name):
        return (node.id,) if isinstance(node.ctx, ast.Load) else None
    attrs: list[str] = []
    while isinstance(node, ast.Attribute):
        attrs.insert(0, node.attr)
        node = node.value
    return (node.id, *attrs) if isinstance(node, ast.Name) and attrs else None


def read_through_names(
    chain: tuple[str, ...], obj: object, chains: Iterable[tuple[str, ...]], standalone: frozenset[tuple[str, ...]]
) -> bool:
    """Whether `chain`, which names `obj`, is a module of the user's read
    only as the head of longer chains whose next name it binds itself. (A
    library's module counts by the statement importing it and the state
    its statements set, `np.random.seed(1)`: not this.)"""
    if chain in standalone or not isinstance(obj, types.ModuleType) or not witnessed(user_module, obj):
        return False
    size = len(chain)
    after = frozenset(c[size] for c in chains if len(c) > size and c[:size] == chain)
    return bool(after) and bool(witnessed(binds_all, vars(obj), after))


def binds_all(namespace: Mapping[str, Any], names: frozenset[str]) -> bool:
    """Whether the namespace binds each of `names` to a function, none of
    them a dunder. Only a function is followed by its code as a helper; any
    other value (a namespace `types.ModuleType("ns")` a plugin fills with
    `setattr`, a registry dict) keeps the module counted whole, as it was
    before (test_stale48_registries: counted by its type alone, an edit of
    the plugin replayed the old output)."""
    return all(not n.startswith("__") and isinstance(namespace.get(n), types.FunctionType) for n in names)
