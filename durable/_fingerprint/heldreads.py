"""Which of the globals holding an object of your class that a step
changes (`objectstate.object_writes`) another step or workflow reads: by
name, through the attributes and methods whose code tells what they
read; or through another object of yours holding it (`AGENT =
Agent(TOOLS, MEM)`), whose methods that step calls may read the
attribute holding it (`self.memory`). And the functions of the module a
step reaches through what a global holds, not through what binds it: a
registry a decorator fills (`TOOLS = {}`, `@tool def search(q)`), an
object of yours holding one (`AGENT.tools`). Pure standard library."""

from __future__ import annotations

import ast
import itertools
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .heldobjects import mine, own_attributes
from .objectstate import reads_object
from .stepreach import helpers, links, names_used, reached


def unread(objects: Mapping[str, frozenset[str] | None], others: Sequence[tuple[ast.AST, frozenset[str], frozenset[str], Any]],
           foreign: set[int], tree: ast.AST, globs: Mapping[str, Any]) -> set[str]:  # fmt: skip
    """Those of `objects` no other step or workflow (`others`: each with the
    names it uses and reaches) reads a changed attribute of: by name, or
    through the objects of yours holding it (`_held_unread`)."""
    return {
        n for n, attrs in objects.items()
        if not any(id(d) in foreign or _read_by(d, names, n, attrs, tree, globs) for d, names, seen, _ in others if n in seen)
    }  # fmt: skip


def _read_by(d: ast.AST, names: frozenset[str], n: str, attrs: frozenset[str] | None, tree: ast.AST, globs: Mapping[str, Any]) -> bool:
    if n in names and reads_object(d, n, globs.get(n), attrs):
        return True
    if n in names and n not in reached(names - {n}, tree):
        return False
    if _helpers_unread(d, names, n, attrs, tree, globs):  # reached through `fetched(url)` doing `SESSION.get(url)`
        return False
    return n in names or not _held_unread(d, names, n, tree, globs)


def _helpers_unread(d: ast.AST, names: frozenset[str], n: str, attrs: frozenset[str] | None, tree: ast.AST, globs: Mapping[str, Any]) -> bool:
    """Whether `d` reaches the global `n` beside its own name only through
    plain functions of the module it calls that read none of `attrs` of it,
    by the code of the methods they call (`allowed(url)` doing
    `SESSION.get(robots)`, which reads nothing of the session): no other
    binding (a table holding it, `CLIENTS = {"a": SESSION}`) leads there."""
    table, funcs = links(tree)
    called = {id(f) for f in helpers([d], tree)}
    carriers = {g for g in reached(names - {n}, tree) if n in table.get(g, ()) and g != n}
    if not carriers or any(g not in funcs or id(funcs[g]) not in called for g in carriers):
        return False
    return not any(reads_object(funcs[g], n, globs.get(n), attrs) for g in carriers)


def _held_unread(d: ast.AST, names: frozenset[str], n: str, tree: ast.AST, globs: Mapping[str, Any]) -> bool:
    """Whether `d`, which reaches the global `n` without naming it, reaches
    it only through globals holding an object of yours that holds it in
    an attribute (`AGENT.memory` of `AGENT = Agent(TOOLS, MEM)`), whose
    binding reaches it by no other name (a tool of `TOOLS` naming `MEM`),
    nor do what its other attributes hold (`_held_names`: a tool a
    decorator put in its registry naming `MEM`), and whose attributes
    holding it `d` reads none of, by the code of the methods it calls
    (`AGENT.run(q)` doing `self.memory.add(...)` only)."""
    obj, table = globs.get(n), links(tree)[0]
    via = [g for g in names if n in reached(frozenset({g}), tree)]
    if not via or not mine(obj):
        return False
    for g in via:
        held = globs.get(g)
        keys = frozenset(k for k, v in own_attributes(held).items() if v is obj)
        named = _held_names(own_attributes(held).values() if mine(held) else (), obj, globs, 0)
        if not keys or named is None or n in reached(frozenset(table.get(g, ())) - {n} | named, tree):
            return False
        if reads_object(d, g, held, keys):
            return False
    return True


_DATA = (str, bytes, int, float, complex, bool, type(None))
_CONTAINERS = (dict, list, tuple, set, frozenset)


def _held_names(values: Iterable[object], obj: object, globs: Mapping[str, Any], depth: int) -> frozenset[str] | None:
    """The module-level names through which what an object holds reaches
    code (two levels of dicts, lists, tuples and sets down): a function or
    class of the module by its name, an object of yours by its class's;
    `obj` and plain data, none. None for another callable or object (a
    bound method, a lambda, another module's): not told."""
    found: set[str] = set()
    for value in itertools.islice(values, 256):
        if value is obj or isinstance(value, _DATA):
            continue
        name = getattr(value, "__name__", "") if isinstance(value, (types.FunctionType, type)) else ""
        if name and globs.get(name) is value:
            found.add(name)
        elif mine(value) and globs.get(type(value).__name__) is type(value):
            found.add(type(value).__name__)
        elif depth < 2 and type(value) in _CONTAINERS and isinstance(value, _CONTAINERS):
            inner = _held_names(value.values() if isinstance(value, dict) else value, obj, globs, depth + 1)
            if inner is None:
                return None
            found |= inner
        else:
            return None
    return frozenset(found)


def reached_held(names: frozenset[str], tree: ast.AST, globs: Mapping[str, Any]) -> frozenset[str]:
    """`stepreach.reached`, on and on through the functions and classes of
    the module that the globals reached hold (`held_functions`): a step
    calling `TOOLS[name](q)` reaches every tool a decorator put there."""
    seen = reached(names, tree)
    while more := held_functions(seen, globs) - seen:
        seen = reached(seen | more, tree)
    return seen


def held_helpers(defs: list[ast.AST], tree: ast.AST, globs: Mapping[str, Any]) -> list[ast.AST]:
    """`stepreach.helpers`, with the plain functions of the module reached
    through what globals hold (`reached_held`): where a step's write may be
    (`TOOLS["remember"](x)` doing `MEM.append(x)`)."""
    funcs = links(tree)[1]
    named = reached_held(frozenset(n for d in defs for n in names_used(d)), tree, globs) - _import_time_only(tree, globs)
    return [funcs[n] for n in sorted(named & funcs.keys()) if not any(d is funcs[n] for d in defs)]


def _import_time_only(tree: ast.AST, globs: Mapping[str, Any]) -> frozenset[str]:
    """The decorators of the module that ran at import and never again: each
    use of the name is `@name` on a `def` whose global is still that `def`'s own
    function (handed back, not wrapped: `TOOLS[fn.__name__] = fn; return fn`).
    Calling a tool it registered does not run it, so its registering write is
    not the step's (a decorator whose wrapper the global holds still counts)."""
    uses: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            uses[node.id] = uses.get(node.id, 0) + 1
    decorating: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                if isinstance(deco, ast.Name):
                    decorating.setdefault(deco.id, []).append(node.name)
    return frozenset(
        name for name, targets in decorating.items()
        if uses.get(name) == len(targets) and all(_unwrapped(globs.get(t), t, globs.get("__name__")) for t in targets)
    )  # fmt: skip


def _unwrapped(value: object, name: str, module: object) -> bool:
    code = getattr(value, "__code__", None)
    return (
        isinstance(value, types.FunctionType) and isinstance(code, types.CodeType) and code.co_name == name
        and not hasattr(value, "__wrapped__") and value.__module__ == module
    )  # fmt: skip


def held_functions(names: frozenset[str], globs: Mapping[str, Any]) -> frozenset[str]:
    """The names of the module's functions and classes (bound there by
    them) that the globals `names` hold in a dict, list, tuple, set or
    namespace, or in an attribute of an object of yours, two levels down."""
    found: set[str] = set()
    todo: list[tuple[object, int]] = [(globs.get(n), 0) for n in names if n in globs]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, (types.FunctionType, type)):
            name = getattr(value, "__name__", "")
            if depth and globs.get(name) is value:
                found.add(name)
        elif depth <= 2 and type(value) in _CONTAINERS and isinstance(value, _CONTAINERS):
            todo += [(v, depth + 1) for v in itertools.islice(value.values() if isinstance(value, dict) else value, 256)]
        elif depth <= 1 and (type(value) is types.SimpleNamespace or mine(value)):
            todo += [(v, depth + 1) for v in itertools.islice(list(own_attributes(value).values()), 256)]
    return frozenset(found)
