"""The user's modules loaded now, as one object that stays the same while
they do (`elsewhere` indexes their writes once per such set), and what a
rule found in each of them, kept from one such set to the next
(`EachModule`).

Pure standard library."""

from __future__ import annotations

import operator
import sys
import types
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any, Generic, TypeVar

from .imports import user_module
from .memorule import Memo
from .witness import Witness, file_state, recording, same

T = TypeVar("T")

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


def _files(users: Users) -> tuple[object, ...]:
    """Each module's `file_state` in `users`: one stat per module and set
    of modules, whichever rules ask (`EachModule`)."""
    kept = _FILES[0]  # one tuple: another thread may put another set's in meanwhile
    if kept[0] is not users:
        kept = _FILES[0] = (users, tuple(file_state(m.__file__) for m in users[1]))  # type: ignore[arg-type]
    return kept[1]


_FILES: list[tuple[object, tuple[object, ...]]] = [(None, ())]


class EachModule(Generic[T]):
    """A rule's answer for each of the user's modules loaded (`answers`),
    kept from one `loaded_state` to the next under the one memo rule
    (`Memo`: held by the module, reused while what it read gives the same
    again): built anew, every loaded module was looked into again at each
    import, and a program importing N modules as it goes (a notebook, a
    test worker collecting) paid O(N^2). A module imported since is asked
    about; one dropped is no longer counted; one reloaded (a new module
    object, a new spec), whose number of names or file (its stat, taken
    once per set of modules for every rule) changed, or for which anything
    else its answer read (its witness; `holds`, what the rule checks
    itself) gives another value now, is asked again."""

    def __init__(self, compute: Callable[[types.ModuleType, Any], T], holds: Callable[[T], bool] | None = None) -> None:
        self._compute, self._holds = compute, holds
        # (id of a module, the rule's key) -> its spec, number of names, file and answer
        self._memo: Memo[tuple[object, int, object, T]] = Memo(size=16384)

    def answers(self, users: Users, key: Hashable) -> list[T]:
        """The answer for each module of `users` (`loaded_state`), in order."""
        memo, out, holds = self._memo, [], self._holds
        for module, spec, size, file in zip(users[1], users[2], users[3], _files(users), strict=True):
            hit = memo.entry((id(module), key))
            if (
                hit is not None and hit[0] is module and hit[1][0] is spec and hit[1][1] == size
                and (hit[1][2] == file if type(file) is bytes else same(hit[1][2], file))
                and (holds is None or holds(hit[1][3]))
                and ((not hit[2].calls and hit[2].alone) or hit[2].holds(files=False))  # its files: `file`
            ):  # fmt: skip
                out.append(hit[1][3])
                continue
            with recording(Witness()):  # what a module's answer read is its own, not the asker's
                kept = memo.compute((id(module), key), module, partial(self._kept, module, key, (spec, size, file)))
            out.append(kept[3])
        return out

    def _kept(self, module: types.ModuleType, key: Hashable, marks: tuple[object, int, object]) -> tuple[object, int, object, T]:
        """The answer with what `answers` tells the module apart by, taken before it (a change meanwhile is one)."""
        return *marks, self._compute(module, key)

    def clear(self) -> None:
        self._memo.clear()
