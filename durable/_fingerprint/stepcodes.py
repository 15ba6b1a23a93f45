"""The names the user's code a function runs may read, and what they hold:
its own code's, and that of the user's functions, classes and partials it
names, at any depth (`helper(x)` reading `FACTOR` of its module, a class's
`Conf.factor`, a partial binding `OPTS`, a default, a closure or an
object's attribute holding it). For `derived.read_from_body`: a
global the workflow's body fills from a run argument counts for a step
reading it through a helper as for a step naming it. Not followed, a run
called again with another argument replayed what the old one computed.

Pure standard library."""

from __future__ import annotations

import collections
import functools
import types
from functools import lru_cache

from .callees import MOST
from .imports import user_module
from .reach import is_user_code, target_of
from .samecode import nested_code
from .userclasses import users_class

_MISSING = object()


@lru_cache(maxsize=4096)  # asked at each call of a step of such a run
def code_names(code: types.CodeType) -> frozenset[str]:
    return frozenset(n for c in nested_code(code) for n in c.co_names)


def reached_names(fn: types.FunctionType) -> tuple[frozenset[str], list[object], bool]:
    """The names `fn`'s code and the user's code it reaches name, the
    objects those names hold in their modules (and a partial binds), and
    whether the walk stopped before the end (past `MOST` functions, past
    `_DEEP` objects holding one another, at a container of more than
    `_ITEMS`, past `_VALUES` objects in all, or at an object it could not
    read: any name may be read)."""
    names: set[str] = set()
    walk = _Walk()
    todo, seen = [fn], set[int]()
    while todo and len(seen) < MOST:
        f = todo.pop()
        if id(f.__code__) in seen:
            continue
        seen.add(id(f.__code__))
        own = code_names(f.__code__)
        names |= own
        space = f.__globals__
        for name in own:
            value = space.get(name, _MISSING)
            if value is not _MISSING:
                todo += _held(value, own, walk)
    return frozenset(names), walk.values, bool(todo) or walk.cut


class _Walk:
    """What `_held` found: the objects, each once (an object holding itself
    is no deeper), and whether it stopped short of one."""

    def __init__(self) -> None:
        self.values: list[object] = []
        self.seen: set[object] = set()
        self.cut = False


_DEEP = 6  # objects holding one another (`partial(call, partial(call, h))`): past it, any name
_ITEMS = 256  # items of a container looked through; past them, any name
_VALUES = 4096  # objects looked at in all (a table of lists, at each call of such a step): past them, any name
_CONTAINERS = (dict, list, tuple, set, frozenset, collections.deque)


def _held(value: object, names: frozenset[str], walk: _Walk, depth: int = 0) -> list[types.FunctionType]:
    """Add `value` (and what a partial binds, the attributes `names` name of
    a module of the user's, a function's defaults and closure, the
    attributes of an object of the user's class, the items of a list, tuple,
    set or dict's values) to `walk`; the user's
    functions it runs. Cut short (too deep, or an object whose attributes
    raise), it says so (`walk.cut`): the function it did not see may read
    anything (fail closed)."""
    # A module is asked for what each function names of it (`names`), once for each.
    key = (id(value), names) if isinstance(value, types.ModuleType) else id(value)
    if key in walk.seen:
        return []
    walk.seen.add(key)
    walk.values.append(value)
    if depth > _DEEP or len(walk.values) > _VALUES:
        walk.cut = True
        return []
    if isinstance(value, functools.partial):
        bound = [value.func, *value.args, *value.keywords.values()]
        return [f for v in bound for f in _held(v, names, walk, depth + 1)]
    if isinstance(value, types.ModuleType):
        if not user_module(value):
            return []
        space = vars(value)
        return [f for n in names if n in space for f in _held(space[n], names, walk, depth + 1)]
    if isinstance(value, _CONTAINERS):  # a registry: `HANDLERS["a"](x)`, `REG["m"].run(x)`
        try:  # a subclass whose iteration raises: what it holds cannot be told
            items = None if len(value) > _ITEMS else list(value.values() if isinstance(value, dict) else value)
        except Exception:
            items = None
        if items is None or len(items) > _ITEMS:  # past `_ITEMS`: data, most likely, not looked through
            walk.cut = True
            return []
        return [f for v in items for f in _held(v, names, walk, depth + 1)]
    if isinstance(value, type):
        if not users_class(value):
            return []
        spaces = [vars(c) for c in value.__mro__ if users_class(c)]
        members = [getattr(m, "fget", None) or getattr(m, "__func__", m) for s in spaces for m in list(s.values())]
        # And what the code names of it that is no function (`App.model.run(x)`, `App.go(x)` of a partial).
        named = [s[n] for s in spaces for n in names if n in s and type(s[n]) is not types.FunctionType]
        return [m for m in members if type(m) is types.FunctionType and is_user_code(m)] + [
            f for v in named for f in _held(v, names, walk, depth + 1)
        ]
    try:
        target = target_of(value)
        if type(target) is not types.FunctionType:
            own = vars(value) if hasattr(value, "__dict__") else {}
            if users_class(type(value)):  # `MODEL` of `MODEL.run(x)`
                held = [type(value), *list(own.values())]
            else:  # a library's object holding yours (`NS = SimpleNamespace(m=M())`): what the code names of it
                held = [own[n] for n in names if n in own]
            return [f for v in held for f in _held(v, names, walk, depth + 1)]
    except Exception:  # a proxy whose attributes raise: what it runs cannot be told
        walk.cut = True
        return []
    if not is_user_code(target):
        return []
    # What it holds (`def f(x, opts=OPTS)`, a closure over `OPTS`, the object of a bound method
    # `MODEL.run`) it reads as surely as a name.
    cells = [c.cell_contents for c in target.__closure__ or () if c.cell_contents is not None]
    bound = [value.__self__] if isinstance(value, types.MethodType) else []
    held = [*bound, *cells, *(target.__defaults__ or ()), *(target.__kwdefaults__ or {}).values()]
    return [target, *(f for v in held for f in _held(v, names, walk, depth + 1))]
