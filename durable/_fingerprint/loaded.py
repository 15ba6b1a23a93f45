"""The user's modules loaded now, as one object that stays the same while
they do (`elsewhere` indexes their writes once per such set).

Pure standard library."""

from __future__ import annotations

import operator
import sys
import types
from typing import Any

from .imports import user_module

_LOADED: tuple[tuple[object, ...], tuple[types.ModuleType, ...]] = ((), ())
_KNOWN: dict[int, tuple[object, bool]] = {}  # id -> (a module, whether it is the user's)
# The user's modules (their keys, the modules, their specs and numbers of
# names) as `loaded_state` last told, and the number of modules loaded
# and the last one then.
Users = tuple[tuple[str, ...], tuple[types.ModuleType, ...], tuple[object, ...], tuple[int, ...]]
_STATE: list[Any] = [(-1, None, None), ((), (), (), ())]
_SPEC = operator.attrgetter("__spec__")


def loaded_state() -> Users:
    """The user's modules loaded, each with its key, its spec
    (`importlib.reload` makes a new one) and its number of names: the same
    tuple while none of that changed (a library imported meanwhile), so
    that it is checked by identity. In C while no module was imported."""
    (n, key, module), users = _STATE
    modules = sys.modules
    last = next(reversed(modules.items()), (None, None))
    if n == len(modules) and key == last[0] and module is last[1] and _hold(users):
        return users  # type: ignore[no-any-return]
    mine = set(map(id, _user_modules()))
    pairs = [(k, m) for k, m in list(modules.items()) if id(m) in mine]
    mods = tuple(m for _, m in pairs)
    now = (tuple(k for k, _ in pairs), mods, tuple(map(_SPEC, mods)), _sizes(mods))
    if not (len(mods) == len(users[1]) and now[0] == users[0] and _hold(users)):
        users = now
    _STATE[:] = [(len(modules), *last), users]
    return users  # type: ignore[no-any-return]


def _hold(users: Users) -> bool:
    keys, mods, specs, sizes = users
    return (
        all(map(operator.is_, map(sys.modules.get, keys), mods))
        and all(map(operator.is_, map(_SPEC, mods), specs))
        and sizes == _sizes(mods)
    )


def _sizes(mods: tuple[types.ModuleType, ...]) -> tuple[int, ...]:
    return (*map(len, map(vars, mods)),)


def _user_modules() -> tuple[types.ModuleType, ...]:
    """The user's modules loaded now, with a file; computed again when
    `sys.modules` changed, each module asked about once."""
    global _LOADED
    loaded = tuple(sys.modules.values())
    if loaded != _LOADED[0]:
        if len(_KNOWN) > 16384:  # modules made and dropped again and again (tests)
            _KNOWN.clear()
        _LOADED = (loaded, tuple(m for m in loaded if _users(m)))
    return _LOADED[1]


def _users(module: object) -> bool:
    known = _KNOWN.get(id(module))
    if known is None or known[0] is not module:
        mine = isinstance(module, types.ModuleType) and isinstance(
            getattr(module, "__file__", None), str
        )
        known = _KNOWN[id(module)] = (module, mine and user_module(module))  # type: ignore[arg-type]
    return known[1]


def same_module(module: types.ModuleType) -> tuple[object, ...]:
    """What `loaded_state` tells a module apart by (its spec, its number of
    names), with its file and name: witnessed by what is kept for one
    module while others are loaded (`libstate._OTHERS`, `libcode._CHAINS`)."""
    space = vars(module)
    return module.__spec__, len(space), space.get("__file__"), space.get("__name__")
