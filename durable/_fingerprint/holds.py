"""What a value holds that a function may call through it, told from the
running objects alone: the functions, steps and workflows in a list or
dict (`HANDLERS[kind](x)`), in the attributes of an object of the user's
own classes (`registry.get(name)`), in a module of the user's own code
used as a whole (`getattr(helpers, name)`), or registered with a
`functools.singledispatch` function (`@fmt.register`). Pure standard
library.
"""

from __future__ import annotations

import collections
import contextvars
import functools
import itertools
import types
import weakref
from collections.abc import Iterable
from typing import Any, cast

from .bindings import module_statements
from .canon import node_hash
from .contents import module_state
from .imports import user_class as user_class
from .inside import attribute_values, looked_into, namespace_module
from .reach import _followable, target_of
from .values import fallback_tokens, hash_tokens
from .witness import witnessed

# And their subclasses: a registry is often a `defaultdict(list)` or an `OrderedDict`,
# or one of the standard library's other containers held in memory: a weak one
# (what it holds is alive while its module holds it), a read-only view
# (`MappingProxyType(_REG)`), a `UserDict`, a `ChainMap`, a `deque`. Not any
# `Mapping`: a library's may read a file or a server as it is iterated.
_WEAK_MAPS = (weakref.WeakValueDictionary, weakref.WeakKeyDictionary, types.MappingProxyType)
_WRAPPERS = (collections.UserDict, collections.UserList, collections.ChainMap)
# A dict's live views too (`PLUGINS = REG.values()`).
_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))
_SEQUENCES = (list, tuple, set, frozenset, collections.deque, weakref.WeakSet, *_VIEWS)
_CONTAINERS = (dict, *_SEQUENCES, *_WEAK_MAPS, *_WRAPPERS)
_SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None)})
# Exactly these types hold nothing either walker looks into (no container, no
# bound method of one: not `types.BuiltinFunctionType`, which `REG.get` is; no
# object of the user's classes, no partial or method of one): answered
# without `_container_of` and the `isinstance` tests of ABCs it makes, most
# of a memo check's cost of a name bound to a function, a module or a number.
_LEAVES = frozenset({*_SCALARS, object, type, types.FunctionType, types.ModuleType})


def holds_callables(value: object) -> bool:
    """Whether `held_callables` can find anything in it without looking
    into objects: the engine's reach looks into containers only (a step
    reached otherwise is fingerprinted when it is called)."""
    return isinstance(value, _CONTAINERS)


def held_callables(value: object) -> list[object]:
    """The functions, steps and workflows held in a list, tuple, set or
    dict at any depth (or another container of the standard library's,
    or a method of one: `REG.get`), or in the attributes of an object of
    the user's own classes or a `SimpleNamespace` (and of the objects
    those hold, by attribute): calling one
    through it is calling it. An object of the user's classes inside a
    container is looked into too (`REG[name] = Entry(fn)`), at C speed
    (`inside`)."""
    if type(value) in _LEAVES and not _namespace(value):
        return []
    value = _container_of(value)
    if not isinstance(value, _CONTAINERS) and not _user_object(value):
        return []
    found: list[object] = []
    stack, seen = [value], {id(value)}
    while stack:
        items, kinds = _referents(_items(stack.pop()))
        if kinds <= _SCALARS:
            continue
        looked_into(items, kinds, seen, stack)  # `REG[name] = Entry(fn)`
        if not any(issubclass(k, _CONTAINERS) for k in kinds) and not any(map(callable, items)):
            continue
        for item in items:
            if isinstance(item, _CONTAINERS):
                if id(item) not in seen:
                    seen.add(id(item))
                    stack.append(item)
            elif callable(item) and _followable(item):
                found.append(item)
    return found


def held_classes(value: object) -> tuple[type, ...]:
    """The classes a list, tuple, set or dict (its values, and its keys
    when they are classes: `REG[cls] = name`) holds at any
    depth (`REG[kind][name]`), or the attributes of an object of the user's own classes (a
    registry's `classes[name]`), as `held_callables` looks, and the
    classes of your own of the objects there (`REG[name] = cls()`), and
    those a partial or a class method there makes (`partial(cls, 1)`,
    `cls.create`): a
    class decorator or a metaclass fills such a registry as another
    module's classes are made. By name, each once: a set's order is not a
    change."""
    if type(value) in _LEAVES and not _namespace(value):
        return ()
    value = _container_of(value)
    if not isinstance(value, _CONTAINERS) and not _user_object(value):
        return ()
    found: dict[int, type] = {}
    stack, seen = [value], {id(value)}
    while stack:
        current = stack.pop()
        # A dict's values only (a registry maps names to classes): half the scan of a large table.
        items = _items(current, values_only=True)
        if isinstance(current, dict) and _keyed_by_classes(current):  # `REG[cls] = name`
            items += list(current)
        items, kinds = _referents(items)
        # The class of an instance it holds (`REG[name] = cls()`): its methods run as it is called.
        found.update((id(k), k) for k in kinds if k.__module__ != "builtins" and user_class(k))
        if kinds <= _SCALARS:
            continue
        looked_into(items, kinds, seen, stack)  # `REG[name] = Entry(cls)`
        if not any(issubclass(k, (*_CONTAINERS, *_MAKERS)) for k in kinds):
            continue
        for item in items:
            if isinstance(item, _CONTAINERS):
                if id(item) not in seen:
                    seen.add(id(item))
                    stack.append(item)
            elif isinstance(made := made_by(item), type):
                found[id(made)] = made
    return tuple(sorted(found.values(), key=lambda c: (c.__module__, c.__qualname__)))


# What stands for a class in a registry: the class, a partial of it
# (`partial(P, 1)`), a class method bound to it (`P.create`).
_MAKERS = (type, functools.partial, types.MethodType)


def made_by(item: object) -> object:
    """The class `item` is, or makes as a partial of it or a class method
    bound to it; else `item` itself."""
    while isinstance(item, functools.partial):
        item = item.func
    return item.__self__ if isinstance(item, types.MethodType) else item


def module_callables(module: types.ModuleType) -> list[object]:
    """What a module holds by name or in its containers and objects: used
    as a whole (`getattr(helpers, name)`, `run(helpers)`), any of it may
    be called."""
    return held_callables([v for k, v in list(vars(module).items()) if not k.startswith("__")])


def whole_module(module: types.ModuleType, reached: list[object]) -> str:
    """A module used as a whole, not only through names (any of it may
    run): the hash of its statements; the callables it holds go to `reached`."""
    reached.extend(witnessed(module_callables, module))
    witnessed(module_class_code, module)  # its classes' running code, besides its text
    found = module_statements(vars(module))
    whole = witnessed(fallback_tokens, module) if found is None else list(map(node_hash, found))
    state = witnessed(module_state, module)  # `K = 2` between two calls
    return hash_tokens(whole if state is None else [*whole, state])


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


def _namespace(value: object) -> bool:
    """A module made as a namespace (`NS = types.ModuleType("ns")`, filled by
    a plugin's `setattr`): looked into as a `SimpleNamespace` is, not a leaf.
    As a leaf, `from registry import NS` ... `getattr(NS, name)(x)` counted
    nothing of what it holds and replayed the plugin's old output after an
    edit (`registry.NS` counted it through the whole module)."""
    return type(value) is types.ModuleType and namespace_module(value)


def _container_of(value: object) -> object:
    """The container, or the object of the user's classes, a method of it
    reads (`LOOKUP = REG.get`, `LOOKUP = registry.get`), what a partial binds
    (`partial(dict.__getitem__, REG)`), what a context variable holds in the
    running context (`REG.get()[name]`, its default when not set), else `value`."""
    if isinstance(value, contextvars.ContextVar):
        try:
            return value.get()
        except LookupError:  # neither set nor given a default: `get()` raises, nothing is held
            return value
    if isinstance(value, functools.partial):
        return (*value.args, *value.keywords.values())
    if isinstance(value, (types.BuiltinMethodType, types.MethodType)):
        holder = getattr(value, "__self__", None)
        return holder if isinstance(holder, _CONTAINERS) or _user_object(holder) else value
    return value


def _user_object(value: object) -> bool:
    """An instance of a class of the user's own code, or a namespace of the
    standard library's (`OPS = SimpleNamespace()`, filled by a decorator):
    looked into by attribute."""
    if isinstance(value, types.SimpleNamespace) or namespace_module(value):
        return True
    if isinstance(value, (type, types.ModuleType, types.FunctionType, functools.partial)):
        return False
    kind = type(value)
    return kind.__module__ != "builtins" and user_class(kind)


def _keyed_by_classes(table: dict[Any, Any]) -> bool:
    """Whether a dict's keys are classes, objects of the user's classes, or tuples
    holding one (`REG[(cls, "json")] = name`): a registry keyed by what it registers.
    Told by the set of their types, made at C speed, of every key: a sample would let
    a class registered past it change unseen (~50 ms a million keys, each call)."""
    kinds = set(map(type, table))
    if tuple in kinds:
        pairs = table if len(kinds) == 1 else [k for k in table if type(k) is tuple]
        kinds |= set(map(type, itertools.chain.from_iterable(pairs)))
    return any(issubclass(k, type) or (k.__module__ != "builtins" and user_class(k)) for k in kinds)


def _referents(items: list[object]) -> tuple[list[object], set[type]]:
    """The items, a weak reference standing for what it refers to (a registry
    keeping no plugin alive: `REG[name] = weakref.ref(cls)`), and their types."""
    kinds = set(map(type, items))  # a million records, told at C speed
    if not any(issubclass(k, weakref.ref) for k in kinds):
        return items, kinds
    items = [x() if isinstance(x, weakref.ref) else x for x in items]
    return items, set(map(type, items))


def _items(current: object, values_only: bool = False) -> list[object]:
    if isinstance(current, dict):
        return list(current.values()) if values_only else [*current.keys(), *current.values()]
    if isinstance(current, _SEQUENCES):  # a weak set's items are its live ones
        return list(cast("Iterable[object]", current))
    if isinstance(current, collections.ChainMap):
        return list(current.maps)
    if isinstance(current, (collections.UserDict, collections.UserList)):
        return [current.data]
    if isinstance(current, _WEAK_MAPS):  # a weak-keyed one's keys are what it registers
        pairs = list(current.items())
        keyed = not values_only or isinstance(current, weakref.WeakKeyDictionary)
        return [v for pair in pairs for v in (pair if keyed else pair[1:])]
    return attribute_values(current)  # an object of the user's: its attributes, slots' too (`__slots__ = ("classes",)`)
