"""What stands in for a name the code reads, where no statement binding it
shows what it holds: a value a module of the user's put in `builtins`
(`builtins.K = 7`, read as a bare `K`), and an object a module put in its
own place in `sys.modules` (`sys.modules[__name__] = _Settings()`, read as
`settings.K` after `import settings`). Counted by the reading module's
statements alone (none, or `import settings`), an edit of `7` or of the
property's body replayed the output of the old code.

Pure standard library."""

from __future__ import annotations

import builtins
import sys
import types
from collections.abc import Mapping
from typing import Any

from .imports import user_class
from .reach import _MISSING, _followable
from .values import plain_tokens


def placed_builtin(name: str) -> object:
    """What a module of the user's put in `builtins` (`builtins.K = 7`, a
    sitecustomize's helper), read as a bare `K`: plain data, a container of
    it, the user's function, class or object; `_MISSING` for Python's own
    (`len`, `ValueError`, site's `help`) and a library's (IPython's
    `display`), which count by name as before. Taken for a name defined
    further down, an edit of `7` was never seen."""
    value = vars(builtins).get(name, _MISSING)
    if value is _MISSING or name.startswith("__") or name in _PYTHONS:
        return _MISSING
    if plain_tokens(value) is not None or type(value) in (list, dict, set, tuple):
        return value
    mine = user_class(value) if isinstance(value, type) else user_class(type(value)) or _followable(value)
    return value if mine else _MISSING


def replaced_module(obj: object) -> type | None:
    """The class of the user's of an object that stands in `sys.modules` for
    the module defining that class (`sys.modules[__name__] = _Settings()`):
    an import binds the object, whose properties' text no statement that
    binds it shows."""
    kind = type(obj)
    if isinstance(obj, types.ModuleType) or sys.modules.get(getattr(kind, "__module__", "")) is not obj:
        return None
    return kind if user_class(kind) else None


def home_of(cls: type) -> Mapping[str, Any]:
    """The namespace of the module that defined `cls`, from one of its functions
    (its module object is gone from `sys.modules`); empty when none tells."""
    for member in vars(cls).values():
        fn = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
        home = getattr(fn, "__globals__", None)
        if isinstance(home, dict):
            return home
    return {}


# Python's builtins that are no constant of the user's: the last value a
# REPL showed, and the two singletons that are not keywords.
_PYTHONS = frozenset({"_", "Ellipsis", "NotImplemented"})
