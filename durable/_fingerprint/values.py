"""Tokens of values: scalars, plain data and what a function holds live.

Pure standard library. `scalar_token` also encodes the literals of the AST
walk in `canon`; `plain_tokens` the module constants a function reads;
`_live_tokens` its defaults, closure cells and bound arguments, which may
hold anything and so never count by `id()` or pickle bytes.
"""

from __future__ import annotations

import datetime
import enum
import hashlib
import os
import pathlib
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

from .reach import _followable, identity_of, module_label
from .scriptnames import public_name as public_name
from .scriptnames import type_label

_SCALARS = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))
_CONTAINERS = (tuple, list, frozenset, set, dict)
_FROZEN = (tuple, frozenset)


def scalar_token(value: Any) -> str:
    """One self-delimiting token per scalar. No `repr`: the repr of a string
    depends on the Unicode tables of the interpreter, and the repr of a big
    int is refused past 4300 digits."""
    if value is None or value is Ellipsis:
        return "N" if value is None else "E"
    if isinstance(value, bool):
        return "T" if value else "F"
    if isinstance(value, int):
        return "i" + hex(value)
    if isinstance(value, float):
        return "f" + value.hex()
    if isinstance(value, complex):
        return f"j{value.real.hex()},{value.imag.hex()}"
    if isinstance(value, str):
        return f"s{len(value)}:{value}"
    if isinstance(value, bytes):
        return f"b{len(value)}:{value.hex()}"
    return f"?{type(value).__name__}"  # cannot happen for AST fields


def plain_tokens(
    value: object, *, mutable: bool = True, _seen: tuple[int, ...] = ()
) -> list[str] | None:
    """Tokens of exactly-plain data (the scalar types and tuples, lists, sets,
    frozensets and dicts of them), or None when anything in it is not.
    `mutable=False` also refuses lists, sets and dicts anywhere inside.
    (Not the codec's plain data: see `_storage.codec.is_plain`.)"""
    kind = type(value)
    if kind in _SCALARS:
        return [scalar_token(value)]
    if _by_value(kind):
        return _value_token(value)  # `Path(os.environ["DATA"])`, `Decimal("0.2")`
    if _numpy_scalar(value):  # `np.float64(2.0)`: a number, by its dtype and bytes
        try:
            number: Any = value
            return [f"n{number.dtype.str}:{number.tobytes().hex()}"]
        except Exception:  # a structured scalar holding objects: by its type, as before
            return None
    allowed = _CONTAINERS if mutable else _FROZEN
    if kind not in allowed or id(value) in _seen:
        return None  # a self-containing list is not plain data
    seen = (*_seen, id(value))
    items = list(value.items()) if isinstance(value, dict) else value
    out: list[list[str]] = []
    for item in items:  # type: ignore[attr-defined]
        pair = isinstance(value, dict)
        toks = (_pair_tokens if pair else _item_tokens)(item, mutable, seen)
        if toks is None:
            return None
        out.append(toks)
    if isinstance(value, (set, frozenset)):
        out.sort()  # iteration order of a set is arbitrary
    return [f"<{kind.__name__}:{len(out)}", *(t for toks in out for t in toks), ">"]


def content_tokens(value: object) -> list[str] | None:
    """Tokens of what a global holds that may change in place: plain data
    (`plain_tokens`), else the bytes of a buffer (`buffer_tokens`), else a
    pandas frame's rows (`frame_tokens`). Nested past the recursion limit
    (a linked list of 5,000 dicts), nothing tells it: a change, never a crash."""
    try:
        toks = plain_tokens(value)
    except RecursionError:
        return [fresh_token()]
    toks = buffer_tokens(value) if toks is None else toks
    return frame_tokens(value) if toks is None else toks


def buffer_tokens(value: object) -> list[str] | None:
    """Tokens of an object that exposes its memory (a numpy array, an
    `array.array`, a `bytearray`): its type, item format, shape and a digest
    of its bytes (a `memoryview` too: `VIEW = memoryview(data)`); None for
    anything else, or an array of objects (whose buffer would hold
    pointers, not values)."""
    if isinstance(value, (str, bytes)):
        return None
    try:
        view = memoryview(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, BufferError):
        return None
    with view:
        if "O" in view.format:
            return None
        digest = hashlib.sha256(view.tobytes()).hexdigest()
        return [f"<buffer:{_qualname(type(value))}", view.format, repr(view.shape), digest, ">"]


def frame_tokens(value: Any) -> list[str] | None:
    """Tokens of a pandas frame, series or index, when the program imported
    pandas (never here): its type, labels, dtypes and a digest of pandas'
    own hash of each row, index included (one vectorised pass); None for
    anything else, or values pandas cannot hash (lists in cells)."""
    pd = sys.modules.get("pandas")
    kinds = [getattr(pd, n, None) for n in ("DataFrame", "Series", "Index")]
    if not any(isinstance(k, type) and isinstance(value, k) for k in kinds):
        return None
    try:
        rows = pd.util.hash_pandas_object(value, index=True).to_numpy()  # type: ignore[union-attr]
        frame = isinstance(value, kinds[0])  # type: ignore[arg-type]  # else one column
        labels = repr(list(value.columns) if frame else [getattr(value, "name", None)])
        dtypes = repr(list(value.dtypes) if frame else [value.dtype])
    except Exception:  # unhashable cells, a pandas without `util`: by statements
        return None
    found = buffer_tokens(rows)
    return None if found is None else [f"<frame:{_qualname(type(value))}", labels, dtypes, *found, ">"]


def mapping_tokens(value: Any) -> list[str] | None:
    """Tokens of a library's mapping of plain data (a `ConfigParser`, its
    sections as mappings too; an `OrderedDict`, in order), when all it
    holds is; None otherwise (a dict itself is plain data)."""
    if type(value) is dict or not isinstance(value, Mapping):
        return None
    try:
        items = {k: dict(v.items()) if isinstance(v, Mapping) else v for k, v in value.items()}
    except Exception:  # a mapping that cannot be listed: by its statements
        return None
    return plain_tokens(items)


# Immutable values of the standard library, these very types (a subclass may
# hold state of its own): by value, as a number or a string is.
_BY_VALUE = frozenset((
    datetime.date, datetime.datetime, datetime.time, datetime.timedelta, datetime.timezone,
))  # fmt: skip
# Decimal and UUID too, but durable never imports their modules (they, and
# the `platform` uuid loads, were a twentieth of the CPU of each process that
# runs a workflow): no value of either exists before the program loaded it.
_LOADED_VALUE_TYPES = (("decimal", "Decimal"), ("uuid", "UUID"))


# Paths, these very types.
PATH_TYPES: tuple[type, ...] = (pathlib.PurePath, pathlib.PurePosixPath, pathlib.PureWindowsPath)
PATH_TYPES += (pathlib.Path, pathlib.PosixPath, pathlib.WindowsPath)
# Values shared by identity that nothing changes in place.
_SHARED = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset)


def unchanging(value: object) -> bool:
    """Whether no call handed `value`, and no method of it, changes it in
    place: a number, string, tuple, frozenset or None, or one of the
    standard library's immutable values, these very types (a subclass may
    hold state of its own): a path, range, date, Decimal, Fraction, UUID; a
    tuple or frozenset only when what it holds is (not past 64 items).
    (`cwd=ROOT` or `ROOT.joinpath(p)` in a test module changes no ROOT.)"""
    kind = type(value)
    if isinstance(value, (tuple, frozenset)):  # `([],)`: its list changes in place
        return len(value) <= 64 and all(unchanging(item) for item in value)
    return isinstance(value, _SHARED) or kind in PATH_TYPES or kind is range or _by_value(kind)


def _by_value(kind: type) -> bool:
    return kind in _BY_VALUE or kind is _loaded("fractions", "Fraction") or kind in loaded_value_types()


def loaded_value_types() -> tuple[type, ...]:
    """`decimal.Decimal` and `uuid.UUID`, those whose module is loaded."""
    return tuple(t for module, name in _LOADED_VALUE_TYPES if (t := _loaded(module, name)) is not None)


def _value_token(value: Any) -> list[str] | None:
    """A Decimal, Fraction, UUID, date, time, timedelta or timezone by its
    repr, which says all of it (a datetime's or time's timezone too, when it
    is a `datetime.timezone` or a `zoneinfo.ZoneInfo`: another tzinfo, whose
    repr may not, leaves it counted by its type, as before)."""
    name = type(value).__name__
    tz = type(getattr(value, "tzinfo", None))
    if tz not in (type(None), datetime.timezone) and tz is not _loaded("zoneinfo", "ZoneInfo"):
        return None
    return [f"r{name}:{value!r}"]


def _loaded(module: str, name: str) -> Any:
    """`module.name` when the program imported the module (else no value of it exists)."""
    return getattr(sys.modules.get(module), name, None)


def _numpy_scalar(value: object) -> bool:
    """A numpy scalar (`np.float64(2.0)`, `np.int32(3)`, `np.datetime64(...)`):
    immutable, so it counts by value as the number it stands for does, not
    by its type. Looked for only when the program imported numpy."""
    generic = _loaded("numpy", "generic")
    return isinstance(generic, type) and isinstance(value, generic)


def _item_tokens(item: Any, mutable: bool, seen: tuple[int, ...]) -> list[str] | None:
    return plain_tokens(item, mutable=mutable, _seen=seen)


def _pair_tokens(item: Any, mutable: bool, seen: tuple[int, ...]) -> list[str] | None:
    key, val = _item_tokens(item[0], mutable, seen), _item_tokens(item[1], mutable, seen)
    return None if key is None or val is None else key + val


def _live_tokens(value: object, reached: list[object]) -> list[str]:
    """Tokens for a default, closure cell or bound argument. Plain data by
    value; user functions by identity (their code is followed as helpers);
    anything else by its type, never by `id()` or pickle bytes. Lists,
    dicts and sets count by type only: a closure cell or default holding one
    is how functions keep state (counters, caches, flags)."""
    toks = plain_tokens(value, mutable=False)
    if toks is not None:
        return toks
    if type(value) is tuple:
        return ["(", *(t for v in value for t in _live_tokens(v, reached)), ")"]
    if _followable(value):  # a step's fingerprint joins through `reached`
        reached.append(value)
        return ["fn:" + identity_of(value)]
    enum_member = _enum_tokens(value)
    if enum_member is not None:
        return enum_member
    if isinstance(value, type):
        return ["type:" + _qualname(value)]
    if isinstance(value, types.ModuleType):
        return ["module:" + value.__name__]
    return ["obj:" + _qualname(type(value))]


def fallback_tokens(value: object) -> list[str]:
    """How a global that is not plain immutable data counts when the
    statement that binds it cannot be read (another notebook cell,
    `globals()[...]`): a module by its name, a class or function by where
    it is defined, a list, dict or set of plain data by its value, anything
    else by its type."""
    if isinstance(value, types.ModuleType):
        return ["module:" + value.__name__]
    if isinstance(getattr(value, "__qualname__", None), str) and callable(value):
        return ["ref:" + public_name(value)]
    return plain_tokens(value) or ["obj:" + _qualname(type(value))]


def named_function(value: object) -> str | None:
    """A function its module holds by its name, by that name (its code is
    followed from the statements that name it, as a helper's): which of
    them a list holds (`STAGES.remove(enrich)` in `main()`) is what a step
    calling it computes with.
    A lambda (`PICKED["f"] = OPS["two"]`) by its code, not where it lies; one
    holding values (a closure, defaults) or a nested function: None, as before."""
    if not isinstance(value, types.FunctionType):
        return None
    if value.__qualname__.endswith("<lambda>") and not value.__closure__ and not value.__defaults__:
        return f"lambda:{module_label(value.__module__)}:{_code_digest(value.__code__)}"
    if "<" in value.__qualname__:
        return None
    home: object = sys.modules.get(value.__module__)
    for attr in value.__qualname__.split("."):
        home = getattr(home, attr, None)
    return f"fn:{module_label(value.__module__)}.{value.__qualname__}" if home is value else None


def _code_digest(code: types.CodeType) -> str:
    """What a code object computes, without its lines (an edit above it moves them)."""
    # A set's order differs in each process (`x in {"a", "b"}`): sorted.
    consts = [_code_digest(c) if isinstance(c, types.CodeType) else repr(sorted(map(repr, c))) if isinstance(c, frozenset)
              else repr(c) for c in code.co_consts]  # fmt: skip
    return hash_tokens([code.co_code.hex(), *consts, *code.co_names, *code.co_varnames, str(code.co_argcount)])


def _enum_tokens(value: object) -> list[str] | None:
    """An enum member by its name and its value (`RED = 1` edited to `7`
    is a change); a value that is not plain data by its type."""
    if isinstance(value, enum.Enum):
        inner = plain_tokens(value.value, mutable=False) or ["obj:" + _qualname(type(value.value))]
        return [f"enum:{_qualname(type(value))}.{value.name}", *inner]
    return None


def _qualname(t: type) -> str:
    return type_label(t)


def hash_tokens(tokens: Iterable[str], size: int = 16) -> str:
    """Hex digest of the tokens, each followed by a NUL. A token that may
    itself hold a NUL (a string) starts with its length, so no two token
    sequences hash the same bytes."""
    h = hashlib.sha256()
    for t in tokens:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:size]


def fresh_token() -> str:
    """A value no other call gives: what cannot be told counts as changed."""
    return os.urandom(16).hex()
