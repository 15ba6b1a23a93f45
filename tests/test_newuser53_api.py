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
