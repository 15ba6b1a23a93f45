"""What the methods of a class made by a factory captured (DESIGN §2
"Identity of a call"): `make_model([1, 2])` and `make_model([3, 4])` make
two classes of one name and one source, whose methods read `weights` from
their closure. A method's fingerprint counts a list, dict or object there
by its type only (functions keep state in them), so an argument digest
counts those values by content, as it counts a closure passed as a
function (by what cloudpickle ships) and as the step cache counts the
step's own (`cachekey.with_captured`)."""

from __future__ import annotations

import types
from typing import Any

from .._fingerprint.kept import kept_state
from .._fingerprint.memorule import Memo
from .._fingerprint.reach import is_durable, is_user_code
from .._fingerprint.witness import witnessed
from .code import _functions, _members, _user_classes
from .ownstate import LeftOut

_Closures = tuple[tuple[str, str, types.FunctionType], ...]
# id(cls) -> its methods that have a closure, while no member was rebound.
_CLOSURES: Memo[_Closures] = Memo()


def captured_by_class(cls: type) -> list[Any] | None:
    """The values the closures of the methods of the user's own classes in
    `cls.__mro__` hold, by class, member and cell; None when they hold
    none. Each by its content, or by its type when it has none (a lock:
    `content._left_out_content`). A cell a method only writes (a counter)
    is state, not an input,
    and `__class__` (what `super()` reads) is the class itself. A cell not
    bound yet holds nothing known: ValueError, which `content.content_of`
    makes Undigestable (fail closed). Only a class defined in a function
    has methods with a closure of their own (a module-level class's methods
    assigned from a factory count by the statement that made them)."""
    if not any("<locals>" in c.__qualname__ for c in _user_classes(cls)):
        return None  # made by a `class` statement at the top of a module, as most are
    found = _CLOSURES.get(id(cls), cls, lambda: _with_closures(cls), files=False)
    out = [(owner, name, cells) for owner, name, fn in found for cells in [_cells(fn)] if cells]
    return out or None


def _with_closures(cls: type) -> _Closures:
    found = []
    for owner in _user_classes(cls):
        for name, member in witnessed(_members, owner):
            for fn in _functions(member):
                # A step's own wrapper holds its spec: the step counts by its fingerprint.
                if fn.__closure__ and not is_durable(fn) and is_user_code(fn):
                    found.append((owner.__qualname__, name, fn))
    return tuple(found)


def _cells(fn: types.FunctionType) -> list[tuple[str, LeftOut]]:
    code = fn.__code__
    kept = kept_state(fn, code)
    found = []
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=True):
        if name == "__class__" or name in kept:
            continue
        try:
            found.append((name, LeftOut(cell.cell_contents)))
        except ValueError:
            raise ValueError(f"{fn.__qualname__} reads {name}, not bound yet") from None
    return found
