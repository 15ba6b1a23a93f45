"""What a value holds that a function may call through it, told from the
running objects alone: the functions, steps and workflows in a list or
dict (`HANDLERS[kind](x)`), in the attributes of an object of the user's
own classes (`registry.get(name)`), in a module of the user's own code
used as a whole (`getattr(helpers, name)`), or registered with a
`functools.singledispatch` function (`@fmt.register`). Pure standard
library.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Mapping
from typing import Any

from .bindings import module_statements
from .canon import node_hash
from .contents import module_state
from .imports import user_class as user_class
from .reach import _cell_value, _followable, is_durable, target_of
from .values import _live_tokens, fallback_tokens, hash_tokens
from .witness import witnessed

# And their subclasses: a registry is often a `defaultdict(list)` or an `OrderedDict`.
_CONTAINERS = (list, tuple, set, frozenset, dict)
_SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None)})


def holds_callables(value: object) -> bool:
    """Whether `held_callables` can find anything in it without looking
    into objects: the engine's reach looks into containers only (a step
    reached otherwise is fingerprinted when it is called)."""
    return isinstance(value, _CONTAINERS)


def held_callables(value: object) -> list[object]:
    """The functions, steps and workflows held in a list, tuple, set or
    dict at any depth, or in the attributes of an object of the user's own
    classes (and of the objects those hold, by attribute): calling one
    through it is calling it. An object inside a container is not looked
    into, so that a list of a million records costs what a list does."""
    if not isinstance(value, _CONTAINERS) and not _user_object(value):
        return []
    found: list[object] = []
    stack, seen = [value], {id(value)}
    while stack:
        current = stack.pop()
        by_attribute = not isinstance(current, _CONTAINERS)
        items = _items(current)
        kinds = set(map(type, items))  # a million records, told at C speed
        if kinds <= _SCALARS or (
            not by_attribute and not any(issubclass(k, _CONTAINERS) for k in kinds) and not any(map(callable, items))
        ):
            continue
        for item in items:
            if isinstance(item, _CONTAINERS) or (by_attribute and _user_object(item)):
                if id(item) not in seen:
                    seen.add(id(item))
                    stack.append(item)
            elif callable(item) and _followable(item):
                found.append(item)
    return found


def held_classes(value: object) -> tuple[type, ...]:
    """The classes a list, tuple, set or dict (its values) holds at any
    depth (`REG[kind][name]`), or the attributes of an object of the user's own classes (a
    registry's `classes[name]`), as `held_callables` looks, and the
    classes of your own of the objects there (`REG[name] = cls()`): a
    class decorator or a metaclass fills such a registry as another
    module's classes are made. By name, each once: a set's order is not a
    change."""
    if not isinstance(value, _CONTAINERS) and not _user_object(value):
        return ()
    found: dict[int, type] = {}
    stack, seen = [value], {id(value)}
    while stack:
        current = stack.pop()
        by_attribute = not isinstance(current, _CONTAINERS)
        # A dict's values only (a registry maps names to classes): half the scan of a large table.
        items = list(current.values()) if isinstance(current, dict) else _items(current)
        kinds = set(map(type, items))  # a million records, told at C speed
        # The class of an instance it holds (`REG[name] = cls()`): its methods run as it is called.
        found.update((id(k), k) for k in kinds if k.__module__ != "builtins" and user_class(k))
        if kinds <= _SCALARS or (
            not by_attribute and not any(issubclass(k, _CONTAINERS) for k in kinds) and not any(issubclass(k, type) for k in kinds)
        ):
            continue
        for item in items:
            if isinstance(item, _CONTAINERS) or (by_attribute and _user_object(item)):
                if id(item) not in seen:
                    seen.add(id(item))
                    stack.append(item)
            elif isinstance(item, type):
                found[id(item)] = item
    return tuple(sorted(found.values(), key=lambda c: (c.__module__, c.__qualname__)))


def module_callables(module: types.ModuleType) -> list[object]:
    """What a module holds by name or in its containers and objects: used
    as a whole (`getattr(helpers, name)`, `run(helpers)`), any of it may
    be called."""
    return held_callables([v for k, v in list(vars(module).items()) if not k.startswith("__")])


def whole_module(module: types.ModuleType) -> tuple[list[object], str]:
    """A module used as a whole, not only through names (any of it may
    run): the callables it holds and the hash of its statements."""
    reached = witnessed(module_callables, module)
    witnessed(module_class_code, module)  # its classes' running code, besides its text
    found = module_statements(vars(module))
    whole = witnessed(fallback_tokens, module) if found is None else list(map(node_hash, found))
    state = witnessed(module_state, module)  # `K = 2` between two calls
    return reached, hash_tokens(whole if state is None else [*whole, state])


def dispatched(fn: object) -> tuple[object, ...]:
    """The implementations registered with a `functools.singledispatch`
    function, besides the one it wraps: which one runs depends on the
    argument's type. A tuple: a memo's check of it is identity tests alone
    (the empty tuple is one object)."""
    registry = fn.__dict__.get("registry") if type(fn) is types.FunctionType else None
    if not isinstance(registry, types.MappingProxyType):
        return ()
    wrapped = target_of(fn)
    return tuple(f for f in list(registry.values()) if f is not wrapped and _followable(f))


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


def class_code(cls: type) -> tuple[object, ...]:
    """The code objects of the functions a class of the user's code defines
    (methods, static and class methods, properties' accessors, cached
    properties' functions), and of the classes it nests. A class counts by
    its statement's text, which a plain cache hit does not read again
    (`Witness.holds` without files): these tell it that %autoreload swapped
    a method's `__code__` after an edit. (Whether a class is the user's
    does not change: asked once, not here.)"""
    found: list[object] = []
    for value in list(vars(cls).values()):  # copied in C: another thread may add to it
        kind = type(value)
        if kind is types.FunctionType:
            found.append(value.__code__)
        elif kind is staticmethod or kind is classmethod:
            found.append(getattr(value.__func__, "__code__", None))
        elif kind is property:
            found += [getattr(f, "__code__", None) for f in (value.fget, value.fset, value.fdel)]
        elif kind is functools.cached_property:
            found.append(getattr(value.func, "__code__", None))
        elif isinstance(value, type) and value.__qualname__.startswith(cls.__qualname__ + "."):
            found += class_code(value)
    return tuple(found)


def foreign_members(cls: type) -> tuple[object, ...]:
    """The functions a class of the user's code holds that its own statement
    did not define (`H.compute = patched`, assigned later, in a function or
    by a test's monkeypatch): the class counts by its statement's text,
    which does not show them, so each counts by its own code. A function
    made in the class body, or wrapped with `functools.wraps` from one,
    carries the class's qualified name. So does an implementation another
    module registered with a `functools.singledispatchmethod` of the class
    (`@Model.fmt.register` in `plugin.py`): which one runs depends on the
    argument's type; and the functions of a property, cached property or
    `partialmethod` set on it so (`Model.k = property(get_k)`)."""
    prefix = cls.__qualname__ + "."
    found: list[object] = []
    for value in list(vars(cls).values()):  # copied in C: another thread may add to it
        held = [value]
        if isinstance(value, functools.singledispatchmethod):
            held = list(getattr(value.dispatcher, "registry", {}).values())
        elif isinstance(value, property):  # `Model.k = property(get_k)` in `plugin.py`
            held = [value.fget, value.fset, value.fdel]
        elif isinstance(value, (functools.cached_property, functools.partialmethod)):
            held = [value.func]
        for fn in (f.__func__ if type(f) in (staticmethod, classmethod) else f for f in held):
            if type(fn) is types.FunctionType and not fn.__qualname__.startswith(prefix):
                found.append(fn)
    return tuple(found)


def module_class_code(module: types.ModuleType) -> tuple[object, ...]:
    """`class_code` of every class a module of the user's code defines: used
    as a whole (`getattr(helpers, name)()`), any of them may run."""
    name = module.__name__
    return tuple(
        code
        for value in list(vars(module).values())
        if isinstance(value, type) and value.__module__ == name
        for code in class_code(value)
    )


def _user_object(value: object) -> bool:
    """An instance of a class of the user's own code."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType, functools.partial)):
        return False
    kind = type(value)
    return kind.__module__ != "builtins" and user_class(kind)


def _items(current: object) -> list[object]:
    if isinstance(current, dict):
        return [*current.keys(), *current.values()]
    if isinstance(current, (list, tuple, set, frozenset)):
        return list(current)
    try:  # an object of the user's classes: its attributes
        return list(vars(current).values())
    except Exception:  # no __dict__ (slots), or an odd __getattribute__
        return []
