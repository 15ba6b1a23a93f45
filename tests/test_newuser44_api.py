"""The 44th new-user walk, in Python: an option mistyped is told the one meant."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable


def _flow(tmp_path: Path) -> Any:
    @durable.workflow(store=str(tmp_path))
    def flow(n: int) -> int:
        return n

    return flow


@pytest.mark.parametrize(
    ("call", "typed", "meant"),
    [
        (lambda _: durable.step(retry=3), "retry", "retry_on or retries"),
        (lambda _: durable.workflow(stor="x"), "stor", "store"),
        (lambda _: durable.configure(stor="x"), "stor", "store"),
        (lambda p: _flow(p).with_options(retires=2), "retires", "-"),
        (lambda p: _flow(p).with_options(sotre="x"), "sotre", "store"),
    ],
)
def test_a_mistyped_option_is_told_the_one_meant(
    tmp_path: Path, call: Callable[[Path], object], typed: str, meant: str
) -> None:
    """Before: `TypeError: step() got an unexpected keyword argument 'retry'`
    and nothing more (Python 3.10-3.12 suggest no keyword)."""
    with pytest.raises(TypeError) as e:
        call(tmp_path)
    text = str(e.value)
    assert f"unexpected keyword argument {typed!r}" in text, text
    if meant == "-":  # with_options has no retries: the call that has it is named
        assert text.endswith("; retries is an option of step(), not of with_options()"), text
    else:
        assert text.endswith(f"; did you mean {meant}?"), text


def test_a_mistyped_option_changes_nothing(tmp_path: Path) -> None:
    """`configure(stor=..., on_change='rerun')` sets nothing: the call fails whole."""
    with pytest.raises(TypeError, match="did you mean store"):
        durable.configure(stor=str(tmp_path), on_change="rerun")  # type: ignore[call-arg]
    from durable._settings import _configured

    assert "on_change" not in _configured


def test_a_mistyped_option_of_loop_over_is_told_its_options() -> None:
    """Before: `loop_over() got an unexpected keyword argument 'max_worker'`."""
    with pytest.raises(TypeError) as e:
        durable.loop_over(str, [1], max_worker=2)  # type: ignore[call-overload]
    assert str(e.value).endswith(
        "; its options: name, executor, checkpoint_items, max_concurrency, progress"
    ), e.value
    assert durable.loop_over(fn=str, items=[1]) == ["1"]  # its positional ones by name too


def test_a_mistyped_keyword_of_resume_or_fork_is_told_the_one_meant(tmp_path: Path) -> None:
    """Before: `resume('r', input={...})` and `fork('r', at=0, new_runid=...)`
    were told that the workflow has no parameter input (new_runid) and to
    give it as an input's answer: their own keyword was meant."""
    ran: list[int] = []

    @durable.workflow(store=str(tmp_path))
    def flow(count: int = 1) -> int:
        ran.append(count)
        durable.suspend("held")
        return count

    with pytest.raises(durable.Suspended):
        flow.with_options(run_id="r")()
    for call, meant in (
        (lambda: flow.resume("r", input={"a": 1}), "inputs"),
        (lambda: flow.fork("r", at=0, new_runid="x"), "new_run_id"),
        (lambda: flow.resume("r", conut=2), "count"),
    ):
        with pytest.raises(durable.ConfigurationError) as e:
            call()
        assert f"; did you mean {meant}=? Nothing was executed." in str(e.value), e.value
    assert ran == [1]
