"""The identity of a call (DESIGN §2): one digest for a step's bound
arguments, a loop item, a sleep and a derived run id.

Canonical data (None, bool, int, float, complex, str, bytes, bytearray,
tuple, list, dict in key order, set, frozenset) has a type-tagged encoding,
so `1`, `1.0` and `True` or `bytes` and `bytearray` never share a digest.
Everything else is digested by content: numpy and pandas objects by dtype,
shape, index and bytes (duck-typed: looked at only when the user imported
them), dataclasses, attrs and pydantic models by type and fields, other
objects by type and pickled state (`__reduce_ex__`). A value that cannot be
digested gets a fresh random token: the call simply looks changed the next
time (fail closed), it is never replayed unchecked."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import hashlib
import inspect
import pathlib
import secrets
import struct
import sys
import types
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import _codec
from ._redact import Redacted

HEX = 32  # hex digits kept in records: 128 bits
# Nesting deeper than this is not digested (the walk recurses): fail closed.
MAX_DEPTH = 200
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class Undigestable(TypeError):
    """A value with no reproducible digest (an open file, a lock, a cycle
    through an unpicklable object, nesting deeper than MAX_DEPTH)."""


# -- canonical scalars: self-delimiting, type-tagged byte strings -------------

_pack_float = struct.Struct(">d").pack
_pack_complex = struct.Struct(">dd").pack


def _str(v: str) -> bytes:
    data = v.encode("utf-8", "surrogatepass")  # lone surrogates (os.fsdecode) too
    return b"s%d:" % len(data) + data


_SCALAR: dict[type, Callable[[Any], bytes]] = {
    str: _str,
    int: lambda v: b"i%d;" % v,
    float: lambda v: b"f" + _pack_float(v),  # the bits: -0.0 and 0.0 differ
    bool: lambda v: b"T" if v else b"F",
    type(None): lambda v: b"N",
    bytes: lambda v: b"b%d:" % len(v) + v,
    complex: lambda v: b"c" + _pack_complex(v.real, v.imag),
    bytearray: lambda v: b"B%d:" % len(v) + bytes(v),
}


# -- the walk ------------------------------------------------------------------


class _Walk:
    """Feeds one value into a SHA-256. `stack` holds the values being walked
    (id -> depth) so that a cycle refers back instead of recursing forever."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.stack: dict[int, int] = {}

    def feed(self, v: Any) -> None:
        enc = _SCALAR.get(type(v))
        if enc is not None:
            self.h.update(enc(v))
            return
        depth = self.stack.get(id(v))
        if depth is not None:
            self.h.update(b"@%d;" % depth)
            return
        if len(self.stack) >= MAX_DEPTH:
            raise Undigestable(f"nested deeper than {MAX_DEPTH} levels")
        self.stack[id(v)] = len(self.stack)
        try:
            self._compound(v)
        finally:
            del self.stack[id(v)]

    def _compound(self, v: Any) -> None:
        t = type(v)
        if t is list or t is tuple:
            self.h.update(b"%s%d:" % (b"[" if t is list else b"(", len(v)))
            for item in v:
                self.feed(item)
        elif t is dict:
            self.h.update(b"{%d:" % len(v))
            for key, value in v.items():
                self.feed(key)
                self.feed(value)
        elif t is set or t is frozenset:
            self._unordered(b"S" if t is set else b"Z", v)
        elif isinstance(v, Redacted):
            self.h.update(b"R")  # a secret: only that one was there
        else:
            kind, content = _content(v)
            self.h.update(b"o" + _str(kind))
            # The stand-in is a fresh tuple (or a scalar): no level of its own.
            enc = _SCALAR.get(type(content))
            if enc is not None:
                self.h.update(enc(content))
            else:
                self._compound(content)

    def _unordered(self, tag: bytes, items: Iterable[Any]) -> None:
        # Iteration order of a set depends on the hash seed: sort the items' digests.
        outer, subs = self.h, []
        try:
            for item in items:
                self.h = hashlib.sha256()
                self.feed(item)
                subs.append(self.h.digest())
        finally:
            self.h = outer
        self.h.update(b"%s%d:" % (tag, len(subs)) + b"".join(sorted(subs)))


def _content(v: Any) -> tuple[str, Any]:
    """A kind and a stand-in value made of things the walk knows."""
    try:
        found = _arrays(v) or _described(v)
        return found if found is not None else _reduced(v)
    except Undigestable:
        raise
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
    return "code", _codec.dumps_callable(fn)


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


# -- what the engine calls ------------------------------------------------------


def fresh_token() -> str:
    """Stands for a value with no digest: never equal to anything recorded."""
    return "!" + secrets.token_hex(HEX // 2)[1:]


def value_digest(value: Any) -> str:
    """The digest of one value (a loop item, a sleep's duration)."""
    walk = _Walk()
    try:
        walk.feed(value)
    except (Undigestable, RecursionError):
        return fresh_token()
    return walk.h.hexdigest()[:HEX]


def call_digest(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any], name: str
) -> str:
    """The digest of a call over its BOUND arguments with defaults applied:
    f(1), f(x=1) and f() with default x=1 are one call. A call that does not
    bind raises TypeError naming the step (it would fail the same way on
    every retry). Without a signature, the arguments count as given."""
    if signature is None:
        pairs: list[tuple[str, Any]] = [("*", args), ("**", kwargs)]
    else:
        fast = _all_scalar_positional(signature, args, kwargs)
        if fast is not None:
            return fast
        pairs = list(_bind(signature, args, kwargs, name).arguments.items())
    try:
        return _arguments_digest(pairs)
    except (Undigestable, RecursionError):
        return fresh_token()


def run_id_digest(bound: inspect.BoundArguments) -> str:
    """The digest a derived run id is made of: the same as `call_digest` of
    that call. Unlike a step's digest this one raises Undigestable: a random
    token would give a new run id on every call, so the workflow could never
    be resumed; the caller asks for an explicit run id instead."""
    full = inspect.BoundArguments(bound.signature, dict(bound.arguments))
    full.apply_defaults()
    try:
        return _arguments_digest(list(full.arguments.items()))
    except RecursionError:
        raise Undigestable(f"nested deeper than {MAX_DEPTH} levels") from None


def _bind(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any], name: str
) -> inspect.BoundArguments:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(
            f"step {name}{signature} cannot be called with these arguments: {e}. "
            "A call that does not match the signature fails at once, without retries."
        ) from None
    bound.apply_defaults()
    return bound


def _arguments_digest(pairs: list[tuple[str, Any]]) -> str:
    walk = _Walk()
    walk.h.update(b"A%d:" % len(pairs))
    for arg, value in pairs:
        walk.h.update(_str(arg))
        try:
            walk.feed(value)
        except Undigestable as e:
            raise Undigestable(f"argument {arg!r}: {e}") from None
    return walk.h.hexdigest()[:HEX]


def _all_scalar_positional(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> str | None:
    """The per-step hot path (ids, names, numbers passed positionally to
    positional parameters, scalar defaults for the rest): the bytes
    `_arguments_digest` would hash, built without binding. None when the
    call needs the full path."""
    shape = _shape(signature)
    if shape is None or kwargs or len(args) > len(shape):
        return None
    parts = [b"A%d:" % len(shape)]
    for value, (name, _) in zip(args, shape, strict=False):
        enc = _SCALAR.get(type(value))
        if enc is None:
            return None
        parts.append(name)
        parts.append(enc(value))
    for name, default in shape[len(args) :]:
        if default is None:
            return None  # no default or not a scalar one: binding says what to do
        parts.append(name)
        parts.append(default)
    return hashlib.sha256(b"".join(parts)).hexdigest()[:HEX]


# (encoded name, encoded default or None) of each parameter, when they are all
# positional.
_Shape = tuple[tuple[bytes, bytes | None], ...]
# id(signature) -> (signature, shape). The signature is kept so that its id
# cannot be reused while the entry exists.
_SHAPES: dict[int, tuple[inspect.Signature, _Shape | None]] = {}


def _shape(signature: inspect.Signature) -> _Shape | None:
    hit = _SHAPES.get(id(signature))
    if hit is not None and hit[0] is signature:
        return hit[1]
    params = signature.parameters.values()
    shape = None
    if all(p.kind in _POSITIONAL for p in params):
        shape = tuple((_str(p.name), _default(p.default)) for p in params)
    if len(_SHAPES) >= 4096:  # steps redefined again and again (a notebook)
        _SHAPES.clear()
    _SHAPES[id(signature)] = (signature, shape)
    return shape


def _default(value: Any) -> bytes | None:
    # Only immutable scalars (a mutable default may change between calls);
    # None also for a parameter without a default (`Parameter.empty`, a class).
    enc = _SCALAR.get(type(value)) if type(value) is not bytearray else None
    return None if enc is None else enc(value)
