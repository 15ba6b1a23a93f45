"""The globals a function fills when a workflow body calls it.

Pure standard library. A body that calls `configure(xs)`, where
`configure` stores `xs` into a global of its module (`CONFIG["xs"] = xs`,
`global SCALE; SCALE = s`), fills that global from a run argument as
surely as a statement of its own would; a step reading the global then
computes from the argument (`derived`).

The answer errs towards more: what a function stores into, mutates or
passes to a call counts, at any depth of its body and of the user's
functions it calls in turn; a function whose source cannot be read fills
every global of its module it names that may hold data. A library's
functions are not followed: what they keep is program state.
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Iterable, Iterator, Mapping

from .source import find_definitions, nested_code, runs_this_source, source_of
from .userfiles import is_user_file

# (name, the module namespace it lives in) of each global a call fills.
Filled = list[tuple[str, Mapping[str, object]]]
_BUILTINS = frozenset(dir(builtins))
_MOST = 64  # functions followed from one call: a body's helpers, not a library


def filled_by(func: ast.AST, namespace: Mapping[str, object]) -> Filled:
    """The globals the function a call names (`configure`, `helpers.configure`,
    `Settings.load`) may fill, looked up in the caller's `namespace`."""
    found: Filled = []
    todo, seen = _resolve(func, namespace), set[int]()
    while todo and len(seen) < _MOST:
        fn = todo.pop()
        if id(fn.__code__) in seen:
            continue
        seen.add(id(fn.__code__))
        names, called = _changes(fn)
        found += [(name, fn.__globals__) for name in names]
        todo += [f for c in called for f in _resolve(c, fn.__globals__)]
    return found


def data(name: str, namespace: Mapping[str, object]) -> bool:
    """Whether a global a call is given, or whose method it calls, may hold
    data that call fills: not a module, a class, a function or a builtin.
    One stored into (`CONFIG["k"] = x`, `Cfg.rate = r`) counts whatever it is."""
    if name not in namespace:
        return name not in _BUILTINS  # made by the code (`global G; G = ...`)
    value = namespace[name]
    return not isinstance(value, (types.ModuleType, type)) and not callable(value)


def _changes(fn: types.FunctionType) -> tuple[set[str], list[ast.AST]]:
    """The globals `fn` may fill, and the functions its body calls."""
    code = fn.__code__
    src = source_of(code.co_filename, fn.__globals__)
    nodes = find_definitions(code, src)
    if len(nodes) != 1 or not runs_this_source(code, src, fn.__globals__):
        names = {n for c in nested_code(code) for n in c.co_names if data(n, fn.__globals__)}
        return names, []
    node = nodes[0]
    own = {n for c in nested_code(code) for n in (*c.co_varnames, *c.co_cellvars)}
    strong = changed([node], calls=False) | _declared_global(node)
    names = {
        n for n in changed([node]) if n not in own and (n in strong or data(n, fn.__globals__))
    }
    return names, [c.func for c in ast.walk(node) if isinstance(c, ast.Call)]


def changed(nodes: Iterable[ast.AST], *, calls: bool = True) -> set[str]:
    """The names these statements may store into or mutate; without `calls`,
    only those they bind or store into (an attribute or an item of)."""
    names: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                names.add(sub.id)
            elif isinstance(sub, (ast.Attribute, ast.Subscript)) and not isinstance(sub.ctx, ast.Load):
                names.add(base(sub))
            elif isinstance(sub, ast.Call) and calls:  # `ys.append(x)`, `fill(ys)` may mutate ys
                names.add(base(sub.func))
                names.update(base(a) for a in (*sub.args, *(k.value for k in sub.keywords)))
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                names.update(sub.names)
            elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
                names.add(sub.name)
            elif isinstance(sub, ast.MatchMapping) and sub.rest:
                names.add(sub.rest)
            elif isinstance(sub, ast.ExceptHandler) and sub.name:
                names.add(sub.name)
            elif isinstance(sub, ast.alias):
                names.add((sub.asname or sub.name).split(".")[0])
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(sub.name)
    names.discard("")
    return names


def base(node: ast.AST) -> str:
    """The name an expression's chain starts from (`ys` of `ys.items()[0]`), or ""."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return node.id if isinstance(node, ast.Name) else ""


def _declared_global(node: ast.AST) -> set[str]:
    return {n for sub in ast.walk(node) if isinstance(sub, ast.Global) for n in sub.names}


def _resolve(func: ast.AST, namespace: Mapping[str, object]) -> list[types.FunctionType]:
    """The user's Python functions a call's name chain names, through modules
    and classes only (looked up without running a property): the function,
    and those it wraps (a step, a decorator using `functools.wraps`)."""
    chain = list(_chain(func))
    value: object = namespace.get(chain[0]) if chain else None
    for attr in chain[1:]:
        if isinstance(value, types.ModuleType):
            value = vars(value).get(attr)
        elif isinstance(value, type):
            value = next((vars(k)[attr] for k in value.__mro__ if attr in vars(k)), None)
        else:
            return []
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    found: list[types.FunctionType] = []
    while isinstance(value, types.FunctionType) and len(found) < _MOST:
        # The user's own code: a library's globals (numpy's random state) are
        # program state, as a database's rows are; and following durable's
        # own functions would find its bookkeeping.
        root = (value.__module__ or "").partition(".")[0]
        if is_user_file(value.__code__.co_filename, root):
            found.append(value)
        value = getattr(value, "__wrapped__", None)
    return found


def _chain(func: ast.AST) -> Iterator[str]:
    if isinstance(func, ast.Attribute):
        head = list(_chain(func.value))
        if head:
            yield from (*head, func.attr)
    elif isinstance(func, ast.Name):
        yield func.id
