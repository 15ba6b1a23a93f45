"""Replay returns a value equal to, and of the same type as, the original."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import durable
import durable.testing
from durable._storage import codec
from durable._storage.records import Attempt, StepRecord


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
    ]  # fmt: skip


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
    ]:
        assert codec.encode_value(v)[0] == codec.PICKLE, v
