"""Whether `inspect.getattr_static` finds an attribute, told directly for
the objects a module's namespace mostly holds: classes of a plain
metaclass (`type`, `ABCMeta`, `EnumType`) and their instances.
`getattr_static` walks the MRO three times in Python for each (shadowed
`__dict__`, class, metaclass); a walk of
every global of a module (`boundto.names_bound_to`, at each re-call of a
completed run) asked it for each class, its `__spec__` and `__loader__`.

Pure standard library. Anything else (a metaclass of its own, a class that
makes its own `__dict__`, an instance dict that is no dict) is left to
`getattr_static`: None."""

from __future__ import annotations

import types

_DICT = type.__dict__["__dict__"]  # a class's own namespace, whatever it defines
_MRO = type.__dict__["__mro__"]
_NONE = object()


def static_has(obj: object, attr: str) -> bool | None:
    """`getattr_static(obj, attr, missing) is not missing`, or None when it
    cannot be told this simply."""
    kind = type(obj)
    meta = _MRO.__get__(kind)
    if type in meta:  # a class: its MRO, then its metaclass's
        found = _in_classes(_MRO.__get__(obj), attr)
        return found if found is not False else _in_classes(meta, attr)
    found = _in_classes(meta, attr, instances=True)
    if found is not False:
        return found
    try:
        own = object.__getattribute__(obj, "__dict__")
    except AttributeError:  # `__slots__` without a `__dict__`
        return False
    return attr in own if type(own) is dict else None


def _in_classes(mro: tuple[type, ...], attr: str, instances: bool = False) -> bool | None:
    """Whether a class of `mro` holds `attr`; None when one's metaclass
    makes its namespace itself, or (for `instances`) one makes its
    instances' `__dict__` itself."""
    for k in mro:
        if not _plain(type(k)):
            return None
        own = _DICT.__get__(k)
        if attr in own:
            return True
        made = own.get("__dict__", _NONE)
        if instances and made is not _NONE and not _standard_dict(made, k):
            return None
    return False


def _plain(meta: type) -> bool:
    """Whether a metaclass (`type`, `ABCMeta`, `EnumType`) keeps its classes'
    namespaces where `type` does: none of its MRO makes a `__dict__` itself."""
    if meta is type:
        return True
    for m in _MRO.__get__(meta):
        made = _DICT.__get__(m).get("__dict__", _NONE)
        if made is not _NONE and not _standard_dict(made, m):
            return False
    return True


def _standard_dict(made: object, owner: type) -> bool:
    return (
        type(made) is types.GetSetDescriptorType
        and made.__name__ == "__dict__"
        and made.__objclass__ is owner
    )
