"""A file a later step writes into a folder an earlier step registered is the
run's own write, not a change of that folder (review64's C21): neither a
resume nor a re-call of the completed run executes the earlier step again;
a change by someone else still does."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import durable


def test_a_file_a_later_step_adds_to_a_registered_folder_is_no_change(tmp_path: Path) -> None:
    ran: Counter[str] = Counter()
    out = tmp_path / "out"
    fail = {"last": True}

    @durable.step(name="make_dir")
    def make_dir() -> str:
        ran["make_dir"] += 1
        out.mkdir(exist_ok=True)
        (out / "base.txt").write_text("base")
        return str(durable.artifact(out))

    @durable.step(name="add")
    def add(folder: str) -> str:
        ran["add"] += 1
        path = Path(folder) / "x.txt"
        path.write_text("x")
        return str(durable.artifact(path))

    @durable.step(name="last")
    def last(path: str) -> str:
        ran["last"] += 1
        if fail["last"]:
            raise RuntimeError("not yet")
        return Path(path).read_text()

    @durable.workflow(name="folders", store=str(tmp_path / "store"), run_id="d1")
    def folders() -> str:
        return last(add(make_dir()))

    with pytest.raises(RuntimeError, match="not yet"):
        folders()
    fail["last"] = False
    assert folders() == "x"  # a resume: the folder holds what `add` wrote there
    assert ran == {"make_dir": 1, "add": 1, "last": 2}
    assert folders() == "x"  # a re-call of the completed run: nothing runs
    assert ran == {"make_dir": 1, "add": 1, "last": 2}
    (out / "y.txt").write_text("someone else's")
    assert folders() == "x"
    assert ran == {"make_dir": 2, "add": 2, "last": 3}
