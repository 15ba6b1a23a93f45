"""The identity of a call (DESIGN §2): one digest per value and per bound
call; distinct values never share one, equal values always do, in any
process; a value without a digest looks changed every time."""

from __future__ import annotations

import collections
import copy
import copyreg
import dataclasses
import datetime
import decimal
import enum
import inspect
import json
import os
import pathlib
import pickle
import re
import struct
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import durable
from durable._core import identity
from durable._core.arguments import run_id_digest
from durable._core.identity import Undigestable, call_digest, value_digest

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Point:
    x: int
    y: float


@dataclasses.dataclass
class Point3(Point):
    pass


class Color(enum.Enum):
    RED = 1
    BLUE = 2


class Box:
    def __init__(self, content: Any) -> None:
        self.content = content
        self.tags = {"b", "a", "c"}  # a set in the state: digested in any seed


class Tags(frozenset[str]):
    """Pickled as a list in the set's own order, which the hash seed sets."""


class IdSet(frozenset[int]):
    pass


def module_function(x: int) -> int:
    return x


def samples() -> list[Any]:
    """Values beyond the canonical subset, built the same way in any process."""
    frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}, index=[10, 20, 30])
    return [
        np.arange(12, dtype="int64").reshape(3, 4),
        np.array(["a", None, 3], dtype=object),
        np.float64(1.5),
        frame,
        frame["b"],
        pd.Series([1, None], dtype="Int64"),
        pd.MultiIndex.from_tuples([(1, "a"), (2, "b")], names=["n", "s"]),
        pd.Series([1, 2], index=pd.date_range("2024-01-01", periods=2, freq="B")),
        pd.Series(pd.Categorical(["b", "a"], categories=[f"c{i}" for i in range(200)] + ["a", "b"])),
        Point(1, 2.0),
        Point3(1, 2.0),
        Color.BLUE,
        datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.timezone.utc),
        decimal.Decimal("1.50"),
        uuid.UUID(int=7),
        pathlib.PurePosixPath("/data/x"),
        collections.defaultdict(list, {"k": [1]}),
        collections.OrderedDict(b=1, a=2),
        Box({"n": [1, 2]}),
        Tags({"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}),
        module_function,
        np.maximum,  # a ufunc: pickled through a `copyreg` reducer
        re.compile("a+", re.I),  # so is a regex, and a union of types
        int | str,
        len,
        lambda x: x + 1,
        durable.redact("secret"),
    ]


def test_canonical_values_are_type_tagged() -> None:
    distinct = [
        1, 1.0, True, 0, 0.0, -0.0, False, None, "1", b"1", bytearray(b"1"), 1j,
        2**100, -(2**100), [1], (1,), {1}, frozenset({1}), {1: 1}, {"a": 1, "b": 2},
        {"b": 2, "a": 1}, [[]], [()], "\udc80", "\ufffd", float("nan"), float("-inf"),
    ]  # fmt: skip
    digests = [value_digest(v) for v in distinct]
    assert len(set(digests)) == len(distinct)
    assert all(len(d) == identity.HEX and not d.startswith("!") for d in digests)
    assert value_digest({1, 2, 3}) == value_digest({3, 2, 1})
    assert value_digest(float("nan")) == value_digest(float("nan"))


def test_an_int_of_any_size_has_a_digest() -> None:
    """Past 4300 digits `%d` raises ValueError: that escaped from a step call
    (a cached one, or one in a run) as a traceback from inside durable."""
    huge = 10**5000
    assert len({value_digest(huge), value_digest(huge + 1), value_digest(-huge)}) == 3
    assert not value_digest(huge).startswith("!")

    def step(n: int, k: int = 1) -> int:
        return n

    sig = inspect.signature(step)
    assert call_digest(sig, (huge,), {}, "step") == call_digest(sig, (), {"n": huge}, "step")
    assert call_digest(sig, (huge,), {}, "step") != call_digest(sig, (huge + 1,), {}, "step")


@pytest.mark.parametrize("value", samples(), ids=lambda v: type(v).__name__)
def test_other_values_have_a_reproducible_content_digest(value: Any) -> None:
    digest = value_digest(value)
    assert not digest.startswith("!")
    assert value_digest(value) == digest
    if not callable(value) and not isinstance(value, durable.Redacted):
        assert value_digest(copy.deepcopy(value)) == digest


def changed_cell(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out.iloc[2, 1] = "w"
    return out


def test_content_digests_see_every_difference() -> None:
    arr, frame = samples()[0], samples()[3]
    one_off = arr.copy()
    one_off[2, 3] += 1
    pairs = [
        (arr, one_off),
        (arr, arr.astype("int32")),
        (arr, arr.reshape(4, 3)),
        (arr, np.asfortranarray(arr)),  # `ravel(order="A")` tells them apart
        (arr[:, ::-1], np.ascontiguousarray(arr[:, ::-1])),
        (arr, arr.tolist()),
        (np.float64(1.5), 1.5),
        (np.maximum, np.minimum),
        (re.compile("a"), re.compile("a", re.I)),
        (int | str, int | bytes),
        (frame, changed_cell(frame)),
        (frame, frame.rename(columns={"b": "c"})),
        (frame, frame.set_axis([10, 20, 31])),
        (frame, frame.astype({"a": "float64"})),
        (frame["b"], frame["b"].rename("c")),
        (pd.date_range("2024-01-01", periods=2, freq="B"), pd.date_range("2024-01-01", periods=2)),
        (pd.timedelta_range("1D", periods=2), pd.TimedeltaIndex(["1D", "2D"])),
        (pd.date_range("2024-01-01", periods=2), pd.DatetimeIndex(["2024-01-01", "2024-01-02"])),
        (pd.MultiIndex.from_tuples([(1, 2), (3, 4), (5, 6)])[:2], pd.MultiIndex.from_tuples([(1, 2), (3, 4)])),
        (Point(1, 2.0), Point(1, 2.5)),
        (Point(1, 2.0), Point3(1, 2.0)),
        (Color.RED, Color.BLUE),
        (Color.RED, 1),
        (collections.defaultdict(list), collections.defaultdict(set)),
        (collections.defaultdict(list), {}),
        (collections.OrderedDict(a=1), {"a": 1}),
        (Box(1), Box(2)),
        (decimal.Decimal("1.5"), decimal.Decimal("1.50")),
        (datetime.date(2024, 1, 1), datetime.datetime(2024, 1, 1)),
        (pathlib.PurePosixPath("a"), "a"),
        (module_function, len),
        (durable.redact("x"), None),
    ]
    for a, b in pairs:
        assert value_digest(a) != value_digest(b), (a, b)


def test_what_pickle_and_repr_leave_out_is_digested() -> None:
    """A dtype's metadata (not in its repr), a masked array's hard mask
    (lost when pickled) and a frame's flag set off its default each change
    what a step computes from the same values: `dtype.metadata["unit"]`, an
    assignment under the mask, a `concat` that raises. They were one
    digest, and a cached or resumed step was served the other's output.
    Values without them keep the digest they had."""
    plain = np.zeros(2, dtype="i4")
    metres = np.zeros(2, dtype=np.dtype("i4", metadata={"unit": "m"}))
    km = np.zeros(2, dtype=np.dtype("i4", metadata={"unit": "km"}))
    soft = np.ma.array([1, 2], mask=[False, True])
    hard = np.ma.array([1, 2], mask=[False, True], hard_mask=True)
    frame = pd.DataFrame({"a": [1]})
    strict = frame.set_flags(allows_duplicate_labels=False)
    for a, b in [(plain, metres), (metres, km), (soft, hard), (frame, strict)]:
        assert value_digest(a) != value_digest(b), (a, b)
    assert value_digest(hard) == value_digest(np.ma.array([1, 2], mask=[False, True], hard_mask=True))
    # As on bcd6e14: a value without them is digested as it was.
    assert value_digest(plain) == "8c549bfde0c90305611c0976ca6a1f60"
    assert value_digest(soft) == "4d3179df346eaa60ee17210dd7c8785d"
    # A frame's digest follows its pandas version's pickled state (3.10's
    # pandas gives another): its flag at the default is the frame as it was.
    assert value_digest(frame) == value_digest(strict.set_flags(allows_duplicate_labels=True))


def test_a_categorical_counts_every_category_in_order() -> None:
    """pandas cuts a categorical dtype's repr short past 100 categories:
    two of them trading places there gave other codes (`.cat.codes`, the
    order of an ordered one) under one digest, and `display.max_seq_items`
    changed the digest of the same value."""
    cats = [f"c{i:03d}" for i in range(300)]
    swapped = [*cats[:150], cats[151], cats[150], *cats[152:]]
    one = pd.Series(pd.Categorical(["c150", "c151"], categories=cats))
    other = pd.Series(pd.Categorical(["c150", "c151"], categories=swapped))
    assert list(one.cat.codes) != list(other.cat.codes)
    pairs = [(one, other), (one.to_frame(), other.to_frame())]
    pairs.append((pd.CategoricalIndex(one), pd.CategoricalIndex(other)))
    for a, b in pairs:
        assert value_digest(a) != value_digest(b)
    before = value_digest(one)
    with pd.option_context("display.max_seq_items", 3):
        assert value_digest(one) == before


def test_a_generic_alias_counts_its_arguments() -> None:
    """Python 3.10 calls `list[int]` an instance of `type`: `list[int]`,
    `list[str]` and `list` were one digest there (the class's name)."""
    aliases = [list, list[int], list[str], dict[str, int], dict[str, list[int]]]
    assert len({value_digest(v) for v in aliases}) == len(aliases)


class Params(dict[str, Any]):
    def __init__(self, mode: str, **items: Any) -> None:
        super().__init__(**items)
        self.mode = mode


class Settings(collections.UserDict[str, Any]):
    pass


class Slotted(dict[str, Any]):
    __slots__ = ("mode",)


class Day(datetime.date):
    pass


class Offset(datetime.tzinfo):
    """A tzinfo whose repr says nothing of its offset."""

    def __init__(self, hours: int) -> None:
        self.hours = hours

    def utcoffset(self, dt: datetime.datetime | None) -> datetime.timedelta:
        return datetime.timedelta(hours=self.hours)

    def __repr__(self) -> str:
        return "Offset()"


def _with(value: Any, **attributes: Any) -> Any:
    for name, attribute in attributes.items():
        setattr(value, name, attribute)
    return value


def test_a_subclass_or_a_mapping_counts_the_state_of_its_instance() -> None:
    """Not its items or its repr alone: an attribute that differs is another argument."""
    for (a, b), (again, _) in zip(_state_pairs(), _state_pairs(), strict=True):
        assert value_digest(a) != value_digest(b), (a, b)
        assert value_digest(a) == value_digest(again), a  # still the same in equal values
    # the state an attribute holds counts by content too: none, none ever equal
    locked = _with(Params("fast", k=1), lock=threading.Lock())
    assert value_digest(locked).startswith("!")
    zoned = datetime.datetime(2020, 1, 1, tzinfo=_with(Offset(1), lock=threading.Lock()))
    assert value_digest(zoned).startswith("!")


def _state_pairs() -> list[tuple[Any, Any]]:
    slotted = [_with(Slotted(k=1), mode=mode) for mode in ("fast", "slow")]
    one, two = Offset(1), Offset(2)
    return [
        (Params("fast", k=1), Params("slow", k=1)),
        (_with(Settings(k=1), mode="fast"), _with(Settings(k=1), mode="slow")),
        (_with(collections.OrderedDict(k=1), mode=1), collections.OrderedDict(k=1)),
        (slotted[0], slotted[1]),
        (_with(Day(2020, 1, 1), note="a"), _with(Day(2020, 1, 1), note="b")),
        (Day(2020, 1, 1), datetime.date(2020, 1, 1)),
        (Offset(1), Offset(2)),
        (datetime.datetime(2020, 1, 1, tzinfo=one), datetime.datetime(2020, 1, 1, tzinfo=two)),
        (datetime.time(1, tzinfo=one), datetime.time(1, tzinfo=two)),
        (collections.ChainMap({"a": 1}, {"a": 2}), collections.ChainMap({"a": 1})),
    ]


# Digests of values of the exact types as durable has always made them: runs
# recorded with them replay after an upgrade (their digests must not move).
GOLDEN = {
    "dict": ({"a": 1, "b": [1, 2]}, "781d31522cdab958fbf98c3311afc560"),
    "date": (datetime.date(2024, 1, 2), "69392bb14c388d217f7ac01d0e950eea"),
    "datetime": (
        datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.timezone.utc),
        "ee3f8213e1afe23d0106033bc5704add",
    ),
    "timedelta": (datetime.timedelta(days=1, seconds=3), "27bc7d682af29f47bca68f1602d7ea4c"),
    "decimal": (decimal.Decimal("1.50"), "a357ac6f3b3871cbcda7d7ac7a2df1bc"),
    "uuid": (uuid.UUID(int=7), "ae72f092c55ce1ae4d51cc4981c70caf"),
    "ordereddict": (collections.OrderedDict(b=1, a=2), "e5c5290bcf3579a92c35a8ac6a0e9935"),
    "defaultdict": (collections.defaultdict(list, {"k": [1]}), "11ef17cd1aa1eedd7eeb451049ce20cb"),
    "userdict": (collections.UserDict(a=1), "1b51fa7100ec468162029936d29abc08"),
    "chainmap": (collections.ChainMap({"a": 1}), "f517c9c94267378c02e65a2601d9684b"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_digests_of_the_exact_types_do_not_move(name: str) -> None:
    value, digest = GOLDEN[name]
    assert value_digest(value) == digest


def test_attrs_and_pydantic_models_by_type_and_fields() -> None:
    attr = pytest.importorskip("attr")
    pydantic = pytest.importorskip("pydantic")

    @attr.s(auto_attribs=True)
    class A:
        x: int

    class M(pydantic.BaseModel):
        x: int

    class N(M):
        pass

    assert value_digest(A(1)) == value_digest(A(1)) != value_digest(A(2))
    extra = A(1)
    extra.note = "set outside the fields"  # type: ignore[attr-defined]
    assert value_digest(extra) != value_digest(A(1))
    assert value_digest(M(x=1)) == value_digest(M(x=1)) != value_digest(M(x=2))
    assert value_digest(M(x=1)) != value_digest(N(x=1))


def test_a_pydantic_model_counts_which_fields_were_set() -> None:
    """`model_dump(exclude_unset=True)` (a PATCH payload) tells `Patch()`
    from `Patch(name=None)`: one digest replayed the one's output for the
    other. A model given every field keeps the digest it had."""
    pydantic = pytest.importorskip("pydantic")

    class Patch(pydantic.BaseModel):
        name: str | None = None

    unset, cleared = Patch(), Patch(name=None)
    assert unset.model_dump(exclude_unset=True) != cleared.model_dump(exclude_unset=True)
    assert value_digest(unset) != value_digest(cleared)
    assert value_digest(Patch.model_construct(name=None)) == value_digest(cleared)


def test_redacted_contributes_a_marker_only() -> None:
    assert value_digest(durable.redact("a")) == value_digest(durable.redact("b"))
    assert value_digest([durable.redact("a"), 1]) != value_digest([durable.redact("a"), 2])


def test_cycles_end_and_deep_nesting_fails_closed() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert value_digest(loop) == value_digest(loop) != value_digest([1, [1]])
    node = Box(None)
    node.content = node
    assert value_digest(node) == value_digest(node)
    deep: list[Any] = []
    for _ in range(sys.getrecursionlimit() * 2):
        deep = [deep]
    first, second = value_digest(deep), value_digest(deep)
    assert first.startswith("!") and first != second


def test_a_value_without_a_digest_never_matches_anything() -> None:
    lock = threading.Lock()
    with open(__file__) as handle:
        for value in (lock, handle, (x for x in [1]), Box(lock)):
            first, second = value_digest(value), value_digest(value)
            assert first.startswith("!") and second.startswith("!") and first != second


def f(x: int, y: str = "y", *rest: int, z: float = 0.5, **more: Any) -> None:
    pass


SIG = inspect.signature(f)
MUTABLE = bytearray(b"d")


def test_a_call_is_digested_over_its_bound_arguments() -> None:
    base = call_digest(SIG, (1,), {}, "f")
    assert base == call_digest(SIG, (), {"x": 1}, "f")
    assert base == call_digest(SIG, (1, "y"), {"z": 0.5}, "f")
    assert base != call_digest(SIG, (1, "y", 3), {}, "f")
    assert base != call_digest(SIG, (1,), {"w": 1}, "f")
    assert call_digest(SIG, (1,), {"a": 1, "b": 2}, "f") != call_digest(
        SIG, (1,), {"b": 2, "a": 1}, "f"
    )  # **more is a dict: its order reaches the function

    def g(a: Any, b: Any) -> None:
        pass

    sig = inspect.signature(g)
    for a, b in [(1, "s"), (2**80, b"x"), (None, -0.0), (True, 1j), (bytearray(b"q"), 1.0)]:
        fast = call_digest(sig, (a, b), {}, "g")  # the all-scalar hot path
        assert (
            fast
            == call_digest(sig, (a,), {"b": b}, "g")
            == call_digest(sig, (), {"a": a, "b": b}, "g")
        )
    assert call_digest(sig, (1, 2), {}, "g") != call_digest(sig, (2, 1), {}, "g")

    def h(a: Any, b: Any = 2, c: Any = "c", d: Any = MUTABLE, e: Any = (1,)) -> None:
        pass

    sig = inspect.signature(h)
    slow = call_digest(sig, (), {"a": 1}, "h")  # bound, defaults applied
    assert call_digest(sig, (1,), {}, "h") == slow  # scalar defaults filled in, then binding
    assert call_digest(sig, (1, 2, "c", bytearray(b"d"), (1,)), {}, "h") == slow
    assert call_digest(sig, (1, 2, "c", bytearray(b"e")), {}, "h") != slow
    assert call_digest(None, (1,), {}, "h") != call_digest(None, (), {"x": 1}, "h")


def test_a_call_that_does_not_bind_is_a_type_error_naming_the_step() -> None:
    with pytest.raises(TypeError, match=r"step mod\.f\(x: .*missing a required argument: 'x'"):
        call_digest(SIG, (), {}, "mod.f")


def test_run_ids_use_the_same_digest_and_refuse_what_has_none() -> None:
    bound = SIG.bind(1)
    assert run_id_digest(bound) == call_digest(SIG, (1,), {}, "f")
    with pytest.raises(Undigestable, match=r"argument 'y'.*lock"):
        run_id_digest(SIG.bind(1, threading.Lock()))


# -- property tests ---------------------------------------------------------------

TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=4)
SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.complex_numbers() | TEXT
    | st.binary(max_size=4) | st.binary(max_size=4).map(bytearray)
)  # fmt: skip
HASHABLE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT | st.binary(max_size=4),
    lambda c: st.tuples(c, c) | st.frozensets(c, max_size=3),
    max_leaves=6,
)
VALUES = st.recursive(
    SCALARS,
    lambda c: (
        st.lists(c, max_size=3)
        | st.lists(c, max_size=3).map(tuple)
        | st.dictionaries(HASHABLE, c, max_size=3)
        | st.sets(HASHABLE, max_size=3)
        | st.frozensets(HASHABLE, max_size=3)
    ),
    max_leaves=10,
)


def twist(v: Any) -> Any:
    """A near copy: equal under `==` (or nearly) but of another type or order."""
    if type(v) is bool:
        return int(v)
    if type(v) is int:
        return float(v) if abs(v) < 2**53 else v + 1
    if type(v) is float:
        return -v if v == 0 else (int(v) if v.is_integer() else v.hex())
    if type(v) is bytes:
        return bytearray(v)
    if type(v) is bytearray:
        return bytes(v)
    if type(v) in (list, tuple):
        return tuple(v) if type(v) is list else list(v)
    if type(v) is dict:
        return dict(reversed(list(v.items()))) if len(v) > 1 else list(v.items())
    if type(v) in (set, frozenset):
        return frozenset(v) if type(v) is set else set(v)
    return str(v)


def same(a: Any, b: Any) -> bool:
    """Equality that also demands the same types, order and float bits."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return struct.pack(">d", a) == struct.pack(">d", b)
    if type(a) is complex:
        return same(a.real, b.real) and same(a.imag, b.imag)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        pairs = zip(a.items(), b.items(), strict=False)
        return len(a) == len(b) and all(same(k, m) and same(v, w) for (k, v), (m, w) in pairs)
    if type(a) in (set, frozenset):
        return len(a) == len(b) and all(any(same(x, y) for y in b) for x in a)
    return bool(a == b)


def nudge(draw: st.DrawFn, v: Any) -> Any:
    """`v` with one leaf or container somewhere inside it twisted."""
    if type(v) in (list, tuple) and v and draw(st.booleans()):
        i = draw(st.integers(0, len(v) - 1))
        items = list(v)
        items[i] = nudge(draw, items[i])
        return type(v)(items)
    if type(v) is dict and v and draw(st.booleans()):
        out = dict(v)
        key = list(v)[draw(st.integers(0, len(v) - 1))]
        out[key] = nudge(draw, v[key])
        return out
    return twist(v)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    a = draw(SCALARS if draw(st.integers(0, 3)) == 0 else VALUES)
    how = draw(st.sampled_from(["copy", "nudge", "nudge", "other"]))
    if how == "copy":
        return a, copy.deepcopy(a)
    if how == "nudge":
        return a, nudge(draw, a)
    return a, draw(VALUES)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs())
@example((0.0, -0.0))
@example(({"a": 1, "b": 2}, {"b": 2, "a": 1}))
@example(([b"x"], [bytearray(b"x")]))
@example(([1, {1}], [1.0, frozenset({1})]))
@example(((True, None), [1, None]))
def test_equal_digests_mean_equal_values_of_the_same_types(pair: tuple[Any, Any]) -> None:
    a, b = pair
    assert (value_digest(a) == value_digest(b)) == same(a, b)


CHILD = """
import json, pickle, sys
from durable._core.identity import value_digest
from tests.test_identity import samples
values = pickle.load(open(sys.argv[1], "rb"))
print(json.dumps([value_digest(v) for v in values + samples()]))
"""


def test_digests_are_the_same_in_any_process(tmp_path: Path) -> None:
    values: list[Any] = []

    @settings(max_examples=150, deadline=None, database=None)
    @given(VALUES)
    def collect(v: Any) -> None:
        values.append(v)

    collect()
    path = tmp_path / "values.pickle"
    path.write_bytes(pickle.dumps(values))
    here = [value_digest(v) for v in values + samples()]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for seed in ("1", "4242"):  # two hash seeds besides this process's own
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)],
            env={**env, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        assert json.loads(out.stdout) == here, f"PYTHONHASHSEED={seed}"


def test_durable_never_imports_numpy_or_pandas(tmp_path: Path) -> None:
    script = (
        "import dataclasses, sys, durable\n"
        "@dataclasses.dataclass\n"
        "class P:\n"
        "    x: int\n"
        "@durable.step\n"
        "def s(p): return p.x\n"
        "@durable.workflow(store=sys.argv[1])\n"
        "def wf(n): return s(P(n)) + len(durable.loop_over(s, [P(1), P(2)]))\n"
        "assert wf(1) == 3\n"
        "print(sorted(m for m in ('numpy', 'pandas') if m in sys.modules))\n"
    )
    (tmp_path / "flow.py").write_text(script)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, str(tmp_path / "flow.py"), str(tmp_path / "store")],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "[]"


def test_an_object_or_a_class_counts_the_code_of_its_methods() -> None:
    """In one process too: a method rebound (a notebook cell run again)
    changes the digest of the class and of its instances, of a dataclass
    as of any object; a library class counts by its name as before."""

    @dataclasses.dataclass
    class Model:
        k: int

        def predict(self, x: int) -> int:
            return x * self.k

    class Plain:
        def predict(self, x: int) -> int:
            return x

    def other(self: Any, x: int) -> int:
        return x + 1

    def run_id(model: Any) -> str:
        return run_id_digest(inspect.signature(run_id).bind(model))

    before = [value_digest(v) for v in (Model(2), Model, Plain(), Plain)]
    assert [value_digest(v) for v in (Model(2), Model, Plain(), Plain)] == before
    run_ids = [run_id(v) for v in (Model(2), Model, Plain(), Plain, other)]
    Model.predict = other  # type: ignore[method-assign]
    Plain.predict = other  # type: ignore[method-assign]
    after = [value_digest(v) for v in (Model(2), Model, Plain(), Plain)]
    assert all(a != b for a, b in zip(after, before, strict=True))
    # A derived run id leaves the code out: the fixed call resumes its run,
    # where the steps given the object count as changed.
    assert [run_id(v) for v in (Model(2), Model, Plain(), Plain, other)] == run_ids


class KeptOut:
    """Pickles its name only: `k`, which `predict` reads, is left out."""

    def __init__(self, k: int) -> None:
        self.k, self.name, self.lock = k, "m", threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name}


def test_what_a_pickling_hook_leaves_out_counts(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(store.url))  # the plain call's cache too
    # Digested by its pickled state alone, KeptOut(3) was KeptOut(2): the
    # cached step returned 20 where it computes 30.
    ran: list[int] = []

    @durable.step(cache=True)
    def predict(m: KeptOut, x: int) -> int:
        ran.append(m.k)
        return m.k * x

    @durable.workflow(store=store)
    def flow(k: int) -> int:
        return predict(KeptOut(k), 10)

    assert (flow(2), flow.with_options(restart=True)(3), predict(KeptOut(3), 10)) == (20, 30, 30)
    assert ran == [2, 3]  # the lock it leaves out counts by its type: the last call a hit
    assert value_digest(KeptOut(1)) == value_digest(KeptOut(1))


class Registered:
    def __init__(self, k: int) -> None:
        self.k = k


copyreg.pickle(Registered, lambda r: (Registered, (0,)))  # pickled without its k


def test_what_a_reducer_registered_with_copyreg_leaves_out_counts() -> None:
    assert value_digest(Registered(1)) != value_digest(Registered(2))
    assert value_digest(Registered(1)) == value_digest(Registered(1))


class Weights(dict[str, int]):
    """A dict whose `__getstate__` keeps `scale`, which `total` reads, out."""

    def __init__(self, items: dict[str, int], scale: int) -> None:
        super().__init__(items)
        self.scale = scale

    def __getstate__(self) -> dict[str, Any]:
        return {}


def test_what_a_mappings_pickling_hook_leaves_out_counts(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(store.url))
    # Digested by its items and what its `__getstate__` returns, Weights(.., 3)
    # was Weights(.., 2): the cached step returned 6 where it computes 9.
    ran: list[int] = []

    @durable.step(cache=True)
    def total(w: Weights) -> int:
        ran.append(w.scale)
        return sum(w.values()) * w.scale

    assert (total(Weights({"a": 1, "b": 2}, 2)), total(Weights({"a": 1, "b": 2}, 3))) == (6, 9)
    assert total(Weights({"a": 1, "b": 2}, 3)) == 9 and ran == [2, 3]


def test_a_subclass_of_a_set_counts_its_items_in_any_order_and_its_state() -> None:
    # 1 and 9 share a slot of a small set: the one added first iterates first.
    ids = [IdSet([1, 9]), IdSet([9, 1]), frozenset([1, 9]), IdSet([1, 8])]
    assert [value_digest(t) == value_digest(ids[0]) for t in ids] == [True, True, False, False]

    def flow(tags: Any) -> None:
        pass

    run_ids = {run_id_digest(inspect.signature(flow).bind(t)) for t in ids[:2]}
    assert len(run_ids) == 1  # a derived run id too
    tagged = Tags({"a", "b"})
    tagged.owner = "me"  # type: ignore[attr-defined]
    assert value_digest(tagged) != value_digest(Tags({"a", "b"}))


class Mode:
    """One per process, pickled by name (as an enum member is)."""

    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __reduce__(self) -> str:
        return "CURRENT_MODE"

    def apply(self, x: int) -> int:
        return x * self.factor


CURRENT_MODE = Mode(2)


def test_an_object_pickled_by_name_counts_its_state_and_its_classs_code(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(store.url))
    # Digested by its module and name alone, Mode(5) was Mode(2), and an
    # edited method was the old one: the cached step returned 6 each time.
    ran: list[int] = []

    @durable.step(cache=True)
    def scaled(mode: Mode, x: int) -> int:
        ran.append(mode.factor)
        return mode.apply(x)

    assert (scaled(CURRENT_MODE, 3), scaled(Mode(5), 3), scaled(Mode(5), 3)) == (6, 15, 15)
    monkeypatch.setattr(Mode, "apply", lambda self, x: x * self.factor + 100)
    assert scaled(Mode(5), 3) == 115 and ran == [2, 5, 5]


def make_model(weights: list[int]) -> type:
    class Model:
        def predict(self, x: int) -> int:
            return sum(w * x for w in weights)

    return Model


def test_what_the_methods_of_a_class_made_by_a_factory_captured_counts(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(store.url))
    # One name and one source, the weights by type only: make_model([3, 4])'s
    # model was make_model([1, 2])'s, and the cached step returned 9 for 21.
    ran: list[int] = []

    @durable.step(cache=True)
    def predict(model: Any, x: int) -> int:
        ran.append(x)
        return int(model.predict(x))

    first, second = make_model([1, 2]), make_model([3, 4])
    assert (predict(first(), 3), predict(second(), 3), predict(make_model([3, 4])(), 3)) == (9, 21, 21)
    assert ran == [3, 3] and value_digest(first) != value_digest(second)
    # A lock it captured counts by its type, as one a pickling hook leaves out:
    # the class is still digested, the same for the same values.
    lock = threading.Lock()
    guarded = [value_digest(make_guarded(lock, k)()) for k in (2, 2, 3)]
    assert guarded[0] == guarded[1] != guarded[2]


def make_guarded(lock: Any, k: int) -> type:
    class Repo:
        def get(self, x: int) -> int:
            with lock:
                return x * k

    return Repo


@dataclasses.dataclass
class Batch(list[int]):
    name: str = "b"


@dataclasses.dataclass
class Options(dict[str, int]):
    name: str = "s"


@dataclasses.dataclass
class Label(str):
    note: str = ""


def test_a_dataclass_that_is_also_a_builtin_value_counts_that_value() -> None:
    # Digested by its fields alone, Batch holding [3, 4] was Batch holding [1, 2].
    first, second = Batch(), Batch()
    first.extend([1, 2])
    second.extend([3, 4])
    third = Batch()
    third.extend([1, 2])
    assert value_digest(first) != value_digest(second) and value_digest(first) == value_digest(third)
    one, two = Options(), Options()
    one["k"], two["k"] = 1, 2
    assert value_digest(one) != value_digest(two)
    labels = [str.__new__(Label, text) for text in ("a", "b", "a")]
    for label in labels:
        label.__init__("note")  # type: ignore[misc]
    assert [value_digest(label) == value_digest(labels[0]) for label in labels] == [True, False, True]
