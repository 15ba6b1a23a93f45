"""What a value that is not canonical data is digested by: a kind and a
stand-in made of canonical data. numpy and pandas objects by dtype, shape,
index and bytes (duck-typed: looked at only when the user imported them),
dataclasses, attrs and pydantic models by type and fields, exact-repr types
by repr, functions by name or code, other objects by type and pickled state
(`__reduce_ex__`). `identity` walks the stand-in."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import pathlib
import sys
import types
import uuid
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from .._storage import codec
from .redact import NeverWritten


class Undigestable(TypeError):
    """A value with no reproducible digest (an open file, a lock, a cycle
    through an unpicklable object, nesting deeper than MAX_DEPTH)."""


class Secret(Undigestable):
    """A `durable.redact()` value, where a cache key may not hold one (or,
    for an argument looked at only for secrets, nesting too deep to tell)."""


def content_of(v: Any) -> tuple[str, Any]:
    """A kind and a stand-in value made of things the walk knows."""
    try:
        found = _arrays(v) or _described(v)
        return found if found is not None else _reduced(v)
    except Undigestable:
        raise
    except NeverWritten as e:  # a closure that captured a secret, pickled for its code
        raise Secret(f"{_qualname(type(v))}: {e}") from None
    except Exception as e:  # a property, __reduce_ex__ or tobytes that fails: no digest
        raise Undigestable(f"{_qualname(type(v))}: {type(e).__name__}: {e}") from None


def _qualname(t: Any) -> str:
    return f"{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', repr(t))}"


def _arrays(v: Any) -> tuple[str, Any] | None:
    """numpy and pandas values, when the program imported them (never here)."""
    np = sys.modules.get("numpy")
    if np is not None:
        if type(v) is getattr(np, "ndarray", None):
            if v.dtype.hasobject:
                data: Any = v.reshape(-1).tolist()  # the objects themselves, walked
            else:
                data = v.tobytes(order="C")
            return "numpy.ndarray", (v.dtype.str, repr(v.dtype), v.shape, data)
        if _instance(v, np, "generic"):  # np.float64(1.0) and friends
            data = v.tolist() if v.dtype.hasobject else v.tobytes()
            return _qualname(type(v)), (v.dtype.str, repr(v.dtype), data)
    pd = sys.modules.get("pandas")
    if pd is None:
        return None
    if _instance(v, pd, "DataFrame"):
        columns = [_pandas_values(v.iloc[:, i]) for i in range(v.shape[1])]
        return _qualname(type(v)), (v.columns, v.index, [repr(t) for t in v.dtypes], columns)
    if _instance(v, pd, "Series"):
        return _qualname(type(v)), (repr(v.dtype), v.name, v.index, _pandas_values(v))
    if _instance(v, pd, "Index"):
        return _qualname(type(v)), (repr(v.dtype), list(v.names), _pandas_values(v))
    return None


def _instance(v: Any, module: Any, name: str) -> bool:
    # getattr: a module still being imported may lack the class yet.
    cls = getattr(module, name, None)
    return isinstance(cls, type) and isinstance(v, cls)


def _pandas_values(v: Any) -> Any:
    np = sys.modules["numpy"]  # pandas imports it
    if isinstance(v.dtype, np.dtype):
        return v.to_numpy()
    # Extension dtypes (nullable ints, categoricals, strings): keep pd.NA as itself.
    return v.array.to_numpy(dtype=object)


# Types whose repr is exact (value, and timezone where there is one).
_BY_REPR: tuple[type, ...] = (datetime.date, datetime.time, datetime.timedelta)
_BY_REPR += (datetime.tzinfo, decimal.Decimal, uuid.UUID, pathlib.PurePath)


def _described(v: Any) -> tuple[str, Any] | None:
    t = type(v)
    name = _qualname(t)
    if isinstance(v, type):
        return "type", _qualname(v)
    if isinstance(v, types.ModuleType):
        return "module", v.__name__
    if isinstance(v, types.FunctionType):
        return _function(v)
    if isinstance(v, enum.Enum):
        return f"enum:{name}", (v.name, v.value)
    if dataclasses.is_dataclass(v):
        return f"dataclass:{name}", [(f.name, getattr(v, f.name)) for f in dataclasses.fields(v)]
    attrs = getattr(t, "__attrs_attrs__", None)
    if attrs is not None:
        return f"attrs:{name}", [(a.name, getattr(v, a.name)) for a in attrs]
    fields = getattr(t, "__pydantic_fields__", None)
    if isinstance(fields, dict):
        values = [(f, getattr(v, f)) for f in fields]
        extra = (getattr(v, "__pydantic_extra__", None), getattr(v, "__pydantic_private__", None))
        return f"pydantic:{name}", (values, extra)
    if isinstance(v, _BY_REPR):
        return f"repr:{name}", repr(v)
    if isinstance(v, defaultdict):
        return f"defaultdict:{name}", (v.default_factory, list(v.items()))
    if isinstance(v, Mapping):
        return f"mapping:{name}", list(v.items())
    return None


def _function(fn: types.FunctionType) -> tuple[str, Any]:
    """An importable function by its name; a lambda or closure by its code,
    as cloudpickle ships it to a worker."""
    owner: Any = sys.modules.get(fn.__module__)
    for part in fn.__qualname__.split("."):
        owner = getattr(owner, part, None)
    if owner is fn:
        return "function", f"{fn.__module__}.{fn.__qualname__}"
    return "code", codec.dumps_callable(fn)


def _reduced(v: Any) -> tuple[str, Any]:
    """Type and pickled state, as `pickle` sees it, walked by this module (so
    that a set or a float in the state is digested canonically too)."""
    name = _qualname(type(v))
    reduced = v.__reduce_ex__(4)
    if isinstance(reduced, str):  # pickled by name: a builtin function, a singleton
        return f"global:{name}", (getattr(v, "__module__", None), reduced)
    parts = list(reduced) + [None] * (5 - len(reduced))
    fn, args, state, list_items, dict_items = parts[:5]
    listed = list(list_items) if list_items is not None else None
    pairs = list(dict_items) if dict_items is not None else None
    return f"object:{name}", (fn, args, state, listed, pairs)
