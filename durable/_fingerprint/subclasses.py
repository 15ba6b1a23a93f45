"""The subclasses a function lists (`Plugin.__subclasses__()`): a plugin
registry that class statements fill, in the module of the base or in any
other. The function names the base only, and the base's statement says
nothing of them, so a function that lists them counts each subclass of the
user's own code (and theirs, recursively) as if it named it: by the
statements that bind it, with what they read, and its methods' code. A
subclass defined since (a new plugin, a notebook cell) is a change too."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

from .holds import user_class
from .reach import _MISSING, module_label
from .witness import witnessed

_LISTS = "__subclasses__"


def subclasses_read(
    fn: Any, chains: list[tuple[str, ...]], globs: Mapping[str, Any], names: set[str]
) -> Iterator[tuple[str, type, Mapping[str, Any]]]:
    """For each chain naming `X.__subclasses__` with X a class of the user's
    code (reached through modules and classes), or the class a method of it
    is given (`cls.__subclasses__()`, `self.__class__.__subclasses__()`:
    those of the class it is defined in, a superset), a key, each subclass
    and the namespace of the module that defines it."""
    if _LISTS not in names:
        return
    given = _first_parameter(fn)
    for chain in chains:
        if _LISTS not in chain[1:]:
            continue
        end = chain.index(_LISTS)
        if chain[0] == given and chain[1:end] in ((), ("__class__",)):
            obj = _owner(fn)
        else:
            obj = _resolved(chain[:end], globs, names)
        if not isinstance(obj, type) or not user_class(obj):
            continue
        key = ".".join(chain[: end + 1]) + ":"
        for sub in witnessed(all_subclasses, obj):
            home = sys.modules.get(sub.__module__)
            if home is not None and user_class(sub):  # keyed by module: two `Double`s differ
                yield f"{key}{module_label(sub.__module__)}.", sub, vars(home)


def all_subclasses(cls: type) -> tuple[type, ...]:
    """Its subclasses and theirs, each once, in the order they were made."""
    found: list[type] = []
    todo = [cls]
    while todo:
        subs: list[type] = type.__subclasses__(todo.pop(0))  # a metaclass's too
        for sub in subs:
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return tuple(found)


def _resolved(path: tuple[str, ...], globs: Mapping[str, Any], names: set[str]) -> object:
    """What a global name chain holds, through modules and classes."""
    obj = globs.get(path[0], _MISSING) if path[0] in names else _MISSING
    for attr in path[1:]:
        if not isinstance(obj, (types.ModuleType, type)):
            return _MISSING
        obj = witnessed(getattr, obj, attr, _MISSING)
    return obj


def _first_parameter(fn: Any) -> str | None:
    code = getattr(fn, "__code__", None)
    return code.co_varnames[0] if code is not None and code.co_argcount else None


def _owner(fn: Any) -> object:
    """The class a method is defined in, by its qualified name."""
    path = str(getattr(fn, "__qualname__", "")).split(".")[:-1]
    if not path or "<locals>" in path:
        return _MISSING
    return _resolved(tuple(path), getattr(fn, "__globals__", {}), {path[0]})
