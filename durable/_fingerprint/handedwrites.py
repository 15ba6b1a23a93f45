"""A global a step hands to a function of the user's that writes into the
parameter taking it (`log(LOG, x)` of `def log(items, x): items.append(x)`),
for `helperreads.helper_writes`: as `written.written_in` counts a write by
name, such a hand-off is the write, and a replay that skips it leaves the
object the import made.

Pure standard library."""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Mapping
from typing import Any

from .changers import library_writer
from .heldobjects import definitions
from .imports import user_class
from .inplace import roots
from .keptwrites import fields_changed, kept_changed
from .nodes import walk
from .reach import is_user_code
from .source import find_definitions, runs_this_source, source_of
from .written import method, through_names, written_in

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
SCALARS = (int, float, complex, str, bytes, bool, type(None))


def handed_writes(node: ast.AST, globs: Mapping[str, Any], logs: bool, depth: int = 0) -> set[str]:
    """The names `node` hands to a function of the user's that writes into the
    parameter taking it (`log(LOG, x)` of `def log(items, x): items.append(x)`):
    as `written_in` counts a write by name, such a hand-off is the write. So
    is one the function hands on to another that writes it (`_put(items, x)`),
    binds to another name (`store = items`), or takes in `*args` or
    `**kwargs` it writes; a method of an object of the user's class
    (`w.put(LOG, x)`) takes it after `self`. Not a number (rebound there)."""
    found: set[str] = set()
    # A parameter of a function nested in it (`args` of `def wrapper(*args): return fn(*args)`)
    # is no global: handed on unseen, it was taken for a write of one.
    nested = {a.arg for f in walk(node) if isinstance(f, _FUNCS) and f is not node for a in ast.walk(f.args) if isinstance(a, ast.arg)}
    for call in (n for n in walk(node) if isinstance(n, ast.Call)):
        given: list[tuple[int | str, str]] = [(i, n) for i, a in enumerate(call.args) for n in _handed_roots(a)]
        given += [(k.arg, n) for k in call.keywords if k.arg for n in _handed_roots(k.value)]
        given = [(at, n) for at, n in given if (n in globs and type(globs[n]) not in SCALARS) or (n not in globs and n not in nested)]
        func = _spelled(call.func)
        if given and not isinstance(func, (ast.Name, ast.Attribute)):  # `OPS["add"](LOG, x)`: not told
            found.update(name for _, name in given)
            continue
        try:  # a proxy's attributes may raise anything: not told
            made = _made(func, globs) if given else None
            told = _definition(func, node, globs) if given and made is None else None
        except Exception:
            made, told = None, ([], globs, 0)
        if made is not None:  # `Box(LOG)`: what its `__init__` changes, or keeps for a method to change
            found.update(_kept(made, given, logs, depth))
            continue
        if told is None:  # a library's: one changing the list handed to it first writes it, or
            # one handed a function of yours writing a parameter (`pool.submit(add, LOG, x)`)
            runs = _runs_a_writer(call, node, globs, logs, depth)
            found.update(n for at, n in given if (runs and not isinstance(globs.get(n), _CODE)) or (at == 0 and library_writer(func, globs, logs)))
            continue
        defs, space, shift = told
        if len(defs) != 1 or depth >= 8:
            found.update(name for _, name in given)  # not told: any it is given
            continue
        args = defs[0].args
        params = [a.arg for a in (*args.posonlyargs, *args.args)][shift:]
        named = {*params, *(a.arg for a in args.kwonlyargs)}
        changed = _changed(defs, space, logs, depth)
        for at, name in given:
            if isinstance(at, int):
                param = params[at] if at < len(params) else args.vararg.arg if args.vararg else None
            else:
                param = at if at in named else args.kwarg.arg if args.kwarg else None
            if param is None or param in changed:
                found.add(name)
    return found


# What a hand-off to a library's call hands a function of yours (`pool.submit(add, LOG, x)`) that is no data.
_CODE = (types.FunctionType, type, types.ModuleType)


_Defs = list[ast.FunctionDef | ast.AsyncFunctionDef]


def _definition(func: ast.AST, node: ast.AST, globs: Mapping[str, Any]) -> tuple[_Defs, Mapping[str, Any], int] | None:
    """The definition of the function of the user's `func` names (one, else
    not told: a lambda, a parameter, a local import), where it looks its
    names up and how many parameters it binds itself; None for a
    library's. Raises what a proxy's attributes raise."""
    fn, shift = _callee(func, globs)
    local = func.id if isinstance(func, ast.Name) and func.id not in globs else None
    if fn is None and local is not None and local not in vars(builtins):  # a name the body binds
        # `def add(xs, v): xs.append(v)` inside the step
        return [d for d in walk(node) if isinstance(d, _FUNCS) and d.name == local and d is not node], globs, 0
    if fn is None:
        return None
    src, space = source_of(fn.__code__.co_filename, fn.__globals__), fn.__globals__
    defs = find_definitions(fn.__code__, src) if src.tree is not None and runs_this_source(fn.__code__, src, space) else []
    return [d for d in defs if isinstance(d, _FUNCS)] if len(defs) == 1 else [], space, shift


def _changed(defs: _Defs, space: Mapping[str, Any], logs: bool, depth: int) -> set[str]:
    """What the function `defs` holds writes, by another name bound to it, a
    part of it or a shallow copy sharing its parts, or handed on."""
    return through_names(defs[0], set(written_in(list(defs), logs) | handed_writes(defs[0], space, logs, depth + 1)), logs)


def _made(func: ast.AST, globs: Mapping[str, Any]) -> type | None:
    """The class of the user's a call constructs (`Box(LOG)`), if it does."""
    cls = resolved(func, globs)
    return cls if isinstance(cls, type) and user_class(cls) else None


def _kept(cls: type, given: list[tuple[int | str, str]], logs: bool, depth: int) -> set[str]:
    """Those of `given` (a place in the call, the global there) the
    constructor of `cls` changes or keeps on `self` for a method to change
    (`keptwrites`); any where its code cannot be read."""
    init = next((vars(c)["__init__"] for c in cls.__mro__ if "__init__" in vars(c)), None)
    fn = user_function(init)
    defs = [d for d in definitions(fn) if isinstance(d, _FUNCS)] if fn is not None else []
    if len(defs) != 1 or fn is None:
        fields = fields_changed(cls)  # a dataclass's: a field a method changes is what it is handed
        names, changes = fields if fields is not None else ([], None)
        if changes is not None:
            return {n for at, n in given if (names[at] if isinstance(at, int) and at < len(names) else at) in changes}
        return {n for _, n in given} if kept_changed(cls, None) is None or depth >= 8 else set()
    kept = kept_changed(cls, defs[0])
    if kept is None:
        return {n for _, n in given}
    args = defs[0].args
    params = [a.arg for a in (*args.posonlyargs, *args.args)][1:]
    changed = kept | _changed(defs, fn.__globals__, logs, depth)
    star = {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    at_param = {at: params[at] if isinstance(at, int) and at < len(params) else at for at, _ in given}
    return {n for at, n in given if at_param[at] in changed or (at_param[at] not in params and star & changed)}


def _runs_a_writer(call: ast.Call, node: ast.AST, globs: Mapping[str, Any], logs: bool, depth: int) -> bool:
    """Whether a library's call is handed a function of the user's that writes
    one of its parameters (`pool.submit(add, LOG, x)`, `Thread(target=add,
    args=(LOG, x))`, `map(add, [LOG], [x])`, `partial(add, LOG)`): it may
    call it with anything else it is handed, in any place (fail closed). A
    function writing none (`sorted(ROWS, key=by_date)`) is no writer."""
    for arg in (*call.args, *(k.value for k in call.keywords)):
        if not isinstance(arg, (ast.Name, ast.Attribute)) or (isinstance(arg, ast.Name) and arg.id in vars(builtins)):
            continue
        try:
            told = _definition(arg, node, globs)
        except Exception:  # a proxy's attributes raise: not told
            return True
        if told is None or (not told[0] and isinstance(arg, ast.Name) and arg.id not in globs):
            continue  # a library's, or a local holding data (`pool.submit(add, rows)`)
        defs, space, shift = told
        if len(defs) != 1 or depth >= 8:
            return True
        args = defs[0].args
        params = {a.arg for a in (*args.posonlyargs, *args.args)[shift:]}
        params |= {a.arg for a in (args.vararg, *args.kwonlyargs, args.kwarg) if a is not None}
        if params & _changed(defs, space, logs, depth):
            return True
    return False


def _spelled(func: ast.expr) -> ast.expr:
    """`getattr(Ops, "add")` as the `Ops.add` it names."""
    got = method(func) if isinstance(func, ast.Call) else None
    return func if got is None or got[1] is None else ast.Attribute(value=got[0], attr=got[1], ctx=ast.Load())


def _handed_roots(arg: ast.AST) -> list[str]:
    """The global an argument hands over, whole or a part of it (`LOG`,
    `STATE["items"]`, `Box.items`, `cfg.LOG`: `roots`), one of those it may
    be (`LOG if x else []`, `LOG or []`), or one a literal holds
    (`{"items": LOG}`); none for a slice, a copy."""
    if isinstance(arg, ast.Subscript) and isinstance(arg.slice, ast.Slice):
        return []
    if isinstance(arg, (ast.Dict, ast.List, ast.Tuple, ast.Set, ast.IfExp, ast.BoolOp)):
        parts = arg.values if isinstance(arg, (ast.Dict, ast.BoolOp)) else [arg.body, arg.orelse] if isinstance(arg, ast.IfExp) else arg.elts
        return [n for p in parts for n in _handed_roots(p)]
    return roots(arg) if isinstance(arg, (ast.Name, ast.Attribute, ast.Subscript, ast.NamedExpr, ast.Starred)) else []


def _callee(func: ast.AST, globs: Mapping[str, Any]) -> tuple[types.FunctionType | None, int]:
    """The function of the user's a call runs and how many parameters it
    binds itself (`self` of `w.put` for an object of the user's class, `cls`
    of a class method). Raises what a proxy's attributes raise."""
    target = resolved(func, globs)
    if target is None and isinstance(func, ast.Attribute):
        owner = resolved(func.value, globs)
        if owner is not None and not isinstance(owner, (type, types.ModuleType)) and user_class(type(owner)):
            target = next((vars(c)[func.attr] for c in type(owner).__mro__ if func.attr in vars(c)), None)
            return user_function(target), 0 if isinstance(target, staticmethod) else 1
    if isinstance(target, types.MethodType):  # `put = w.put`
        return user_function(target.__func__), 1
    return user_function(target), 1 if isinstance(target, classmethod) else 0


def resolved(func: ast.AST, space: Mapping[str, Any]) -> object:
    """What a dotted name (`describe`, `helpers.Describer.describe`) names,
    looked up without running the code of a class (its own `__dict__`s)."""
    if isinstance(func, ast.Name):
        return space.get(func.id)
    if not isinstance(func, ast.Attribute):
        return None
    owner = resolved(func.value, space)
    if isinstance(owner, types.ModuleType):
        return vars(owner).get(func.attr)
    if isinstance(owner, type) and user_class(owner):
        return next((vars(c)[func.attr] for c in owner.__mro__ if func.attr in vars(c)), None)
    return None


def user_function(value: object) -> types.FunctionType | None:
    value = getattr(value, "__func__", value) if isinstance(value, (staticmethod, classmethod)) else value
    return value if type(value) is types.FunctionType and is_user_code(value) else None
