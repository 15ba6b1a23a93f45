"""The part of a module-level statement whose reads count for a global
it hands to calls, or of a function whose body changes it
(`reads._statement_reads`). Pure standard library."""

from __future__ import annotations

import ast
import copy
import functools
import sys
import types
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from .imports import user_class, user_module
from .inplace import BLOCKS, READERS, passed, roots
from .nodes import walk
from .reach import code_objects, is_user_code
from .witness import witnessed


def handed_part(stmt: ast.AST, name: str, namespace: Mapping[str, Any]) -> ast.AST:
    """`_handed_part`, knowing which names a function's body reads are code
    that may change `name` (`_changes`): a statement calling one, or handing
    one to a call, may make it (`setk(BASE)` of `def setk(n): global K; K =
    n`, `setattr(sys.modules[__name__], "K", BASE)`)."""
    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _handed_part(stmt, name, frozenset())
    target = namespace.get(name, _UNBOUND)
    target = _UNBOUND if isinstance(target, (int, float, str, bytes, type(None))) else target  # `ONE = 1` is no alias
    here = {**namespace, **_imported(stmt)}  # `from helpers import setk` in its body
    attrs = tuple(sorted({n.attr for n in walk(stmt) if isinstance(n, ast.Attribute)}))
    code = [n for n in _read((stmt,)) if n in _SETS or witnessed(_changes, here.get(n), name, target, attrs)]
    return _handed_part(stmt, name, frozenset(code))


def _imported(fn: ast.AST) -> dict[str, object]:
    """What the imports in a function's body bind, as loaded now (it ran, or
    runs); for a module not loaded, or a relative import, `_UNKNOWN`, which
    `_changes` takes for code that may change anything (fail closed)."""
    found: dict[str, object] = {}
    for node in walk(fn):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.asname or alias.name.partition(".")[0]
                module = sys.modules.get(alias.name if alias.asname else alias.name.partition(".")[0])
                found[top] = module if module is not None else _UNKNOWN
        elif isinstance(node, ast.ImportFrom):
            module = sys.modules.get(node.module or "") if not node.level else None
            for alias in node.names:
                value = getattr(module, alias.name, _UNKNOWN) if module is not None else _UNKNOWN
                found[alias.asname or alias.name] = value
    return found


_UNBOUND, _UNKNOWN = object(), object()
_SETS = frozenset({"setattr", "delattr"})  # `setattr(sys.modules[__name__], "K", BASE)`


def _changes(value: object, name: str, target: object, attrs: tuple[str, ...]) -> bool:
    """Whether calling `value` may change the global `name` (bound to `target`): a
    function of the user's that names it (`global K`, `flow.K = v`, `setattr(m,
    "K", v)`), reaches every name, reads `target` by another name, or calls such
    code; a module of the user's, by its members the code names (`attrs`); a
    class of the user's, or an object of one, one of whose functions does; a
    method or partial of such a function; what cannot be told (`_UNKNOWN`), always;
    a library's, never."""
    todo, seen = [value], set()
    while todo:
        held = todo.pop()
        if id(held) in seen:
            continue
        seen.add(id(held))
        if held is _UNKNOWN:
            return True
        if isinstance(held, types.ModuleType):
            if user_module(held) and name in attrs:  # `flow.K = BASE`
                return True
            if user_module(held):
                todo += [vars(held).get(a) for a in attrs]
        elif isinstance(held, (types.MethodType, functools.partial)):
            todo += [getattr(held, "__func__", None) or getattr(held, "func", None)]
        elif isinstance(held, types.FunctionType) and is_user_code(held):
            if _names(held, name, target, todo):
                return True
        elif user_class(cls := held if isinstance(held, type) else type(held)):
            todo += [f for c in cls.__mro__ if user_class(c) for m in vars(c).values() for f in _functions(m)]
    return False


def _names(fn: types.FunctionType, name: str, target: object, todo: list[object]) -> bool:
    """Whether `fn` names `name`, reaches every name or reads `target`; what it reads, added to `todo`."""
    todo += [getattr(c, "cell_contents", None) for c in fn.__closure__ or ()]  # an empty cell raises
    for code in code_objects(fn.__code__):
        said = {*code.co_names, *(c for c in code.co_consts if isinstance(c, str))}
        held = [fn.__globals__.get(n) for n in code.co_names]
        if name in said or said & (_ANY_NAME | _SETS) or any(h is target for h in held):
            return True
        # A module it names, by the members it names (`helpers.setk`); one its body imports too.
        mods = [*held, *(sys.modules.get(n) for n in code.co_names)]
        todo += held + [vars(m).get(a) for m in mods if isinstance(m, types.ModuleType) and user_module(m)
                        for a in code.co_names]  # fmt: skip
    return False


def _functions(member: object) -> list[object]:
    """The functions of a class member: itself, a static or class method's, a property's."""
    if isinstance(member, property):
        return [member.fget, member.fset, member.fdel]
    return [getattr(member, "__func__", member)]


@lru_cache(maxsize=1024)
def _handed_part(stmt: ast.AST, name: str, code: frozenset[str]) -> ast.AST:
    """For an expression statement that is one of `name`'s only because it
    hands `name` to calls (`print(first, wf(1), json.dumps(COUNTS),
    results)`): those calls, callee and arguments (`json.dumps(COUNTS)`),
    whose reads decide what may happen to it; the rest only shows values.
    Read whole, the statement counted `results`, which the script fills
    with the workflow's outputs, and the second call of the workflow was
    refused as changed. Any other statement whole (it binds, or changes
    `name` by a method: `COUNTS.clear()`)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _made_part(stmt, name, code)
    if not isinstance(stmt, ast.Expr):
        return stmt
    every = [c for c in walk(stmt) if isinstance(c, ast.Call)]
    calls = [c for c in every if name in passed(c, READERS)]
    # And a call of what those return (`apply(COUNTS)(rate)`, `wrap(COUNTS).update(rate)`).
    inner = {id(c) for c in calls}
    calls += [c for c in every if id(c) not in inner and any(id(n) in inner for n in walk(c.func))]
    return ast.Module(body=[ast.Expr(c) for c in calls], type_ignores=[]) if calls else stmt


# What a function body reads every local and global through: it is read whole.
_ANY_NAME = frozenset({"globals", "locals", "vars", "eval", "exec", "__import__"})
_LEAVES = (ast.Return, ast.Raise, ast.Break, ast.Continue, ast.Assert)
_HEADS = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try, ast.Match)


def _made_part(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str, code: frozenset[str]) -> ast.AST:
    """For a function whose body changes `name` (`def main(): CFG["k"] = 2`,
    then `LOG.clear()`, the workflow's calls and `print(LOG)`): the `def`
    with the statements of its body that `name` may be made from (each
    whole, with the blocks it is in), its decorators and defaults; the rest
    (a log the steps fill, emptied and shown) is no input of `name`. Erring
    towards more: a statement that stores into, changes or hands to a call
    a name joins every name it and the conditions and loops around it read,
    both ways (`c = CFG`, then `c["k"] = len(LOG)`: `LOG` counts); a
    function, class or lambda defined in the body joins all it names;
    `globals()`, `vars()`, `eval`, `exec`: the whole `def`. Read whole, `LOG`
    counted by its contents, and the second call of a script's completed
    run was refused as changed. A statement calling or handing on `code`
    (the module's functions, classes, modules) may make `name` too: left
    out, `setk(BASE)` made K from BASE unseen, and an edit of BASE was
    replayed with the old output."""
    if any(isinstance(n, ast.Name) and n.id in _ANY_NAME for n in walk(fn)):
        return fn
    units = [(top, unit) for top in fn.body for unit in _units([top], (), code)]
    joined: dict[str, set[str]] = {}
    # What decides a `return` or `raise` above: whether the rest runs (in a loop, the
    # statement the loop is in is kept whole, with what decides a `break`).
    leaving: frozenset[str] = frozenset()
    for _, (changed, read, leaves) in units:
        changed = changed | {name} if "*" in changed else changed
        read = read | leaving if changed else read
        leaving = leaving | read if leaves else leaving
        for n in changed:
            joined.setdefault(n, set()).update(changed | read)
        for n in read:
            joined.setdefault(n, set()).update(changed)
    reach, todo = {name}, [name]
    while todo:
        for n in joined.get(todo.pop(), ()):
            if n not in reach:
                reach.add(n)
                todo.append(n)
    kept = {id(top): top for top, (changed, _, _) in units if changed & (reach | {"*"})}
    part = copy.copy(fn)
    part.body = list(kept.values()) or [ast.Pass()]
    return part


def _units(
    body: list[ast.stmt], around: tuple[ast.AST, ...], code: frozenset[str]
) -> Iterator[tuple[frozenset[str], frozenset[str], bool]]:
    """(the names a statement may change, the names it and the headers of the blocks
    around it read, whether it leaves the function or its loop), for each simple
    statement of `body` in order, at any depth of its blocks."""
    for stmt in body:
        if isinstance(stmt, _HEADS):
            head = [getattr(stmt, f) for f in ("test", "iter", "subject") if getattr(stmt, f, None) is not None]
            head += [i for item in getattr(stmt, "items", ()) for i in (item.context_expr, item.optional_vars) if i]
            target = getattr(stmt, "target", None)
            inner = (*around, *head)
            yield _changed(head, code), _read(inner), False  # `if setk(BASE):`, `with open(p) as f:`
            if target is not None:  # `for x in LOG:`: x is made from LOG
                yield _changed([target], code), _read(inner), False
            for block in BLOCKS:
                for part in getattr(stmt, block, ()) or ():
                    if isinstance(part, (ast.ExceptHandler, ast.match_case)):
                        extra = [x for x in (getattr(part, "type", None), getattr(part, "guard", None)) if x]
                        yield from _units(part.body, (*inner, *extra), code)
                    else:
                        yield from _units([part], inner, code)
        else:
            yield _changed([stmt], code), _read((stmt, *around)), isinstance(stmt, _LEAVES)


def _changed(nodes: list[ast.AST], code: frozenset[str]) -> frozenset[str]:
    """What a statement may change: names it stores into or deletes (the root of
    `X[k] = v`, `X.a = v`), the object of a method it calls, what it hands to a call,
    and everything a function, class or lambda it defines names; and `*`, any global,
    when it calls, changes or hands on `code`."""
    found: set[str] = set()
    callees: set[str] = set()
    for node in (n for top in nodes for n in walk(top)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            found.update(_read((node,)) | {getattr(node, "name", "")})
        elif isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Starred)) and isinstance(
            getattr(node, "ctx", None), (ast.Store, ast.Del)
        ):
            found.update(roots(node))
        elif isinstance(node, ast.Call):
            found.update(passed(node, READERS))
            found.update(roots(node.func.value) if isinstance(node.func, ast.Attribute) else ())
            callees.update(roots(node.func))
    return frozenset(found - {""}) | ({"*"} if (found | callees) & code else set())


def _read(nodes: tuple[ast.AST, ...]) -> frozenset[str]:
    return frozenset(n.id for top in nodes for n in walk(top) if isinstance(n, ast.Name))
