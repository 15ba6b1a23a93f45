"""The 52nd new-user walk, the library's side: what a user types on a
first try, from the README and docs/."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable


def test_an_option_passed_as_an_argument_names_with_options(tmp_path: Path) -> None:
    """Before: `w(1, run_id="r1")` said only "w(): got an unexpected keyword
    argument 'run_id'", and `w.resume(r, restart=True)` that w has no
    parameter restart and to answer a wait_for() with it."""
    executed: list[int] = []

    @durable.workflow(store=str(tmp_path))
    def w(x: int) -> int:
        executed.append(x)
        return x

    with pytest.raises(TypeError) as e:
        w(1, run_id="r1")
    assert str(e.value).endswith("w(): got an unexpected keyword argument 'run_id'; run_id is an option, "
                                 "not an argument: w.with_options(run_id=...)(...)")
    with pytest.raises(TypeError) as e:
        w.run(1, store=str(tmp_path), wait=3)
    assert "store and wait are options, not arguments: w.with_options(store=..., wait=...)(...)" in str(e.value)
    with pytest.raises(durable.ConfigurationError) as c:
        w.resume("r1", restart=True)
    assert "restart is an option, not an argument: w.with_options(restart=...).resume(...)" in str(c.value)
    assert executed == []
    assert w.with_options(run_id="r1")(1) == 1 and executed == [1]
