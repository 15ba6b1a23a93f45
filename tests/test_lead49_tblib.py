"""Dask's `distributed` registers tblib's reducer for every exception class
with `copyreg` when it is imported (`tblib.pickling_support.install()`),
which pickles an exception's traceback. Durable's digest and its records
took that reducer: a step given an error another step returned was refused
on every resume in a process that had imported `distributed` (the live
error's digest and its record's differed: the frames counted twice)."""

from __future__ import annotations

import copyreg
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable


@pytest.fixture
def tblib_installed() -> Iterator[None]:
    support = pytest.importorskip("tblib.pickling_support")
    saved = dict(copyreg.dispatch_table)  # pickle holds this dict itself: restored in place
    support.install()
    try:
        yield
    finally:
        copyreg.dispatch_table.clear()
        copyreg.dispatch_table.update(saved)


def test_an_error_given_to_a_step_replays_once_dask_registered_its_reducers(tmp_path: Path, tblib_installed: None) -> None:
    ran: list[str] = []
    boom = [True]

    @durable.step
    def fail() -> Exception:
        try:
            raise KeyError("k")
        except KeyError as e:
            try:
                raise ValueError("v") from e
            except ValueError as v:
                return v

    @durable.step
    def report(e: Exception) -> str:
        ran.append(str(e))
        return f"{e} <- {e.__cause__!r}"

    @durable.step
    def last(text: str) -> str:
        if boom:
            raise RuntimeError("the first attempt stops here")
        return text

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow() -> str:
        return last(report(fail()))

    with pytest.raises(RuntimeError):
        flow()
    boom.clear()
    assert flow() == "v <- KeyError('k')" and ran == ["v"]
