"""The 43rd new-user walk, in Python: what a cancelled run's error tells."""

from __future__ import annotations

import pytest

import durable


def test_a_cancelled_run_s_error_names_no_elided_command(tmp_path: object) -> None:
    """Before: `Start it afresh with restart=True (durable run ...
    --restart) if need be`: `durable run ...` is no command to paste."""
    ran: list[int] = []

    @durable.step
    def one(n: int) -> int:
        ran.append(n)
        return n

    @durable.workflow(store=str(tmp_path))
    def flow(n: int) -> int:
        x = one(n)
        durable.suspend("held")
        return x

    with pytest.raises(durable.Suspended):
        flow.with_options(run_id="c1")(5)
    assert flow.cancel("c1").status == "cancelled"
    with pytest.raises(durable.Cancelled) as e:
        flow.resume("c1")
    assert "..." not in str(e.value), e.value
    assert str(e.value).endswith(
        "Start it afresh if need be: .with_options(restart=True) on the workflow, or "
        "--restart on the `durable run` line of the run (`durable show` of the run prints it)."
    ), e.value
    assert ran == [5]
