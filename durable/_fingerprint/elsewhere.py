"""A module's global set or changed from another module of the user's
code: `settings.RATES = [3]` or `settings.RATES.append(3)` in `plugin.py`,
or in a function of it that its import calls (`configure()`),
`setattr(settings, "RATES", ...)`, `settings.CFG["k"] = 3`, and, through
another name bound to the same object, `Cfg.RATES = [3]` after `from
settings import Cfg`. The statements of `settings` do not show it, so
what a step reads as `settings.RATES` would count by statements that no
longer made it: those other statements count too (each whole
module-level statement, a `def` for a write in its body), fail closed,
whether or not it ran.

Pure standard library."""

from __future__ import annotations

import ast
import importlib
import operator
import sys
import types
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from .bindings import module_statements
from .canon import node_hash
from .imports import user_module
from .inplace import LOOKS
from .source import parse, source_of
from .witness import CHECKS, Witness, recording, remember, same

# The attribute of a write whose name is not a string in the text
# (`setattr(settings, name, value)`): it may set any name.
_ANY = "?"
# The root of the path of a module taken out of `sys.modules`
# (`sys.modules["settings"].K = 1`): it may be any module.
_ANY_MODULE = "sys.modules[]"
_IMPORTERS = (("importlib", "import_module"), ("import_module",))
# Values shared by identity without being one object a program changes.
_SHARED = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset)

Path = tuple[str, ...]


def elsewhere_of(namespace: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """`written_elsewhere`, for a fingerprint being memoised, and witnessed
    by `_again`: checked on each step call, the scan of every loaded module
    made `test_cache.py` ten times slower. The files it read are witnessed
    as files (a run's start reports an edit)."""
    found, witness = _found(namespace, name, files=True)
    remember(_again, (namespace, name), found)
    for fn, args, value in witness.files:
        remember(fn, args, value)
    return found


def _again(namespace: Mapping[str, Any], name: str) -> tuple[str, ...]:
    # In a check: `loaded_state` as at its start (asked for each global).
    if _CHECKED[0] != CHECKS[0]:
        _CHECKED[:] = [CHECKS[0], loaded_state()]
    hit = _FOUND.get((id(namespace), name))  # `_found`'s hit, inline: the common case
    if hit is not None and hit[0] is namespace and hit[2] is _CHECKED[1]:
        if hit[1] is namespace.get(name, _MISSING):
            return hit[3]
    return _found(namespace, name, files=False, state=_CHECKED[1])[0]


_CHECKED: list[Any] = [-1, None]


def _found(
    namespace: Mapping[str, Any], name: str, *, files: bool, state: object = None
) -> tuple[tuple[str, ...], Witness]:
    """The last scan's, while the object `name` holds and `loaded_state`
    are the same (and, with `files`, the files it read): else it is made
    again, and the old tuple kept when equal (checked by identity)."""
    key = (id(namespace), name)
    hit = _FOUND.get(key)
    held = namespace.get(name, _MISSING)
    state = state or loaded_state()
    if hit is not None and hit[0] is namespace and hit[1] is held and hit[2] is state:
        if not files or hit[4].holds():
            return hit[3], hit[4]
    with recording(Witness()) as witness:
        found = written_elsewhere(namespace, name)
    if hit is not None and hit[0] is namespace and same(found, hit[3]):
        found = hit[3]
    if len(_FOUND) >= 4096:  # namespaces made again and again (a notebook)
        _FOUND.clear()
    _FOUND[key] = (namespace, held, state, found, witness)
    return found, witness


def written_elsewhere(namespace: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """The hashes of the module-level statements of the user's other loaded
    modules that set or change, through a name chain, `name` of the module
    whose namespace is `namespace` or the object it holds. ConfigurationError
    when such a module's file was edited after import: its text is not
    what ran."""
    home = sys.modules.get(str(namespace.get("__name__")))
    if home is None or vars(home) is not namespace:
        return ()
    held = namespace.get(name)
    obj = None if isinstance(held, (*_SHARED, types.ModuleType)) else held
    found: list[str] = []
    for module in _user_modules():
        if module is home or not _near(vars(module), home, obj):
            continue
        src = source_of(module.__file__, vars(module))  # type: ignore[arg-type]
        units = [
            unit
            for root, writes in _writes(src.text).items()
            if _may_reach(vars(module), root, home, obj)
            for path, unit in writes
            if _through(vars(module), path, name, home, obj)
        ]
        if units:
            module_statements(vars(module))  # refused when edited after import
        found += [node_hash(u) for u in dict.fromkeys(units)]
    return tuple(found)


_LOADED: tuple[tuple[object, ...], tuple[types.ModuleType, ...]] = ((), ())
_MISSING = object()
# (namespace, what the name held, `loaded_state`, the hashes, what they were read from)
_FOUND: dict[tuple[int, str], tuple[Any, Any, Any, tuple[str, ...], Witness]] = {}
# (number of modules, the last one loaded, then the user's modules: their
# keys, the modules, their specs and numbers of names), as last told by
# `loaded_state`, which gives this very tuple while they hold.
_STATE: list[tuple[Any, ...]] = [(-1, None, None, (), (), (), ())]
_SPEC = operator.attrgetter("__spec__")


def loaded_state() -> tuple[object, ...]:
    """The modules loaded (their number and the last one: an import adds
    at the end), and each of the user's with its spec (`importlib.reload`
    makes a new one) and its number of names, as one tuple: the same
    object while none of that changed, so a witness checks it by identity.
    Asked for each global a step reads, on each step call: in C."""
    old, modules = _STATE[0], sys.modules
    n, key, module, keys, users, specs, sizes = old
    last = next(reversed(modules.items()), (None, None))
    if (
        n == len(modules)
        and key == last[0]
        and module is last[1]
        and all(map(operator.is_, map(modules.get, keys), users))
        and all(map(operator.is_, map(_SPEC, users), specs))
        and sizes == (*map(len, map(vars, users)),)
    ):
        return old
    mine = {id(m) for m in _user_modules()}
    pairs = [(k, m) for k, m in list(modules.items()) if id(m) in mine]
    now_users = tuple(m for _, m in pairs)
    _STATE[0] = (
        len(modules),
        *last,
        tuple(k for k, _ in pairs),
        now_users,
        tuple(map(_SPEC, now_users)),
        tuple(map(len, map(vars, now_users))),
    )
    return _STATE[0]


def _user_modules() -> tuple[types.ModuleType, ...]:
    """The user's modules loaded now, with a file; computed again when
    `sys.modules` changed (asked for each global a step reads)."""
    global _LOADED
    loaded = tuple(sys.modules.values())
    if loaded != _LOADED[0]:
        users = (
            m
            for m in loaded
            if isinstance(m, types.ModuleType) and isinstance(getattr(m, "__file__", None), str)
        )
        _LOADED = (loaded, tuple(m for m in users if user_module(m)))
    return _LOADED[1]


# What a module takes another out of (`sys.modules[...]`, `import_module(...)`).
_FINDERS = (sys, importlib, importlib.import_module)


def _near(namespace: Mapping[str, Any], home: types.ModuleType, obj: object) -> bool:
    """Whether a name of the module holds `home`, `obj`, a package of
    `home` or a way to find any module (`sys.modules[...]`,
    `importlib.import_module(...)`): else it cannot write to them by
    a name chain, and its text is not read."""
    package = home.__name__ + "."
    for value in list(namespace.values()):
        if value is home or any(value is f for f in _FINDERS) or (obj is not None and value is obj):
            return True
        if isinstance(value, types.ModuleType) and package.startswith(value.__name__ + "."):
            return True
    return False


def _may_reach(namespace: Mapping[str, Any], root: str, home: object, obj: object) -> bool:
    if root == _ANY_MODULE:
        return True
    value = namespace.get(root)
    return value is not None and (
        value is home or value is obj or isinstance(value, (types.ModuleType, type))
    )


def _through(
    namespace: Mapping[str, Any], path: Path, name: str, home: object, obj: object
) -> bool:
    """Whether a write through `path` (the object written to, then the
    attribute set, if any) reaches `name` of `home` or the object `obj`:
    a prefix holds `home` and the next name is `name` (or any), or a
    prefix holds `obj` itself. Followed through modules and classes only."""
    value: object = home if path[0] == _ANY_MODULE else namespace.get(path[0])
    for i in range(1, len(path) + 1):
        if obj is not None and value is obj:
            return True
        if i == len(path):
            return False
        if value is home and path[i] in (name, _ANY):
            return True
        if not isinstance(value, (types.ModuleType, type)):
            return False
        value = getattr(value, path[i], None) if path[i] != _ANY else None
    return False


@lru_cache(maxsize=256)
def _writes(text: str) -> dict[str, list[tuple[Path, ast.AST]]]:
    """root name -> (path written through, module-level statement), for
    each statement that sets or deletes an attribute (`x.K = 1`, `del
    x.K`, `setattr(x, "K", 1)`: the path ends in `K`) or an item (`x[k] =
    1`), or calls a method that may change its object (`x.append(1)`; not
    one that only looks, `x.get(k)`), at any depth. Not through `self` or
    `cls`: an object's own."""
    tree = parse(text).tree
    index: dict[str, list[tuple[Path, ast.AST]]] = {}
    for unit in tree.body if tree else []:
        for node in ast.walk(unit):
            path = _written(node)
            if path and path[0] not in ("self", "cls"):
                index.setdefault(path[0], []).append((path, unit))
    return index


def _written(node: ast.AST) -> Path | None:
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
        head = _chain(node.value)
        return (*head, node.attr) if head else None
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return _chain(node.value)
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and len(node.args) >= 2:
        head, key = _chain(node.args[0]), node.args[1]
        attr = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else _ANY
        return (*head, attr) if head else None
    if isinstance(func, ast.Attribute) and func.attr not in LOOKS:
        return _chain(func.value)
    return None


def _chain(node: ast.AST) -> Path | None:
    """`a.b.c` as ("a", "b", "c"); `sys.modules[...]`, `import_module(...)`
    as any module."""
    if isinstance(node, ast.Subscript) and _chain(node.value) == ("sys", "modules"):
        return (_ANY_MODULE,)
    if (
        isinstance(node, ast.Call) and _chain(node.func) in _IMPORTERS
    ):  # `import_module("settings")`
        return (_ANY_MODULE,)
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        head = _chain(node.value)
        return (*head, node.attr) if head else None
    return None
