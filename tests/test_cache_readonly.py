"""A cache the caller can read but not write (a team mate's store under
umask 022/027, a read-only mount): a hit is served (`test_cache_store`), a
miss runs the step and returns its output, uncached, with a warning."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable._core.spec import step_spec
from durable._storage.cachestore import ENTRIES, USED, step_part
from durable.testing import FakeClock

CALLS: Counter[str] = Counter()


@durable.step(cache=True)
def fresh(x: int) -> int:
    CALLS["fresh"] += 1
    return x * 2


def _unwritable_entries(root: Path) -> None:
    """Entries of `fresh` cannot be created: a file stands where their
    folder goes (as root, whom permissions do not stop, this is how a write
    is refused; the store answers StorageError as for EACCES or EROFS)."""
    spec = step_spec(fresh)
    assert spec is not None
    folder = root / ENTRIES / step_part(spec.name)
    folder.parent.mkdir(parents=True)
    folder.write_text("no entry can be written under here")


def test_a_miss_the_store_cannot_keep_returns_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    CALLS.clear()
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path))
    _unwritable_entries(tmp_path)
    with pytest.warns(UserWarning, match=r"could not keep .* not cached") as told:
        assert fresh(3) == 6
    assert str(tmp_path) in str(told[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per store and process
        assert fresh(4) == 8
    assert CALLS["fresh"] == 2  # each ran once: nothing was served, nothing twice


def test_a_miss_in_a_run_on_an_unwritable_store_still_fails(
    tmp_path: Path,
) -> None:
    """A run's records cannot be written either: its StorageError stands."""
    CALLS.clear()
    _unwritable_entries(tmp_path)

    @durable.workflow(store=durable.open_store(str(tmp_path)), name="ro")
    def flow(x: int) -> int:
        return fresh(x)

    with pytest.raises(durable.StorageError):
        flow.with_options(run_id="r")(3)


@durable.step(cache=durable.Cache(expire=60))
def dated(x: int) -> int:
    CALLS["dated"] += 1
    return x * 3


def test_an_expired_entry_the_store_cannot_remove_runs_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    """An expired entry is removed before the step runs: a store that
    refuses the removal (a team mate's) made the call fail unrun."""
    CALLS.clear()
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path))
    assert dated(1) == 3
    (entry,) = [p for p in (tmp_path / ENTRIES).rglob("*") if p.is_file()]
    # Its use marker's place holds a folder with a file: no removal passes (as root too).
    marker = tmp_path / USED / entry.relative_to(tmp_path / ENTRIES)
    marker.unlink(missing_ok=True)
    marker.mkdir(parents=True, exist_ok=True)
    (marker / "keep").write_text("x")
    clock.now += 3600  # expired
    with pytest.warns(UserWarning, match="could not"):
        assert dated(1) == 3
    assert CALLS["dated"] == 2
