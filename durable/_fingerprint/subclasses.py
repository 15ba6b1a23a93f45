"""The classes a function reaches that `class` statements registered, in
the module of the base or in any other: the subclasses it lists
(`Plugin.__subclasses__()`) and those a registry of the base holds
(`Plugin.registry`, filled by its `__init_subclass__`), or a module-level
registry a class decorator or a metaclass fills (`REG["name"]`). The
function names the base or the registry only, and their statements say
nothing of them, so each
such class of the user's own code counts as if the function named it: by
the statements that bind it, with what they read, and its methods' code. A
class defined since (a new plugin, a notebook cell) is a change too."""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

from .holds import held_classes, user_class
from .nodes import walk
from .reach import _MISSING, module_label
from .witness import witnessed

_LISTS = "__subclasses__"


def subclasses_read(
    fn: Any,
    nodes: tuple[ast.AST, ...],
    chains: list[tuple[str, ...]],
    globs: Mapping[str, Any],
    names: set[str],
) -> Iterator[tuple[str, type, Mapping[str, Any]]]:
    """For each chain naming `X.__subclasses__` with X a class of the user's
    code (reached through modules and classes), or the class a method of it
    is given (`cls.__subclasses__()`, `self.__class__.__subclasses__()`,
    `type(self).__subclasses__()`: those of the class it is defined in, a
    superset), and for each chain naming a list, dict, tuple or set a class
    of the user's code holds: a key, each class and the namespace of the
    module that defines it."""
    given = _first_parameter(fn)
    unknown = False
    for chain in [*chains, *_hidden(nodes, given)]:
        if _LISTS in chain[1:]:
            end = chain.index(_LISTS)
            if chain[0] in (given, _TYPE_OF + str(given)) and chain[1:end] in ((), ("__class__",)):
                obj = _owner(fn)
            else:
                obj = _resolved(chain[:end], globs, names)
            # A library's class lists the user's subclasses of it too (`abc.ABC`).
            found = witnessed(all_subclasses, obj) if isinstance(obj, type) else ()
            unknown = unknown or not isinstance(obj, type)
            key = ".".join(chain[: end + 1]).replace(f"{_TYPE_OF}{given}", f"type({given})") + ":"
        elif chain[0] in names:
            key, found = _registered(chain, globs, names)
        else:
            continue
        yield from _homes(key, found)
    if unknown:  # `kind.__subclasses__()` of a class it is given: any of its module's
        bases = [_owner(fn), *(v for v in list(globs.values()) if isinstance(v, type))]
        for base in (b for b in bases if _users(b)):
            yield from _homes(f"{_LISTS}:", witnessed(all_subclasses, base))


def _homes(key: str, found: tuple[type, ...]) -> Iterator[tuple[str, type, Mapping[str, Any]]]:
    for held in found:
        home = sys.modules.get(held.__module__)
        if home is not None and user_class(held):  # keyed by module: two `Double`s differ
            yield f"{key}{module_label(held.__module__)}.", held, vars(home)


# The head of a chain standing for `type(x)`, which no name chain shows.
_TYPE_OF = "type:"


# The head of a chain whose object no name chain shows (`make().__subclasses__`).
_UNKNOWN = "?"


def _hidden(nodes: tuple[ast.AST, ...], given: str | None) -> list[tuple[str, ...]]:
    """`X.__subclasses__` where X is no name chain: `type(self)` as the
    chain of `self.__class__` (it lists the same classes), any other
    (`type(x)`, `make()`, `kinds[0]`) as a chain of an unknown object."""
    found: list[tuple[str, ...]] = []
    for node in (sub for n in nodes for sub in walk(n)):
        value = node.value if isinstance(node, ast.Attribute) and node.attr == _LISTS else None
        if value is None or isinstance(value, (ast.Name, ast.Attribute)):
            continue
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "type"
            and given is not None
            and [getattr(a, "id", None) for a in value.args] == [given]
        ):
            found.append((_TYPE_OF + given, _LISTS))
        else:
            found.append((_UNKNOWN, _LISTS))
    return found


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


def _registered(
    chain: tuple[str, ...], globs: Mapping[str, Any], names: set[str]
) -> tuple[str, tuple[type, ...]]:
    """The path to a registry the chain reaches, held by a class of the
    user's code (`Plugin.registry` of `Plugin.registry.values()`), a
    global or a module (`REG["name"]`, `registry.REG`: filled by a class
    decorator or a metaclass as another module's classes are made), and
    the classes it holds."""
    obj = globs.get(chain[0], _MISSING)
    if held := witnessed(held_classes, obj):
        return chain[0] + ":", held
    for i, attr in enumerate(chain[1:], start=2):
        if isinstance(obj, type) and user_class(obj):
            obj = witnessed(getattr, obj, attr, None)
        elif isinstance(obj, types.ModuleType):  # witnessed by `reads._resolve` already
            obj = getattr(obj, attr, _MISSING)
        else:
            break
        if held := witnessed(held_classes, obj):
            return ".".join(chain[:i]) + ":", held
    return "", ()


def _users(obj: object) -> bool:
    return isinstance(obj, type) and user_class(obj)


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
