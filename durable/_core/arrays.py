"""numpy and pandas values, digested by content (`content`): dtype, shape,
layout, index (with its frequency) and bytes. Duck-typed: looked at only
when the program imported them; durable never imports either."""

from __future__ import annotations

import bisect
import sys
from typing import Any

from .._fingerprint.scriptnames import type_label


def qualname(t: Any) -> str:
    """`module.Qualname` of a type (`type_label`): what every content digest is kinded by."""
    return type_label(t)


def arrays(v: Any) -> tuple[str, Any] | None:
    """numpy and pandas values, when the program imported them (never here)."""
    np = sys.modules.get("numpy")
    if np is not None:
        if type(v) is getattr(np, "ndarray", None):
            if v.dtype.hasobject:
                data: Any = v.reshape(-1).tolist()  # the objects themselves, walked
            else:
                data = v.tobytes(order="C")
            stand_in = (v.dtype.str, repr(v.dtype), v.shape, data)
            return "numpy.ndarray", stand_in + _layout(v) + _metadata(v.dtype)
        ma = sys.modules.get("numpy.ma")
        if ma is not None and _instance(v, ma, "MaskedArray") and v.hardmask:
            # Pickled, a hard mask is lost (a soft one is what its state says).
            return qualname(type(v)), ("hardmask", v.data, v.mask, v.fill_value)
        if _instance(v, np, "generic"):  # np.float64(1.0) and friends
            data = v.tolist() if v.dtype.hasobject else v.tobytes()
            return qualname(type(v)), (v.dtype.str, repr(v.dtype), data)
    pd = sys.modules.get("pandas")
    if pd is None:
        return None
    if _instance(v, pd, "DataFrame"):
        columns = [_pandas_values(v.iloc[:, i]) for i in range(v.shape[1])]
        stand_in = (v.columns, v.index, [_dtype(t) for t in v.dtypes], columns)
        return qualname(type(v)), _with_attrs(v, stand_in) + _own_attributes(v, pd.DataFrame)
    if _instance(v, pd, "Series"):
        stand_in = (_dtype(v.dtype), v.name, v.index, _pandas_values(v))
        return qualname(type(v)), _with_attrs(v, stand_in) + _own_attributes(v, pd.Series)
    if _instance(v, pd, "Index"):
        index: tuple[Any, ...] = (_dtype(v.dtype), list(v.names), _pandas_values(v))
        return qualname(type(v)), index + _frequency(v, pd) + _levels(v, pd)
    return None


class Memory:
    """The numpy arrays met in one value (`identity._Walk`): a view and its
    base (`[a, a[:2]]`) are one memory, and a step writing through one
    sees the other change, as with one list held twice; two copies are not.
    Kept by what holds their memory, then by the length class of their
    bytes, sorted by where they start: the earlier arrays a new one may
    overlap are the few around it (the rows of one array, each starting
    where the one before ends, are looked at once each)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[int, int], tuple[list[int], list[tuple[int, int, int, Any]]]] = {}
        self.classes: dict[int, set[int]] = {}

    def meet(self, v: Any, order: int) -> bytes:
        """The place of the first array met before `v` sharing memory with
        it, where `v` starts in it and its strides; nothing when it shares
        no byte with any (`np.split`'s views of one array are digested as
        copies are). `order`: `v`'s place."""
        shared = self.first(v, unsure=True)
        np = sys.modules.get("numpy")
        bounds = _byte_bounds(np)
        if np is None or bounds is None or not isinstance(v, np.ndarray):
            return b""
        holder, (low, high) = id(_holder(np, v)), bounds(v)
        if high > low:
            size = (high - low).bit_length()
            self.classes.setdefault(holder, set()).add(size)
            starts, items = self.kept.setdefault((holder, size), ([], []))
            j = bisect.bisect_right(starts, low)
            starts.insert(j, low)
            items.insert(j, (low, high, order, v))
        if shared is None:
            return b""
        start = v.__array_interface__["data"][0] - shared[1].__array_interface__["data"][0]
        return b"~%d,%d,%s;" % (shared[0], start, repr(v.strides).encode())

    def first(self, v: Any, *, unsure: bool) -> tuple[int, Any] | None:
        """(place, array) of the first array met sharing memory with `v`;
        `unsure`: the answer when numpy cannot tell, or past `_MAX_CHECKS`
        arrays that may (fail closed: shared in a digest, not for a replay)."""
        np = sys.modules.get("numpy")
        bounds = _byte_bounds(np)
        if np is None or bounds is None or not isinstance(v, np.ndarray):
            return None
        holder, (low, high) = id(_holder(np, v)), bounds(v)
        if high <= low:  # no byte
            return None
        near: list[tuple[int, int, int, Any]] = []
        for size in self.classes.get(holder, ()):
            starts, items = self.kept[(holder, size)]
            j = bisect.bisect_left(starts, high) - 1
            while j >= 0 and starts[j] > low - (1 << size):  # one starting lower ends before `low`
                if items[j][1] > low:
                    near.append(items[j])
                j -= 1
        near.sort(key=lambda item: item[2])
        for item in near[:_MAX_CHECKS]:
            if _shares(np, v, item[3], unsure=unsure):
                return item[2], item[3]
        return (near[0][2], near[0][3]) if unsure and len(near) > _MAX_CHECKS else None


_MAX_CHECKS = 64


def _byte_bounds(np: Any) -> Any:
    if np is None:
        return None
    return getattr(getattr(np.lib, "array_utils", None), "byte_bounds", None) or getattr(np, "byte_bounds", None)


def holders(arrays: list[Any]) -> Memory:
    """The numpy arrays of `arrays`, in order (`view_of`'s `held`)."""
    held = Memory()
    for place, a in enumerate(arrays):
        held.meet(a, place)
    return held


def view_of(v: Any, held: Memory) -> tuple[Any, list[Any]] | None:
    """The first of `held` (a call's arguments' arrays, by `holders`) that
    the numpy array `v` shares memory with, and how `v` lies in it
    (`viewed`); None when `v` is no array or shares none (a copy)."""
    np = sys.modules.get("numpy")
    if np is None or type(v) is not np.ndarray or v.dtype.hasobject:
        return None
    found = held.first(v, unsure=False)
    if found is None:
        return None
    base = found[1]
    start = v.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return base, [start, list(v.shape), list(v.strides), v.dtype.str]


def viewed(base: Any, how: Any) -> Any:
    """The array lying as `how` (`view_of`) says in the numpy array `base`,
    a view: writes through it are seen in `base`. None when `how` is not
    ours or does not lie within `base`'s memory."""
    np = sys.modules.get("numpy")
    if np is None or type(base) is not np.ndarray or not (type(how) in (list, tuple) and len(how) == 4):
        return None
    start, shape, strides, dtype = how
    ints = [start, *shape, *strides] if type(shape) in (list, tuple) and type(strides) in (list, tuple) else [None]
    if type(dtype) is not str or any(type(n) is not int for n in ints) or len(shape) != len(strides):
        return None
    try:
        kind = np.dtype(dtype)
    except Exception:
        return None
    if kind.hasobject or any(n < 0 for n in shape):
        return None
    bounds = _byte_bounds(np)
    if bounds is None:  # a numpy that cannot say: no view (the call counts as changed)
        return None
    low, high = bounds(base)
    at = base.__array_interface__["data"][0] + start
    if 0 not in shape:
        first = at + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True))
        last = at + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True)) + kind.itemsize
        if first < low or last > high:
            return None
    lying = {"version": 3, "shape": tuple(shape), "strides": tuple(strides), "typestr": dtype, "data": (at, not base.flags.writeable)}
    try:
        return np.asarray(_Lying(lying, base))
    except Exception:  # a numpy that does not take it: no view (the call counts as changed)
        return None


def values_of(v: Any) -> Any:
    """A numpy array's values as a C-contiguous array (its layout aside:
    what a record of a strided view holds); anything else as it is."""
    np = sys.modules.get("numpy")
    return np.ascontiguousarray(v) if np is not None and type(v) is np.ndarray else v


class _Lying:
    """What numpy makes a view from (as `as_strided` does): it holds `base`, so its memory stays."""

    def __init__(self, interface: dict[str, Any], base: Any) -> None:
        self.__array_interface__ = interface
        self.base = base


def _holder(np: Any, v: Any) -> Any:
    """What holds the memory of the numpy array `v`: down its bases, the
    buffer under a memoryview (`np.frombuffer`), the array under a `viewed` one."""
    while True:
        below: Any
        if isinstance(v, memoryview):
            below = v.obj
        else:
            below = v.base if isinstance(v, (np.ndarray, _Lying)) else None
        if below is None:
            return v
        v = below


# What numpy may spend telling whether two strided arrays overlap (exact by
# default, which some strides make exponential).
_MAX_WORK = 10_000


def _shares(np: Any, a: Any, b: Any, *, unsure: bool) -> bool:
    try:
        return bool(np.shares_memory(a, b, max_work=_MAX_WORK))
    except Exception:  # too hard to tell: `unsure`, the answer that fails closed
        return unsure


def in_pandas(v: Any) -> bool:
    """Whether v is a pandas object: the arrays of its stand-in are views
    of its blocks, which copy-on-write keeps apart from any other's."""
    pd = sys.modules.get("pandas")
    return pd is not None and any(_instance(v, pd, name) for name in ("DataFrame", "Series", "Index"))


def _levels(v: Any, pd: Any) -> tuple[Any, ...]:
    """A MultiIndex's `levels` when they are not those its rows alone give:
    a slice keeps the values it no longer uses, and levels built by hand
    may be in any order (`index.levels[0]` reads them). Nothing otherwise:
    such an index's digest stays what it was."""
    if not _instance(v, pd, "MultiIndex"):
        return ()
    try:
        plain = pd.MultiIndex.from_tuples(list(v), names=v.names).levels
        same = len(plain) == len(v.levels)
        if same and all(a.equals(b) for a, b in zip(plain, v.levels, strict=True)):
            return ()
    except Exception:  # no rows to build it from: count the levels
        pass
    return ("levels", [_pandas_values(level) for level in v.levels])


def _frequency(v: Any, pd: Any) -> tuple[Any, ...]:
    """The frequency a DatetimeIndex or TimedeltaIndex keeps beside its
    values: `shift(n)` and `asfreq` step by it, and business days ('B') and
    calendar days ('D') hold the same Monday and Tuesday. The offset counts
    by content (a custom business day's holidays too). Nothing when there
    is none: such an index's digest stays what it was."""
    if not (_instance(v, pd, "DatetimeIndex") or _instance(v, pd, "TimedeltaIndex")):
        return ()
    return () if v.freq is None else ("freq", v.freq)


def _dtype(dtype: Any) -> Any:
    """A pandas dtype by its repr; a categorical one by all its categories,
    in order (its repr lists `display.max_seq_items` of them: 100)."""
    categories = getattr(dtype, "categories", None)
    if categories is None:
        return repr(dtype)
    return (qualname(type(dtype)), categories, dtype.ordered)


def _layout(v: Any) -> tuple[Any, ...]:
    """How an array that is not C-contiguous lies in memory: the same values
    in Fortran order (or strided) give other results to `ravel(order="A")`,
    `tobytes(order="A")` or `np.save`, so they are another argument. (Nothing
    for a C-contiguous array: its digest stays what it was.)"""
    if v.flags.c_contiguous:
        return ()
    by_stride = sorted(range(v.ndim), key=lambda axis: abs(v.strides[axis]))
    return ("layout", bool(v.flags.f_contiguous), by_stride, [s < 0 for s in v.strides])


def _instance(v: Any, module: Any, name: str) -> bool:
    # getattr: a module still being imported may lack the class yet.
    cls = getattr(module, name, None)
    return isinstance(cls, type) and isinstance(v, cls)


def _with_attrs(v: Any, stand_in: tuple[Any, ...]) -> tuple[Any, ...]:
    """`df.attrs`, metadata a step may read, when there is any, and a flag
    set off its default (`set_flags(allows_duplicate_labels=False)`: a
    step's `concat` then raises): the digest of others stays what it was."""
    stand_in = (*stand_in, dict(v.attrs)) if v.attrs else stand_in
    flags = getattr(v, "flags", None)
    if getattr(flags, "allows_duplicate_labels", True) is False:
        stand_in = (*stand_in, "no duplicate labels")
    return stand_in


def _own_attributes(v: Any, base: type) -> tuple[Any, ...]:
    """What an instance of a subclass of a pandas frame or series holds of
    its own: the attributes its class names in `_metadata` (pandas' way to
    give a subclass a `unit` that its results carry) and any other public
    one set on it; a step may read them. Nothing for pandas' own classes,
    whose digest stays what it was; pandas' internals are private names."""
    if type(v) is base:
        return ()
    declared = getattr(type(v), "_metadata", ())
    held = vars(v)
    own = [n for n in held if (n in declared or not n.startswith("_")) and isinstance(n, str)]
    return ("own attributes", [(n, held[n]) for n in sorted(own)])


def _metadata(dtype: Any) -> tuple[Any, ...]:
    """A dtype's `metadata` (units a step may read), not in its repr; nothing
    when it has none, so that the digest of others stays what it was."""
    return () if dtype.metadata is None else ("metadata", dict(dtype.metadata))


def _pandas_values(v: Any) -> Any:
    np = sys.modules["numpy"]  # pandas imports it
    if isinstance(v.dtype, np.dtype):
        return v.to_numpy()
    # Extension dtypes (nullable ints, categoricals, strings): keep pd.NA as itself.
    return v.array.to_numpy(dtype=object)
