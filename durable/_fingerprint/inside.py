"""The attributes of the objects of the user's own classes that a registry
holds (`REG[name] = Entry(cls)`, `Holder((cls, opts))`): a step calling
`REG[name].cls().run(x)` runs the class held there, which the registry's
own items do not show. Looked into at C speed where the objects keep
their attributes in a plain `__dict__` (a list of 100k records of plain
data costs a pass over their attributes in C), each object once (a graph of them may hold
cycles). Pure standard library.
"""

from __future__ import annotations

import functools
import itertools
import sys
import types
from collections.abc import Iterable, Iterator
from typing import cast

from .attributes import _slots
from .imports import user_class

_SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None)})


def looked_into(items: list[object], kinds: set[type], seen: set[int], stack: list[object]) -> None:
    """The attributes of the objects of the user's classes or namespaces
    among `items` (of types `kinds`) not `seen` yet, put on `stack` as one
    flat list, to be looked through as a container's items are."""
    users = {k for k in kinds if _user_kind(k)}
    objs = items if users == kinds else [x for x in items if type(x) in users] if users else []
    if types.ModuleType in kinds:  # `NS = types.ModuleType("ns")` filled by `setattr`
        objs = [*objs, *(x for x in items if namespace_module(x))]
    try:  # records of plain data: one pass in C, nothing kept
        plain = _plain(users) and (_SCALARS.issuperset(map(type, _values(objs))) or None)
    except TypeError:  # a `__dict__` that is no dict
        plain = False
    if plain:
        return
    ids = set(map(id, objs))
    if len(ids) < len(objs) or not ids.isdisjoint(seen):  # each once: a graph of them may hold cycles
        fresh = dict(zip(map(id, objs), objs, strict=True))
        objs = [fresh[i] for i in ids - seen]
    seen.update(ids)
    if objs:
        stack.append(_flattened(list(_values(objs)) if plain is None else _attributes(objs), seen))


# The containers an object's attributes hold that are looked through here,
# a level of all of them at a time (`Rec(tags=["a"])` of 100k records: one
# list each, walked one by one, cost ~0.6 s a fingerprint).
_FLAT = frozenset({list, tuple, set, frozenset, dict})


def _flattened(values: list[object], seen: set[int]) -> list[object]:
    """`values`, the plain lists, tuples, sets and dicts (keys too) among
    them replaced by their items at any depth, each container once."""
    out: list[object] = []
    while values:
        if _FLAT.isdisjoint(map(type, values)):
            return out + values
        nested = [v for v in values if type(v) in _FLAT]
        out += [v for v in values if type(v) not in _FLAT]
        ids = set(map(id, nested))
        if len(ids) < len(nested) or not ids.isdisjoint(seen):
            fresh = dict(zip(map(id, nested), nested, strict=True))
            nested = [fresh[i] for i in ids - seen]
        seen.update(ids)
        dicts = [v for v in nested if type(v) is dict]
        values = list(itertools.chain.from_iterable(cast("list[Iterable[object]]", nested)))  # a dict's keys
        values += itertools.chain.from_iterable(map(dict.values, cast("list[dict[object, object]]", dicts)))
    return out


def namespace_module(value: object) -> bool:
    """A module object made as a namespace (`NS = types.ModuleType("ns")`,
    filled by `setattr` at import): no file and not imported, so no
    statement of its own shows what it holds; looked into by attribute, as a
    `SimpleNamespace` is. A module imported is counted by its statements."""
    if not isinstance(value, types.ModuleType):
        return False
    try:  # a lazy module (its `__getattr__` imports, or raises): as a module, never looked into
        return getattr(value, "__file__", None) is None and sys.modules.get(str(value.__name__)) is not value
    except Exception:
        return False


def _user_kind(kind: type) -> bool:
    """Objects of `kind` are the user's own, or a `SimpleNamespace`."""
    if issubclass(kind, types.SimpleNamespace):
        return True
    if issubclass(kind, (type, types.ModuleType, types.FunctionType, functools.partial)):
        return False
    return kind.__module__ != "builtins" and user_class(kind)


def _plain(kinds: set[type]) -> bool:
    """Objects of `kinds` keep their attributes in a `__dict__` alone."""
    return all(k.__dictoffset__ and not any("__slots__" in vars(c) for c in k.__mro__[:-1]) for k in kinds)


def _values(objs: list[object]) -> Iterator[object]:
    """The attribute values of objects with a plain `__dict__`, at C speed
    (as `object` reads it: an overridden `__getattribute__` does not run)."""
    owns = map(object.__getattribute__, objs, itertools.repeat("__dict__"))
    return itertools.chain.from_iterable(map(dict.values, cast("Iterator[dict[str, object]]", owns)))


def _attributes(objs: list[object]) -> list[object]:
    """The attribute values of `objs`, their slots' too, flat."""
    return [v for obj in objs for v in attribute_values(obj)]


def attribute_values(obj: object) -> list[object]:
    """The values of `obj`'s slots and `__dict__`, read as `object` reads
    them: no `__getattr__` or `__getattribute__` of the class runs. Through
    `getattr(obj, "__dict__", {})`, a slotted object whose `__getattr__`
    looks names up in a dict raised KeyError, and the whole object, with the
    class held in its slots, was taken to hold nothing (a stale replay)."""
    try:
        own = object.__getattribute__(obj, "__dict__")
    except AttributeError:  # slots alone
        own = {}
    except Exception:  # a `__dict__` property that raises: the instance's own, as `object` keeps it
        own = _own_dict(obj)
    return [v for _, v in _slots(obj)] + (list(own.values()) if isinstance(own, dict) else [])


def _own_dict(obj: object) -> object:
    """The dict `object` keeps for `obj`, through the C descriptor a class
    statement made, past a `__dict__` property the class defines."""
    for cls in type(obj).__mro__:
        slot = vars(cls).get("__dict__")
        if isinstance(slot, types.GetSetDescriptorType):
            try:
                return slot.__get__(obj)
            except Exception:  # not told here: counts as changed (`outsidevalues._told_or_changed`)
                return {}
    return {}
