"""A global handed to the constructor of the user's class, kept on `self`
and changed there by a method (`Box(LOG).add(x)` of `self.log = log` and
`self.log.append(x)`), for `handedwrites`: the object made is thrown away,
the change stays in `LOG`, and a replay that skips it leaves the object
the import made. A class whose methods only read what they keep
(`Client(CONFIG)`) writes none of it.

Pure standard library."""

from __future__ import annotations

import ast
import dataclasses
import types
from collections.abc import Mapping
from typing import Any

from .heldobjects import definitions
from .nodes import walk
from .reach import is_user_code
from .selfchanges import changes
from .userclasses import users_class

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def kept_changed(cls: type, init: ast.AST | None) -> set[str] | None:
    """The parameters of `init` (the `def` of `cls.__init__`) that it keeps
    on `self` under an attribute a method of `cls` changes in place; None:
    any of them (`__init__` or a method whose code cannot be read)."""
    changed = _changed_in_place(cls)
    if changed is None or not isinstance(init, _FUNCS):
        return None if changed is None or changed else set()
    params = [a.arg for a in (*init.args.posonlyargs, *init.args.args)]
    me = params[0] if params else ""
    kept: set[str] = set()
    for stmt in (n for n in walk(init) if isinstance(n, (ast.Assign, ast.AnnAssign))):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        mine = [t for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me]
        if stmt.value is not None and any(t.attr in changed for t in mine):
            kept |= {n.id for n in walk(stmt.value) if isinstance(n, ast.Name)}
    return kept


def fields_changed(cls: type) -> tuple[list[str], set[str] | None] | None:
    """A dataclass's generated `__init__`: the fields it takes, in order,
    and those a method changes in place (None: any); None for another class."""
    init = vars(cls).get("__init__")
    if not (dataclasses.is_dataclass(cls) and isinstance(init, types.FunctionType) and _generated(cls, init)):
        return None
    return [f.name for f in dataclasses.fields(cls) if f.init], _changed_in_place(cls)


def _generated(owner: type, fn: types.FunctionType) -> bool:
    """A method `dataclasses` wrote for `owner` (`__init__`, `__repr__`, `__eq__`): no file."""
    return dataclasses.is_dataclass(owner) and fn.__code__.co_filename == "<string>" and fn.__name__.startswith("__")


def _changed_in_place(cls: type) -> set[str] | None:
    """The attributes of `self` the methods of `cls` (its own classes'
    along the MRO) change in place: written into, a changing method called
    on them, handed to a call that may change them; not only bound
    (`self.a = v`). None: a method's code cannot be read."""
    found: set[str] = set()
    for owner in (c for c in cls.__mro__ if users_class(c)):
        for member in list(vars(owner).values()):
            fn = getattr(member, "__func__", member)
            if not isinstance(fn, types.FunctionType) or not is_user_code(fn) or _generated(owner, fn):
                continue  # a library's, or a dataclass's `__init__`, `__eq__`: changes none in place
            defs = definitions(fn)
            if len(defs) != 1 or not isinstance(defs[0], _FUNCS):
                return None
            found |= _in_place(defs[0], fn.__globals__)
    return found


def _in_place(fn: ast.FunctionDef | ast.AsyncFunctionDef, globs: Mapping[str, Any]) -> set[str]:
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if not params:
        return set()
    parents = {id(c): p for p in walk(fn) for c in ast.iter_child_nodes(p)}
    found: set[str] = set()
    for part in walk(fn):
        if not (
            isinstance(part, ast.Attribute)
            and isinstance(part.value, ast.Name)
            and part.value.id == params[0]
        ):
            continue
        above = parents.get(id(part))
        if isinstance(part.ctx, ast.Store) and isinstance(above, (ast.Assign, ast.AnnAssign)):
            continue  # `self.a = v`: bound anew, what it held is unchanged
        if changes(part, parents, globs):
            found.add(part.attr)
    return found
