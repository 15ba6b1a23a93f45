"""The values test_identity_engine calls a step with in two runs (`CHANGES`)
and the classes they are made of. A module of their own: the lambdas of
`CHANGES`, in the test module, made the fingerprint of every step defined
there read them (0.9 s of CPU a test, against 0.2 s)."""

from __future__ import annotations

import collections
import dataclasses
import datetime
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd


@dataclasses.dataclass
class Point:
    x: int


@dataclasses.dataclass
class Point3(Point):
    pass


class Box:
    def __init__(self, content: Any) -> None:
        self.content = content


class Params(dict[str, Any]):
    """A dict with an attribute besides its items."""

    def __init__(self, scale: int, **items: Any) -> None:
        super().__init__(**items)
        self.scale = scale


class Offset(datetime.tzinfo):
    """A tzinfo whose repr says nothing of its offset."""

    def __init__(self, hours: int) -> None:
        self.hours = hours

    def utcoffset(self, dt: datetime.datetime | None) -> datetime.timedelta:
        return datetime.timedelta(hours=self.hours)

    def __getinitargs__(self) -> tuple[int]:  # how a tzinfo is pickled (and copied)
        return (self.hours,)

    def __repr__(self) -> str:
        return "Offset()"


def one_off(arr: Any) -> Any:
    out = arr.copy()
    out[4] += 1
    return out


def point_with(**extra: Any) -> Point:
    """A dataclass instance with attributes set outside its fields."""
    point = Point(1)
    vars(point).update(extra)
    return point


def frame() -> pd.DataFrame:
    return pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})


def frame_with(**attrs: Any) -> pd.DataFrame:
    out = frame()
    out.attrs.update(attrs)
    return out


def frame_changed() -> pd.DataFrame:
    out = frame()
    out.loc[1, "b"] = "Y"
    return out


# Pairs of values a step is called with in two runs: (recorded, called now).
CHANGES: dict[str, Callable[[], tuple[Any, Any]]] = {
    "numpy element": lambda: (np.arange(10), one_off(np.arange(10))),
    "numpy dtype": lambda: (np.arange(10), np.arange(10, dtype="int32")),
    "dataframe cell": lambda: (frame(), frame_changed()),
    "dataframe attrs": lambda: (frame_with(unit="m"), frame_with(unit="km")),
    "series attrs": lambda: (frame()["a"], frame_with(unit="km")["a"]),
    "dataclass field": lambda: (Point(1), Point(2)),
    "dataclass subclass": lambda: (Point(1), Point3(1)),
    "dataclass extra attribute": lambda: (point_with(extra=5), point_with(extra=6)),
    "dataclass extra attribute added": lambda: (Point(1), point_with(extra=5)),
    "object state": lambda: (Box([1, 2]), Box([1, 3])),
    "bytes/bytearray": lambda: (b"ab", bytearray(b"ab")),
    "dict key order": lambda: ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    "defaultdict factory": lambda: (collections.defaultdict(list), collections.defaultdict(set)),
    "dict subclass attribute": lambda: (Params(2, x=10), Params(3, x=10)),
    "datetime tzinfo": lambda: (
        datetime.datetime(2024, 1, 1, tzinfo=Offset(1)),
        datetime.datetime(2024, 1, 1, tzinfo=Offset(2)),
    ),
    "1/1.0": lambda: (1, 1.0),
    "1/True": lambda: (1, True),
    "-0.0/0.0": lambda: (-0.0, 0.0),
}

