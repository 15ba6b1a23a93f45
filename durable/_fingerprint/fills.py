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
import sys
import types
from collections import ChainMap
from collections.abc import Iterable, Iterator, Mapping, Sequence

from .callees import MOST, Deferred, Runs, referenced, resolve
from .heads import ANY, EVERYWHERE, Heads
from .imports import absolute
from .runtime import run_time_calls
from .samecode import nested_code
from .source import find_definitions, runs_this_source, source_of
from .userclasses import users_class

# (name, the module namespace it lives in) of each global a call fills.
Filled = list[tuple[str, Mapping[str, object]]]
_BUILTINS = frozenset(dir(builtins))


def filled_by(func: ast.AST, namespace: Mapping[str, object]) -> Filled:
    """The globals the function a call names (`configure`, `helpers.configure`,
    `Settings.load`) may fill, looked up in the caller's `namespace`."""
    return _filled(resolve(func, namespace), namespace)


def filled_through(node: ast.AST, namespace: Mapping[str, object]) -> Filled:
    """The globals the functions `node` names without calling them may fill
    (`f = configure`, `map(configure, xs)`, `for f in SETTERS`: `referenced`)."""
    return _filled(referenced(node, namespace), namespace)


def _filled(todo: list[types.FunctionType], namespace: Mapping[str, object]) -> Filled:
    found: Filled = []
    seen = set[int]()
    while todo and len(seen) < MOST:
        fn = todo.pop()
        if id(fn.__code__) in seen:
            continue
        seen.add(id(fn.__code__))
        names, called, node = _changes(fn)
        found += [(name, fn.__globals__) for name in names]
        if node is not None:
            found += module_writes(node, fn.__globals__)
            todo += referenced(node, fn.__globals__)
            found += [(ANY, EVERYWHERE)] if any(run_time_calls([node], fn.__globals__)) else []
        todo += [f for c in called for f in resolve(c, fn.__globals__)]
    if todo:  # more than a body's helpers: what is left unread may fill any module's
        found.append((ANY, EVERYWHERE))
    return found


def filled_elsewhere(
    body: Sequence[ast.AST], namespace: Mapping[str, object], params: frozenset[str], deferred: Deferred
) -> Iterator[tuple[str, Mapping[str, object], Runs]]:
    """The globals the body fills other than by name: through a function it
    calls (`configure(xs)` filling its module's CONFIG), through a module
    (`cfg.SCALE = s`) or `globals()`; each with where that runs
    (`Deferred`), None when it cannot be told: a function the body names
    without calling it (`f = configure`, `map(configure, xs)`), and one the
    run is given (`setup(xs)`) or one only the run knows (`pick(kind)(xs)`:
    any global)."""
    imported = {k: v for stmt in body for k, v in imported_in(stmt, namespace).items()}
    heads = Heads(body, ChainMap[str, object](imported, dict(namespace)), namespace)
    named = heads.modules  # `m = cfg` then `m.configure(xs)`
    for unknown in run_time_calls(body, named):
        yield from ((ANY, EVERYWHERE, runs) for runs in deferred.runs_at(unknown.lineno))
    for stmt in body:
        for name, home, line in writes_at(stmt, namespace, imported, heads):
            yield from ((name, home, runs) for runs in deferred.runs_at(line))
        for call in ast.walk(stmt):
            if isinstance(call, ast.Call):
                where = deferred.runs_at(call.lineno)
                yield from ((n, h, runs) for n, h in filled_by(call.func, named) for runs in where)
                if isinstance(call.func, ast.Name) and call.func.id in params:
                    yield ANY, EVERYWHERE, None
        yield from ((n, h, None) for n, h in filled_through(stmt, named))


def module_writes(node: ast.AST, namespace: Mapping[str, object]) -> Filled:
    """The globals of other modules `node` stores into or mutates through
    their module (`cfg.SCALE = s`, `cfg.CONFIG["k"] = v`,
    `cfg.CONFIG.update(v)`, `fill(cfg.CONFIG)`, a module it imports itself
    included), and those of its own it reaches through `globals()`
    (`globals()["CONFIG"]["k"] = v`; `ANY` when the key is not written out)."""
    return [(name, home) for name, home, _ in writes_at(node, namespace)]


def writes_at(
    node: ast.AST,
    namespace: Mapping[str, object],
    imported: Mapping[str, object] | None = None,
    heads: Heads | None = None,
) -> list[tuple[str, Mapping[str, object], int]]:
    """`module_writes`, each with the line it is written on; `imported`: the
    modules the function `node` is part of imports (`imported_in`);
    `heads`: what its names hold (`Heads`), when read for a whole body."""
    if heads is None:
        own = imported_in(node, namespace) if imported is None else imported
        heads = Heads([node], ChainMap[str, object](dict(own), dict(namespace)), namespace)
    found: list[tuple[str, Mapping[str, object], int]] = []
    for sub in ast.walk(node):
        targets: list[ast.expr]
        if isinstance(sub, (ast.Attribute, ast.Subscript)) and not isinstance(sub.ctx, ast.Load):
            targets, stored = [sub], True
        elif isinstance(sub, ast.Call):
            targets, stored = [sub.func, *sub.args, *(k.value for k in sub.keywords)], False
            hit = heads.set_by_call(sub)  # `setattr(cfg, "SCALE", s)`
            found += [(*hit, sub.lineno)] if hit is not None else []
        else:
            continue
        for target in targets:
            hit = heads.reached(target)
            if hit is None:
                continue
            # a method called on a class (`cfg.Settings.load(r)`) may set its attributes
            on_class = target is targets[0] and _method_of_class(target, *hit)
            if stored or on_class or hit[0] == ANY or data(*hit):
                found.append((*hit, sub.lineno))
    return found


def _method_of_class(func: ast.AST, name: str, home: Mapping[str, object]) -> bool:
    return isinstance(func, ast.Attribute) and func.attr != name and users_class(home.get(name))


def kept(name: str, namespace: Mapping[str, object], strong: set[str], classes: set[str]) -> bool:
    """Whether a global a statement changes may be filled by it: one it
    stores into, one holding data, or a class a method is called on
    (`Settings.load(r)`; `classes`: `method_bases`)."""
    return name in strong or data(name, namespace) or (name in classes and users_class(namespace.get(name)))


def method_bases(nodes: Iterable[ast.AST]) -> set[str]:
    """The names methods are called on (`Settings` of `Settings.load(r)`)."""
    return {
        base(sub.func)
        for node in nodes
        for sub in ast.walk(node)
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
    }


def imported_in(node: ast.AST, namespace: Mapping[str, object]) -> dict[str, object]:
    """The modules `import` statements inside `node` bind, as imported now,
    and what `from m import f` binds of them; a relative one (`from .
    import setup`) resolved from the package of `namespace`, the module the
    function `node` is part of."""
    bound: dict[str, object] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Import):
            for alias in sub.names:
                name = alias.name if alias.asname else alias.name.partition(".")[0]
                bound[alias.asname or name] = sys.modules.get(name)
        elif isinstance(sub, ast.ImportFrom):
            module = absolute(sub.module or "", sub.level, str(namespace.get("__package__") or ""))
            for alias in sub.names if module else ():
                inner = sys.modules.get(f"{module}.{alias.name}")
                outer = getattr(sys.modules.get(module), "__dict__", {})
                bound[alias.asname or alias.name] = inner if inner is not None else outer.get(alias.name)
    return {name: module for name, module in bound.items() if module is not None}


def data(name: str, namespace: Mapping[str, object]) -> bool:
    """Whether a global a call is given, or whose method it calls, may hold
    data that call fills: not a module, a class, a function or a builtin.
    One stored into (`CONFIG["k"] = x`, `Cfg.rate = r`) counts whatever it is."""
    if name not in namespace:
        return name not in _BUILTINS  # made by the code (`global G; G = ...`)
    value = namespace[name]
    return not isinstance(value, (types.ModuleType, type)) and not callable(value)


def _changes(fn: types.FunctionType) -> tuple[set[str], list[ast.AST], ast.AST | None]:
    """The globals of its module `fn` may fill, the functions its body
    calls, and its syntax tree (None when its source cannot be read)."""
    code = fn.__code__
    src = source_of(code.co_filename, fn.__globals__)
    nodes = find_definitions(code, src)
    if len(nodes) != 1 or not runs_this_source(code, src, fn.__globals__):
        names = {n for c in nested_code(code) for n in c.co_names if data(n, fn.__globals__)}
        return names, [], None
    node = nodes[0]
    own = {n for c in nested_code(code) for n in (*c.co_varnames, *c.co_cellvars)}
    strong = changed([node], calls=False) | _declared_global(node)
    classes = method_bases([node])
    names = {n for n in changed([node]) if n not in own and kept(n, fn.__globals__, strong, classes)}
    return names, [c.func for c in ast.walk(node) if isinstance(c, ast.Call)], node


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
