"""The 53rd new-user walk, the library's side: store options that are no
number of seconds."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import durable


@pytest.mark.parametrize("option", ["lease_ttl", "sync_interval"])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_store_option_of_seconds_is_a_finite_number(tmp_path: Path, option: str, value: float) -> None:
    """Before: open_store(lease_ttl=nan) (or inf) was taken: another
    process that found the run held failed with "ValueError: Invalid value
    NaN" (an OverflowError for inf) from the message of its RunLockedError;
    sync_interval=nan was taken too, a time no timer of `"batch"` compares."""
    with pytest.raises(durable.ConfigurationError, match=f"{option} must be a positive, finite number of "
                       f"seconds, not {value!r}"):  # fmt: skip
        durable.open_store(str(tmp_path), durability="batch", **{option: value})
    assert list(tmp_path.iterdir()) == []


def test_runs_takes_the_status_filter_the_command_line_has(tmp_path: Path) -> None:
    """Before: `wf.runs(status="failed")`, as `durable runs --status
    failed` filters, was a bare TypeError ("unexpected keyword argument
    'status'"), the runs filtered by hand."""
    executed: list[int] = []

    @durable.step
    def half(x: int) -> int:
        executed.append(x)
        if x % 2:
            raise ValueError(f"odd {x}")
        return x // 2

    @durable.workflow(store=str(tmp_path))
    def job(x: int) -> int:
        return half(x)

    for x in (1, 2, 3):
        try:
            job.with_options(run_id=f"r{x}")(x)
        except ValueError:
            pass
    assert sorted(i.run_id for i in job.runs(status="failed")) == ["r1", "r3"]
    assert sorted(i.run_id for i in job.runs(status=("failed", "completed"))) == ["r1", "r2", "r3"]
    assert job.runs(status=()) == []
    with pytest.raises(durable.ConfigurationError, match=r"unknown run status 'done'.*did you mean completed"):
        job.runs(status="done")
    assert executed == [1, 2, 3]
