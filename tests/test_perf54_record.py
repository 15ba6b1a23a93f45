"""perf54: a recorded call whose record keeps its argument bytes (numbers
passed positionally, `callbytes.kept_bytes`) is not asked whether its body
changed an argument in place: numbers cannot change, the first answer of
`identity.changed_in_place` (`immutable_call`). What that must not hide: a
call with anything else (a list, a text default, a keyword) is asked, and a
list changed in place is still recorded as such and warned about."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core import livecall
from durable._core.replay import load_context


@durable.step(name="scaled")
def scaled(i: int, scale: float | None = 2.5) -> float:
    return i * (scale or 1.0)


@durable.step(name="grow")
def grow(rows: list[int], n: int) -> int:
    rows.append(n)  # changed in place: a replay would not redo it
    return len(rows)


def test_only_calls_without_kept_bytes_are_asked_about_changes_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    real = livecall.changed_in_place

    def counted(signature: Any, args: Any, kwargs: Any, name: str, *rest: Any) -> bool:
        asked.append(name)
        return real(signature, args, kwargs, name, *rest)

    monkeypatch.setattr(livecall, "changed_in_place", counted)
    store = durable.open_store(str(tmp_path), durability="none")

    @durable.workflow(name="inplace54", run_id="r", store=store)
    def flow() -> list[Any]:
        rows: list[int] = []
        out: list[Any] = [scaled(1), scaled(2, 0.5), scaled(3, None)]  # kept: not asked
        out.append(scaled(4, scale=1.0))  # a keyword: no kept bytes, asked
        out.append(grow(rows, 7))  # a list: asked, and changed
        return out

    with pytest.warns(UserWarning, match="grow changed an object it was given"):
        assert flow() == [2.5, 1.0, 3.0, 4.0, 1]
    assert asked == ["scaled", "grow"]
    ctx = load_context(store, "inplace54", "r", "strict")
    recs = [ctx.records.get(p) for p in range(5)]
    assert [r is not None and r.args_bytes is not None for r in recs] == [True] * 3 + [False] * 2
    assert [r is not None and r.extra.get("in_place") is True for r in recs] == [False] * 4 + [True]
