"""Where each write of a loaded module of the user's lands (`placed`),
for `elsewhere`'s index: by the module and name it reaches, by the object
it changes, by name alone where the text does not tell the module; and
what placing it read, so that it is placed again once a name it went
through holds something else. A write that cannot change what it reaches
(`cwd=ROOT`, `t.TEMPLATE.replace(a, b)`: a path or a string) lands nowhere.

Pure standard library."""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Mapping
from typing import Any

from .imports import user_class
from .source import current_text
from .values import unchanging
from .writes import ANY, CALLED, GIVEN, IN_PLACE, LOOKED, MODULE_ROOT, Path, writes_of

# Values shared by identity without being one object a program changes.
_SHARED = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset)
MISSING = object()
# What a call that only looks at what it is handed (`sorted`, `json.dumps`) leaves as it was: these very types.
_LOOKED_AT = frozenset({list, dict, set, frozenset, tuple, str, bytes})
# A write: the module whose text makes it, and its module-level statement.
Entry = tuple[types.ModuleType, ast.AST]


# A name read in placing a write (the namespace, the name, what it held),
# and a write placed (the table, its key, the write, what the key is of).
Read = tuple[Mapping[str, Any], str, object]
Placed = tuple[str, object, Entry, object]
# id of a module -> (the module, its writes, its number of names, what
# placing them read, where they went): placed again only when one changed.
_PLACED: dict[int, tuple[Any, Any, int, tuple[Read, ...], tuple[Placed, ...]]] = {}


def placed(writer: types.ModuleType) -> tuple[tuple[Read, ...], tuple[Placed, ...]]:
    """Where the writes of `writer`'s text land, and what placing them read."""
    namespace = vars(writer)
    writes = writes_of(current_text(writer.__file__, namespace))  # type: ignore[arg-type]
    hit = _PLACED.get(id(writer))
    if hit is not None and hit[0] is writer and hit[1] is writes and hit[2] == len(namespace):
        if all(space.get(key, MISSING) is value for space, key, value in hit[3]):
            return hit[3], hit[4]
    read: dict[tuple[int, str], Read] = {}
    landed: list[Placed] = []
    for path, unit in writes:
        _place(landed, read, (writer, unit), path)
    if len(_PLACED) > 16384:  # modules made and dropped again and again (tests)
        _PLACED.clear()
    _PLACED[id(writer)] = (writer, writes, len(namespace), (*read.values(),), (*landed,))
    return _PLACED[id(writer)][3:]


def _place(landed: list[Placed], read: dict[tuple[int, str], Read], entry: Entry, path: Path) -> None:
    """Place the write through `path` by what it reaches now, noting what
    it read. A root that holds no module or object now (`target = None`,
    bound at run time to a module) may reach any, as a module whose name
    the text does not give (`sys.modules[k]`)."""
    root, namespace = path[0], vars(entry[0])
    value: object = None
    if path[1:] == (CALLED,):  # `configure(k)` imported from `cfg`: as `cfg.configure(k)`
        fn = _read(read, namespace, root)
        home = sys.modules.get(getattr(fn, "__module__", None) or "")
        if isinstance(fn, types.FunctionType) and home is not None and fn.__globals__ is vars(home):
            landed.append(("names", (id(vars(home)), CALLED + fn.__name__), entry, home))
        return
    if path[-1] in (GIVEN, LOOKED):
        value = namespace.get(root)
        if value is None or unchanging(value):  # nothing a call changes
            return
        if path[-1] == LOOKED and type(value) in _LOOKED_AT:  # `json.dumps(CFG)`: read, not consumed
            return
        path = (root, ANY)
    # Where the object a method is called on sits in the path, if one is.
    changed = len(path) - 2 if path[-1] == IN_PLACE or path[-1].startswith(CALLED) else -1
    path = path[:-1] if path[-1] == IN_PLACE else path
    if root.startswith(MODULE_ROOT):
        key = root[len(MODULE_ROOT) :]
        value = entry[0] if key == "__name__" else _read(read, sys.modules, key) if key else value
    else:
        value = namespace.get(root, MISSING)
        if value is MISSING:  # a local name: not followed
            return
        read[id(namespace), root] = (namespace, root, value)
    if value is None or value is MISSING or isinstance(value, _SHARED):
        if len(path) > 1:
            landed.append(("anywhere", path[1], entry, None))
        return
    for i in range(1, len(path) + 1):
        if changeable(value):  # changed in place, an item or attribute set
            landed.append(("objects", id(value), entry, value))
        if i == len(path) or not isinstance(value, (types.ModuleType, type)):
            return
        member = _member(read, value, path[i]) if path[i] != ANY else None
        if i == changed and member is not None and unchanging(member):
            return  # `t.TEMPLATE.replace(a, b)`: a string's method changes no name
        if isinstance(value, types.ModuleType):
            landed.append(("names", (id(vars(value)), path[i]), entry, value))
        if path[i] == ANY:
            return
        value = member


def _read(read: dict[tuple[int, str], Read], space: Mapping[str, Any], key: str) -> object:
    value = space.get(key, MISSING)
    read[id(space), key] = (space, key, value)
    return value


def _member(read: dict[tuple[int, str], Read], owner: types.ModuleType | type, name: str) -> object:
    """`owner.name` as stored: no module `__getattr__`, no descriptor run."""
    for space in (owner,) if isinstance(owner, types.ModuleType) else owner.__mro__:
        found = _read(read, vars(space), name)
        if found is not MISSING:
            return found
    return None


def changeable(value: object) -> bool:
    """An object a write may change for the step that reads it: not a value
    nothing changes in place (`unchanging`: `cwd=ROOT`), a module, nor a library's class or builtin (`Fraction
    .from_float(x)` in a test changes nothing a step reading `Fraction` sees)."""
    if unchanging(value) or isinstance(value, (types.ModuleType, types.BuiltinFunctionType)):
        return False
    return not isinstance(value, type) or user_class(value)
