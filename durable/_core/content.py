"""What a value that is not canonical data is digested by: a kind and a
stand-in made of canonical data. numpy and pandas objects by dtype, shape,
index and bytes (duck-typed: looked at only when the user imported them),
dataclasses, attrs and pydantic models by type and fields, exact-repr types
by repr (those very types only), mappings other than dict and subclasses
of set by type, items and the state of the instance, functions by name or
code, a method bound at run time by function and instance, other objects (and
subclasses of the exact-repr types) by type and pickled state
(`__reduce_ex__`, `reduced`); what a pickling hook of the user's own
class leaves out counts too (`ownstate`); a function or class of the user's own code adds the
fingerprint of its code (`code`). `identity` walks the stand-in."""

from __future__ import annotations

import copy
import dataclasses
import datetime
import enum
import hashlib
import pathlib
import sys
import threading
import types
from collections import ChainMap, UserDict, defaultdict
from collections.abc import Mapping
from typing import Any

from .._fingerprint.imports import library_module
from .._fingerprint.reach import is_durable
from .._fingerprint.values import loaded_value_types
from .._storage import codec
from .._valuetext import error_message
from .arrays import arrays, qualname
from .classcells import captured_by_class
from .code import class_stamp, function_stamp, made_at_run_time, module_stamp
from .defined import defined
from .ownstate import LeftOut, left_out, own_state
from .redact import NeverWritten
from .reduced import bound_at_run_time, reduced


class Undigestable(TypeError):
    """No reproducible digest: an open file, a lock, nesting past MAX_DEPTH."""


class Secret(Undigestable):
    """A `durable.redact()` value, where a cache key may not hold one (or,
    for an argument looked at only for secrets, nesting too deep to tell)."""


# No reproducible digest: nested too deep (RecursionError), or changed by
# another thread as it was read ("dictionary changed size during iteration").
NO_DIGEST = (Undigestable, RuntimeError)


def content_of(v: Any, *, code: bool = True, walk: Any = None) -> tuple[str, Any]:
    """A kind and a stand-in value made of things the walk knows; with
    `code`, the fingerprint of the user's code it holds (`_with_code`)."""
    try:
        if type(v) is LeftOut:  # in a stand-in: walked by `identity`'s walk
            return _left_out_content(v.value, walk)
        found = arrays(v) or _described(v)
        if found is None:
            found = reduced(v)
            if not found[0].startswith("global:"):  # its class is in it: walked as a type
                return found
        return _with_code(v, found) if code else found
    except Undigestable:
        raise
    except NeverWritten as e:  # a closure that captured a secret, pickled for its code
        raise Secret(f"{qualname(type(v))}: {e}") from None
    except Exception as e:  # a property, __reduce_ex__ or tobytes that fails: no digest
        raise Undigestable(f"{qualname(type(v))}: {type(e).__name__}: {error_message(e)}") from None


def _with_code(v: Any, found: tuple[str, Any]) -> tuple[str, Any]:
    """A class, an importable function, a module or an object, with the
    fingerprint of the user's code it stands for (`code`): a step calling
    `fn(x)`, `v.method()` or `helpers.clean(x)` runs that code, which its own
    fingerprint does not see."""
    kind, stand_in = found
    stamp: Any
    if isinstance(v, type):
        stamp = _class_code(v)
    elif isinstance(v, types.ModuleType):
        stamp = module_stamp(v)
    elif kind in ("function", "code", "step") or kind.startswith("global:"):
        # A lambda's pickled code names its helpers only; an `lru_cache`
        # wrapper is pickled by its name only.
        stamp = function_stamp(v)
        if stamp is None and kind.startswith("global:"):  # an object pickled by name: its class's code runs
            stamp = _class_code(type(v))
    else:
        stamp = _class_code(type(v))
    return found if stamp is None else (kind, (stand_in, stamp))


def _class_code(cls: type) -> Any:
    """The fingerprint of a class's code, with what its methods' closures
    hold when a factory made it (`captured_by_class`) and, made without a
    `class` statement, what defines it (`defined`)."""
    stamp = class_stamp(cls)
    captured = captured_by_class(cls) if stamp is not None else None
    made = defined(cls) if made_at_run_time(cls) else None
    if made is not None:  # `Enum("Labels", names)`: its members, by value (`defined`)
        return (stamp, captured, made)
    return stamp if captured is None else (stamp, captured)


# Types whose repr is exact (the value, and the timezone where there is one,
# when that is a `datetime.timezone` or a `zoneinfo.ZoneInfo`): these very
# types only. A subclass may hold state of its own, or a repr of its own.
# Decimal and UUID also, once their modules are loaded (`loaded_value_types`).
_BY_REPR: frozenset[type] = frozenset({
    datetime.date, datetime.datetime, datetime.time, datetime.timedelta, datetime.timezone,
    pathlib.PurePath, pathlib.PurePosixPath,
    pathlib.PureWindowsPath, pathlib.Path, pathlib.PosixPath, pathlib.WindowsPath,
})  # fmt: skip
# What their subclasses (and any other tzinfo) are instances of.
_REPR_BASES: tuple[type, ...] = (datetime.date, datetime.time, datetime.timedelta)
_REPR_BASES += (datetime.tzinfo, pathlib.PurePath)


def _described(v: Any) -> tuple[str, Any] | None:
    t = type(v)
    name = qualname(t)
    # `list[int]` passes for a type on Python 3.10: reduced, as later Pythons do.
    if isinstance(v, type) and not isinstance(v, types.GenericAlias):
        return "type", qualname(v)
    if isinstance(v, types.ModuleType):
        return _module(v)
    if isinstance(v, types.MethodType) and _step_runs(v) is None and bound_at_run_time(v):
        return "method", (v.__func__, v.__self__)
    if isinstance(v, types.FunctionType) or (callable(v) and _step_runs(v) is not None):
        return _function(v)
    if isinstance(v, enum.Enum):
        return f"enum:{name}", (v.name, v.value)
    if dataclasses.is_dataclass(v):
        return _fields(v, f"dataclass:{name}", [f.name for f in dataclasses.fields(v)])
    attrs = getattr(t, "__attrs_attrs__", None)
    if attrs is not None:
        return _fields(v, f"attrs:{name}", [a.name for a in attrs])
    fields = getattr(t, "__pydantic_fields__", None)
    if isinstance(fields, dict):
        values = [(f, getattr(v, f)) for f in fields]
        extra: tuple[Any, ...] = (
            getattr(v, "__pydantic_extra__", None), getattr(v, "__pydantic_private__", None)
        )
        # Fields left at their defaults (`exclude_unset`), when there are any.
        given = getattr(v, "__pydantic_fields_set__", fields)
        unset = [f for f in fields if f not in given]
        return f"pydantic:{name}", (values, (*extra, unset) if unset else extra)
    if isinstance(v, _REPR_BASES) or isinstance(v, loaded_value_types()):
        return _by_repr(v, name)
    if isinstance(v, Mapping):  # not a dict itself: `identity` walks those
        return _mapping(v, name)
    if isinstance(v, (set, frozenset)):  # a subclass: `identity` walks the sets themselves
        return f"set:{name}", (frozenset(v), _state(v))
    return None


def _module(v: types.ModuleType) -> tuple[str, Any]:
    """A module by its name and, for one of the user's own, the data its
    globals hold now, each by content (by type when it has none, a lock):
    a step given it (`check(settings, x)`) reads `cfg.THRESHOLD`, which
    the program may have set as it ran (`settings.THRESHOLD = 2` in
    `main()`), where the module's text and code (`code.module_stamp`) are
    the same. Its functions, classes and modules count as code there. So
    does one the program made (`run_time_module`: a settings file a loader
    executed into it), which has neither text nor code to count."""
    if library_module(v):
        return "module", v.__name__
    data = [(k, LeftOut(x)) for k, x in sorted(vars(v).items()) if not k.startswith("__") and _data(x)]
    return "module", (v.__name__, data) if data else v.__name__


def _data(x: Any) -> bool:
    code = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    return not isinstance(x, code) and not is_durable(x)


def _fields(v: Any, kind: str, names: list[str]) -> tuple[str, Any]:
    """A dataclass or attrs instance by its fields, plus any attribute set
    on the instance outside them (`obj.extra = 5`): the step may read it.
    Only the instance's own attributes: a `__getstate__` (a frozen slotted
    dataclass has one) says nothing the fields do not."""
    values = [(n, getattr(v, n)) for n in names]
    extra = own_state(v, skip=tuple(names), by_getstate=False)
    if isinstance(v, _BUILTIN_VALUES):  # `class Batch(list)`: its fields say nothing of its items
        base = next(b for b in _BUILTIN_VALUES if isinstance(v, b))
        extra = (extra, base(v) if base in _COPIED else base.__getnewargs__(v))
    return kind, values if extra is None else (values, extra)


# The builtin values a dataclass or attrs class may also be, and how each is
# read without the class's own methods (`base(v)` copies the items alone).
_COPIED: tuple[Any, ...] = (dict, list, set, frozenset, bytearray)
_BUILTIN_VALUES = (*_COPIED, tuple, str, bytes, int, float, complex)


def _exact_tz(tz: Any) -> bool:
    """A timezone whose repr says all of it: `datetime.timezone` or
    `zoneinfo.ZoneInfo` (looked up only when the program imported it)."""
    t = type(tz)
    if t is datetime.timezone:
        return True
    zoneinfo = sys.modules.get("zoneinfo")
    return zoneinfo is not None and t is getattr(zoneinfo, "ZoneInfo", None)


def _by_repr(v: Any, name: str) -> tuple[str, Any]:
    """A date, time, timedelta, timezone, Decimal, UUID or path by its repr,
    when it is of the very type and any timezone it has is an exact one.
    A datetime or time with another tzinfo adds its offset and the tzinfo
    by content (its repr may say neither). Another tzinfo and a subclass
    are digested by type and pickled state, with the state an instance of a
    subclass holds beyond its base's value (`own_state`)."""
    t, loaded = type(v), loaded_value_types()
    if t in _BY_REPR or t in loaded or _exact_tz(v):
        tz = getattr(v, "tzinfo", None)  # a datetime's or a time's
        if tz is None or _exact_tz(tz):
            return f"repr:{name}", repr(v)
        return f"repr:{name}", (repr(v), v.utcoffset(), tz)
    base = next(c for c in t.__mro__ if c in _BY_REPR or c in loaded or c is datetime.tzinfo)
    return f"subclass:{name}", (reduced(v)[1], own_state(v, below=base))


def _mapping(v: Mapping[Any, Any], name: str) -> tuple[str, Any]:
    """A mapping other than a dict (a subclass of dict, an OrderedDict, a
    UserDict, a mapping proxy...) by its type and items and, when it holds
    any, its other state. (A defaultdict adds its factory.)"""
    items = list(v.items())
    state = _state(v, skip=_items_store(v, items))
    if isinstance(v, defaultdict):
        stand_in: Any = (v.default_factory, items)
        return f"defaultdict:{name}", stand_in if state is None else (*stand_in, state)
    return f"mapping:{name}", items if state is None else (items, state)


def _state(v: Any, skip: tuple[str, ...] = ()) -> Any:
    """What a mapping or a set holds besides its items (`own_state`), and
    what its class's `__getstate__` leaves out of that when it is the
    user's own (`left_out`): a step may read it (`w.scale`)."""
    state = own_state(v, skip=skip)
    left = left_out(v, state[1]) if type(state) is tuple else None
    return state if left is None else (*state, left)


def _items_store(v: Mapping[Any, Any], items: list[tuple[Any, Any]]) -> tuple[str, ...]:
    """The attribute in which a UserDict (`data`) or a one-map ChainMap
    (`maps`) keeps exactly the items it shows: not state of its own."""
    if isinstance(v, UserDict):
        name, held = "data", getattr(v, "data", None)
    elif isinstance(v, ChainMap) and len(v.maps) == 1:
        name, held = "maps", v.maps[0]
    else:
        return ()
    if type(held) is not dict or len(held) != len(items):
        return ()
    same = all(k is k2 and x is x2 for (k, x), (k2, x2) in zip(held.items(), items, strict=True))
    return (name,) if same else ()


def _function(fn: Any) -> tuple[str, Any]:
    """An importable function by its name; a lambda or closure by its code,
    as cloudpickle ships it to a worker (save the ids it draws per process)."""
    owner: Any = sys.modules.get(fn.__module__)
    for part in fn.__qualname__.split("."):
        owner = getattr(owner, part, None)
    if owner is fn:
        return "function", qualname(fn)
    runs = _step_runs(fn)
    if runs is not None:
        return "step", runs
    return "code", codec.digest_callable(fn)


def _step_runs(fn: Any) -> Any:
    """What a step made at run time runs (`self.f = durable.step(self.f)`):
    it counts by that, and by its fingerprint (`_with_code`). Its closure
    also holds the step's bookkeeping, which changes as it runs: pickled,
    it made `self` look changed by every call (never cached, a resume
    refused). An async step, an object, is told so too. None for anything
    else (a decorator over a step included)."""
    own = getattr(fn, "__dict__", None)
    if type(own) is not dict or "__durable_step__" not in own:
        return None
    target = getattr(own["__durable_step__"], "fn", None)
    return target if target is not None and own.get("__wrapped__") is target else None


_walking = threading.local()


def _left_out_content(value: Any, walk: Any) -> tuple[str, Any]:
    """A left-out attribute's digest by a walk of its own, under the rules of
    `walk`, the one it is in, or its type when it has none (or refers back
    to an object being walked for this), a plain container's by its items. A secret there is one as
    anywhere: a cache key is not made of it."""
    seen: set[int] = _walking.__dict__.setdefault("ids", set())
    if walk is None or id(value) in seen:
        return "left-out", qualname(type(value))
    seen.add(id(value))
    own = copy.copy(walk)
    own.h, own.stack, own.met, own.kept, own.meeting = hashlib.sha256(), {}, {}, [], True
    try:
        own.feed(value)
    except Secret:
        raise
    except NO_DIGEST:  # by its type; data beside a lock by its items (`_items`)
        return "left-out", _items(value, walk) if type(value) in _ITEMS else qualname(type(value))
    finally:
        seen.discard(id(value))
    return "left-out", own.h.hexdigest()


# A dict, list or set of data beside a part without a digest (settings and the
# lock guarding them) counts item by item; an object's internals do not (a
# pool's threads differ in every process): it counts by its type as a whole.
_ITEMS = (dict, list, tuple, set, frozenset)


def _items(value: Any, walk: Any) -> tuple[str, list[Any]]:
    """Each item's own left-out digest (a dict's keys too), a set's sorted."""
    def one(x: Any) -> Any:
        return _left_out_content(x, walk)[1]

    parts: list[Any] = [(one(k), one(x)) for k, x in value.items()] if type(value) is dict else [one(x) for x in value]
    return type(value).__name__, sorted(parts, key=repr) if isinstance(value, (set, frozenset)) else parts
