"""The classes of the user's code: which classes are, and what those its
modules hold define under each name.

Pure standard library. On an object of a class the text does not name (a
step's output, what a function returns, a parameter), `obj.load(xs)` may
run the `load` of any class of the user's, and `obj.rate = r` its setter.
"""

from __future__ import annotations

import sys
import types

from .userfiles import is_user_file

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: every class a `class` statement makes


def users_class(cls: object) -> bool:
    """Whether `cls` is a class of the user's code (a library's class keeps
    program state, as its functions do: `Path.cwd()` fills nothing)."""
    if not isinstance(cls, type):
        return False
    if not cls.__flags__ & _HEAP_TYPE:  # `int`, `dict`, `NoneType`: no file, yet no notebook's
        return False
    name = cls.__module__ if isinstance(cls.__module__, str) else ""
    filename = getattr(sys.modules.get(name), "__file__", None)  # none: a notebook's
    return filename is None or is_user_file(filename, name.partition(".")[0])


def methods_named(attr: str) -> list[object]:
    """What the classes of the user's that its modules hold define as `attr`:
    on an object of a class the text does not name (a step's output, what a
    function returns), `obj.attr(...)` may run any of them."""
    return list(_INDEX.by_name().get(attr, ()))


class _Index:
    """The classes of the user's by the names they define, looked at once
    per analysis (`new_analysis`): a class defined or reloaded since (a
    notebook cell run again) is seen by the next one."""

    def __init__(self) -> None:
        self.analysis, self.seen = 0, -1
        self.key: tuple[int, ...] = ()
        self.held: list[type] = []  # while held, no other class takes one of their ids
        self.modules: dict[tuple[str, int], bool] = {}
        self.names: dict[str, list[object]] = {}

    def _users(self, name: str, module: object) -> bool:
        key = name, id(module)
        known = self.modules.get(key)
        if known is None:
            if len(self.modules) > 8192:
                self.modules.clear()
            known = self.modules[key] = _users_module(name, module)
        return known

    def by_name(self) -> dict[str, list[object]]:
        if self.seen == self.analysis:
            return self.names
        self.seen = self.analysis
        modules = [m for name, m in list(sys.modules.items()) if self._users(name, m)]
        classes = [v for m in modules for v in list(vars(m).values()) if isinstance(v, type)]
        key = tuple(map(id, classes))
        if key != self.key:
            names: dict[str, list[object]] = {}
            for value in classes:
                for cls in value.__mro__ if users_class(value) else ():
                    for name, member in vars(cls).items() if users_class(cls) else ():
                        names.setdefault(name, []).append(member)
            self.key, self.names, self.held = key, names, classes
        return self.names


_INDEX = _Index()


def new_analysis() -> None:
    """Make the next `methods_named` look at the classes as they are now."""
    _INDEX.analysis += 1


def _users_module(name: str, module: object) -> bool:
    filename = getattr(module, "__file__", None)
    if not isinstance(module, types.ModuleType):  # a lazy loader's stand-in
        return False
    return name == "__main__" or (isinstance(filename, str) and is_user_file(filename, name.partition(".")[0]))
