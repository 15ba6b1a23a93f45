"""Replay returns a value equal to, and of the same type as, the original."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import inspect
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import durable
import durable.testing
from durable._core.identity import call_digest
from durable._storage import codec
from durable._storage.records import Attempt, StepRecord

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: float


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary()
    | st.binary().map(bytearray)
    | st.datetimes()
    | st.dates()
    | st.decimals(allow_nan=False)
    | st.uuids()
    | st.builds(Point, st.integers(), st.floats(allow_nan=False))
)
hashable = st.none() | st.booleans() | st.integers() | st.text() | st.binary()
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(hashable, inner, max_size=4)
        | st.frozensets(hashable, max_size=4)
        | st.sets(hashable, max_size=4)
    ),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    """Equal and of the same type, all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(
            same(k1, k2) and same(a[k1], b[k2]) for k1, k2 in zip(a, b, strict=True)
        )
    return bool(a == b)


@settings(max_examples=300, deadline=None)
@given(values)
def test_round_trip_keeps_value_and_type(value: Any) -> None:
    tag, data = codec.encode_value(value)
    assert same(codec.decode_value(tag, data), value)


@settings(max_examples=60, deadline=None)
@given(values)
def test_round_trip_through_a_real_run(value: Any) -> None:
    store = durable.testing.memory_store()

    @durable.step(name="give")
    def give() -> Any:
        return value

    @durable.workflow(name="rt", store=store, run_id="r")
    def rt() -> list[Any]:
        return [give()]

    first = rt()
    again = rt.with_options(run_id="r").run()
    assert same(first[0], value) and same(again.value[0], value)  # type: ignore[index]


class MyInt(int):
    pass


def test_a_step_record_packs_its_fields_in_their_order() -> None:
    rec = StepRecord(
        (3, 1, 2), "step", "n", "fp", "dg", "m", b"v", "blob", False, 1.5, 2.5,
        [Attempt("E", "m", "tb", 3.5)], [{"path": "p"}], {"x": 1},
    )  # fmt: skip
    assert StepRecord.from_bytes(rec.to_bytes()) == rec
    assert codec.unpack(rec.to_bytes())[1:] == [
        [3, 1, 2], "step", "n", "fp", "dg", "m", b"v", "blob", False, 1.5, 2.5,
        [{"type": "E", "message": "m", "traceback": "tb", "at": 3.5}], [{"path": "p"}], {"x": 1},
        None,
    ]  # fmt: skip
    # A call's canonical bytes are kept in place of their digest (perf53), which is theirs.
    rec.args_bytes = b"A1:s1:ii5;"  # a call f(5) of `def f(i)`
    rec.args_digest = call_digest(inspect.signature(lambda i: None), (5,), {}, "f")
    row = codec.unpack(rec.to_bytes())
    assert row[0] == 2 and row[5] is None and row[15] == b"A1:s1:ii5;"
    assert StepRecord.from_bytes(rec.to_bytes()) == rec


def test_a_step_record_made_without_a_class_call_is_the_one_the_class_makes() -> None:
    # `made` sets every field itself: one it forgot, or a default it spelled
    # otherwise, would differ here (or raise AttributeError: slots).
    tries, found = [Attempt("E", "m", "tb", 3.5)], [{"path": "p"}]
    made = StepRecord.made(4, "n", "fp", "dg", 1.5, tries, found)
    rec = StepRecord(4, "step", "n", "fp", "dg", started=1.5, attempts=tries, artifacts=found)
    assert made == rec and made.to_bytes() == rec.to_bytes()
    assert made.attempts is tries and made.artifacts is found
    assert made.extra == {} and made.extra is not StepRecord.made(4, "n", "f", "d", 0, [], []).extra


def test_plain_data_uses_msgpack_and_the_rest_pickle() -> None:
    assert codec.encode_value({"a": [1, 2.5, None, "x", b"y"]})[0] == codec.MSGPACK
    # Scalar dict keys come back as they went in, so they are plain too.
    for keyed in ({1: "int key", 2.5: "float", None: "none", b"k": "bytes"}, {False: "bool"}):
        tag, data = codec.encode_value(keyed)
        back = codec.decode_value(tag, data)
        assert tag == codec.MSGPACK and back == keyed
        assert [type(k) for k in back] == [type(k) for k in keyed]
    for v in [
        (1, 2),
        {(1, 2): "tuple key"},
        [2**64],
        {"a": [-(2**63) - 1]},
        ["\udcff"],
        [True, 1.0, MyInt(3)],
        2**70,
        {1, 2},
        Point(1, 2.0),
        datetime.date(2020, 1, 1),
        decimal.Decimal("1.5"),
        uuid.UUID(int=5),
        [(1,)],
        bytearray(b"x"),
        {"a": [b"bytes", bytearray(b"and a bytearray")]},
    ]:
        assert codec.encode_value(v)[0] == codec.PICKLE, v


def test_a_bytearray_comes_back_a_bytearray_or_is_refused() -> None:
    """msgpack packs a bytearray (and a memoryview) as bytes: replay would
    give back immutable bytes. Pickled, it keeps its type; without pickle,
    the step refuses to record it (and a memoryview, which pickle would
    turn into bytes too, is refused always)."""
    value = {"k": [1, bytearray(b"\xc4 mutable")]}
    back = codec.decode_value(*codec.encode_value(value))
    assert back == value and type(back["k"][1]) is bytearray
    for refused in (bytearray(b"x"), [memoryview(b"x")]):
        with pytest.raises(TypeError, match="allow_pickle=False"):
            codec.encode_value(refused, allow_pickle=False)
    with pytest.raises(TypeError, match="memoryview"):
        codec.encode_value(memoryview(b"x"))
    # Plain data whose bytes happen to hold a bin marker stays msgpack.
    assert codec.encode_value(["\u0100", 0xC4, 1.5e-300])[0] == codec.MSGPACK


def test_a_long_list_of_numbers_is_told_plain_without_walking_it() -> None:
    """Item 2 of issue 13: a step returning 100,000 ints cost 5.6x msgpack's
    own time, most of it a Python walk of the list for a byte buffer (its
    packed bytes hold bin markers: 196 packs as cc c4). Told in C, the
    encoding holds nothing but the packed bytes; the walk held a work list
    of 100,000 references (800 KB) besides."""
    import tracemalloc

    value = list(range(100_000))
    codec.pack_plain(value)  # the packer's buffer grows to its size once
    tracemalloc.start()
    try:
        packed = codec.pack_plain(value)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert packed is not None and b"\xcc\xc4" in packed
    assert peak < len(packed) + 100_000, peak


@pytest.mark.parametrize(
    "hidden", [bytearray(b"x"), memoryview(b"x"), [bytearray(b"x")], {"k": bytearray()}]
)
@pytest.mark.parametrize("kind", ["ints", "floats", "strings", "mixed"])
def test_a_byte_buffer_in_a_long_list_is_found(hidden: Any, kind: str) -> None:
    """A long list (or a dict's keys or values) is told plain in one pass in
    C (`sum`, `str.join`, the set of its types); a byte buffer anywhere in
    it, or in a list or dict in it, still sends the value to pickle."""
    items: list[Any] = {
        "ints": list(range(190, 230)),  # 196-198 pack as cc c4..c6: the bin markers
        "floats": [i / 7 for i in range(40)],
        "strings": [chr(0x100 + i) for i in range(40)],  # c4 80, c4 81, ...
        "mixed": [1, "a", 2.5, None, True, b"b"] * 8,
    }[kind]
    assert codec.pack_plain(items) is not None
    for at in (0, 17, len(items)):
        value = [*items[:at], hidden, *items[at:]]
        assert codec.pack_plain(value) is None, (kind, at)
        assert codec.pack_plain({"rows": [value]}) is None
        assert codec.pack_plain({f"k{i}": v for i, v in enumerate(value)}) is None
        if type(hidden) is memoryview:  # read-only: it can be a key too
            assert codec.pack_plain({**{i: 1 for i in range(40)}, hidden: 1}) is None


MAIN_CLASSES = """
import dataclasses, enum, os, sys
import durable


class Colour(enum.Enum):
    RED = 1


@dataclasses.dataclass
class Point:
    x: int


@durable.step
def pick():
    with open(sys.argv[2], "a") as log:
        log.write("pick\\n")
    return [Colour.RED, Point(1)]


@durable.workflow(store=sys.argv[1], run_id="r")
def flow():
    got = pick()
    if os.environ.get("CRASH"):
        os._exit(3)
    return got[0] is Colour.RED, got[1] == Point(1), type(got[1]) is Point


print(flow())
"""


def test_a_class_of_the_script_is_replayed_as_the_live_class(tmp_path: Path) -> None:
    """cloudpickle carries a class defined in `__main__` by value: a resumed
    script got instances of a copy (an enum member that `is` no member, a
    dataclass equal to no instance of the live class)."""
    script, log = tmp_path / "flow.py", tmp_path / "log"
    script.write_text(MAIN_CLASSES)
    cmd = [sys.executable, str(script), str(tmp_path / "store"), str(log)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    crashed = subprocess.run(cmd, env={**env, "CRASH": "1"}, capture_output=True, timeout=120)
    assert crashed.returncode == 3, crashed.stderr
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "(True, True, True)"
    assert log.read_text().split() == ["pick"]  # the second process replayed it


class Declined(Exception):
    """An exception whose `__init__` does not take its own `args`."""

    def __init__(self, code: int, why: str) -> None:
        super().__init__(f"declined {code}: {why}")
        self.code = code


class Quiet(Exception):
    def __init__(self, *, code: int) -> None:  # never calls super().__init__
        self.code = code

    def __str__(self) -> str:
        return f"code {self.code}"


class DiskFull(OSError):
    def __init__(self, path: str) -> None:
        super().__init__(28, f"no space left for {path}")


def test_exceptions_with_their_own_init_round_trip() -> None:
    """pickle rebuilds an exception as `cls(*args)`, which these refuse: a
    value holding one (a `gather(..., return_exceptions=True)` result) was
    recorded, and every replay of it raised a TypeError. They come back with
    their type, args, attributes and message."""
    for exc in [Declined(51, "funds"), Quiet(code=7), DiskFull("/tmp/x"), KeyError("k")]:
        for tag, data in [
            codec.encode_value([exc, 1]),
            codec.encode_value([exc, 1], out_of_band=True),
        ]:
            back, one = codec.decode_value(tag, data)
            assert one == 1 and type(back) is type(exc)
            assert (back.args, str(back), back.__dict__) == (exc.args, str(exc), exc.__dict__)
    back = codec.decode_value(*codec.encode_value(DiskFull("/d")))
    assert (back.errno, back.strerror) == (28, "no space left for /d")


def test_a_result_holding_such_an_exception_replays(store: durable.Store) -> None:
    import asyncio

    @durable.step
    async def boom() -> None:
        raise Declined(1, "x")

    @durable.workflow(store=store, run_id="g")
    async def wf() -> list[Any]:
        return list(await asyncio.gather(boom(), return_exceptions=True))

    for _ in range(2):  # the run, then its recorded result
        (got,) = asyncio.run(wf())
        assert type(got) is Declined and (got.code, str(got)) == (1, "declined 1: x")
