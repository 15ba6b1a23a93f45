"""Subclasses of numpy's array and pandas' frame and series that hold an
attribute of their own (a `unit`): pickled by numpy's hook, digested as a
frame, the attribute was left out and a cached step computing from it was
served another unit's output."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

import durable
from durable._core.identity import value_digest

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")


class Quantity(np.ndarray):  # type: ignore[misc]
    def __new__(cls, values: Any, unit: str) -> Quantity:
        obj = np.asarray(values, dtype=float).view(cls)
        obj.unit = unit
        return obj  # type: ignore[no-any-return]

    def __array_finalize__(self, obj: Any) -> None:
        self.unit = getattr(obj, "unit", None)


class Measured(pd.DataFrame):  # type: ignore[misc]
    _metadata: ClassVar[list[str]] = ["unit"]  # pandas' way: results carry it

    @property
    def _constructor(self) -> type[Measured]:
        return Measured


def _measured(unit: str) -> Any:
    frame = Measured({"v": [1, 2]})
    frame.unit = unit
    return frame


def test_an_attribute_a_subclass_of_a_library_class_holds_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    ran: list[str] = []

    @durable.step(cache=True)
    def metres(q: Any) -> float:
        ran.append(q.unit)
        return float(q.sum().sum()) * (1000.0 if q.unit == "km" else 1.0)

    # Each was served the metres' 3.0 where it computes 3000.0.
    assert (metres(Quantity([1, 2], "m")), metres(Quantity([1, 2], "km"))) == (3.0, 3000.0)
    assert (metres(_measured("m")), metres(_measured("km"))) == (3.0, 3000.0)
    assert metres(_measured("km")) == 3000.0 and ran == ["m", "km", "m", "km"]  # a hit
    assert value_digest(Quantity([1], "m")) == value_digest(Quantity([1], "m"))


class Labelled(pd.Series):  # type: ignore[misc]
    _metadata: ClassVar[list[str]] = ["unit"]


def test_a_series_subclasss_own_attribute_counts_and_pandas_own_do_not_change() -> None:
    km, m = Labelled([1, 2]), Labelled([1, 2])
    km.unit, m.unit = "km", "m"
    assert value_digest(km) != value_digest(m)
    # pandas' own classes hold only private internals: their digests stay.
    frame = pd.DataFrame({"v": [1]})
    assert value_digest(frame["v"]) == value_digest(pd.Series([1], name="v"))
