"""Which functions made by a call hold what counts by its type only
(`holds_by_type_only`: then the statement that made the function counts
too), and the module-level names such a function, or a twin of it made by
the same code with the same values, is bound to (`names_bound_to`). Pure
standard library.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Mapping
from typing import Any

from .reach import _cell_value, is_durable, target_of
from .values import _live_tokens


def holds_by_type_only(fn: object) -> bool:
    """Whether a function made by a call (a factory's inner function, a
    `functools.partial`) holds, in its closure cells, defaults or bound
    arguments, something that counts by its type or name only (a list, dict
    or set, an object, a class, a module: `make_step([1, 2])`,
    `make_step(helpers.Model)`). Then the statement that made it must count
    too, or an edit of `[1, 2]` (or of the class) would go unseen."""
    held: list[object] = []
    while isinstance(fn, functools.partial):
        held += [fn.args, tuple(sorted(fn.keywords.items()))]
        fn = fn.func
    if isinstance(fn, types.MethodType):  # `score = Scorer().score`: its object
        held, fn = [*held, fn.__self__], fn.__func__
    target = target_of(fn)
    qualname = getattr(target, "__qualname__", None)
    if not held and not (isinstance(qualname, str) and "<locals>" in qualname):
        return False  # a module-level function: its statement is its own source
    if any(not k.startswith("__") for k in getattr(target, "__dict__", None) or ()):
        return True  # `inner.k = 1` in the factory: what the call made it with
    kw = getattr(target, "__kwdefaults__", None) or {}
    held += [getattr(target, "__defaults__", None), tuple(sorted(kw.items()))]
    held += [_cell_value(c) for c in getattr(target, "__closure__", None) or ()]
    held += [v.__self__ for v in held if isinstance(v, types.MethodType)]  # `make(Scorer().score)`
    # A class or module too (`make(helpers.Model)`): counted by its name there,
    # its code only through the statement that names it.
    return any(t.startswith(_BY_TYPE) for t in _live_tokens(tuple(held), []))


_BY_TYPE = ("obj:", "type:", "module:")


def names_bound_to(namespace: Mapping[str, Any], fn: object) -> list[str]:
    """The names bound to `fn`, or to the step or workflow made of it, in a
    module's namespace; else those bound to its twins (`twins_bound_to`)."""
    names = [
        k
        for k, v in list(namespace.items())
        if v is fn or (is_durable(v) and v is not fn and target_of(v) is fn)
    ]
    return names or twins_bound_to(namespace, fn)


def twins_bound_to(namespace: Mapping[str, Any], fn: object) -> list[str]:
    """The names bound to another function of `fn`'s very code made with
    the same values (`w = mk(1, OPTS)` beside `mk(1, OPTS)(5)`, one module):
    what the name's statement made, `fn` is too, so that statement counts
    for it, and the two share a run's records. A value counted by its type only (a list, an object) must be the
    very object the other holds; the rest must count the same."""
    if type(fn) is not types.FunctionType:
        return []
    names = []
    for name, value in list(namespace.items()):
        other = target_of(value) if is_durable(value) else value
        if type(other) is types.FunctionType and other is not fn and other.__code__ is fn.__code__:
            if _held_alike(fn, other):
                names.append(name)
    return names


def _held_alike(fn: types.FunctionType, other: types.FunctionType) -> bool:
    """Whether two functions of one code hold the same values (`twins_bound_to`)."""
    mine, theirs = _held_by(fn), _held_by(other)
    if mine.keys() != theirs.keys():
        return False
    for key, value in mine.items():
        if value is theirs[key]:
            continue
        toks = _live_tokens(value, [])
        if toks != _live_tokens(theirs[key], []) or any(t.startswith(_BY_TYPE) for t in toks):
            return False
    return True


def _held_by(fn: types.FunctionType) -> dict[object, object]:
    """What a function holds, each value by where: its defaults, keyword
    defaults, attributes (`inner.k = 1`) and closure cells."""
    held: dict[object, object] = dict(enumerate(fn.__defaults__ or ()))
    held.update((("kw", k), v) for k, v in (fn.__kwdefaults__ or {}).items())
    held.update((("attr", k), v) for k, v in vars(fn).items() if not k.startswith("__"))
    held.update((("cell", i), _cell_value(c)) for i, c in enumerate(fn.__closure__ or ()))
    return held
