"""A `loop_over` in the workflow body records the files its items register
and checks them before its record is replayed, as a step's (review64's C14):
only the item that made a file now missing or changed runs again."""

from __future__ import annotations

import concurrent.futures as cf
from collections import Counter
from pathlib import Path

import pytest

import durable


@pytest.mark.parametrize("checkpoint", [False, True])
def test_a_block_reruns_the_item_whose_file_is_gone(tmp_path: Path, checkpoint: bool) -> None:
    made: Counter[str] = Counter()
    read: list[str] = []
    out = tmp_path / "out"
    out.mkdir()
    fail = {"last": True}

    def make(name: str) -> str:
        made[name] += 1
        path = out / f"{name}.txt"
        path.write_text(name * 3)
        return str(durable.artifact(path))

    @durable.step(name="last")
    def last(paths: list[str]) -> str:
        text = "".join(Path(p).read_text() for p in paths)
        read.append(text)
        if fail["last"]:
            raise RuntimeError("not yet")
        return text

    @durable.workflow(name="files", store=str(tmp_path / "store"), run_id="f1")
    def files() -> str:
        if not checkpoint:
            return last(durable.loop_over(make, ["a", "b", "c"]))
        with cf.ThreadPoolExecutor(2) as pool:  # an item on a thread registers as well
            return last(durable.loop_over(make, ["a", "b", "c"], executor=pool, checkpoint_items=True))

    try:
        files()
    except RuntimeError:
        pass
    assert made == {"a": 1, "b": 1, "c": 1}
    (out / "b.txt").unlink()
    fail["last"] = False
    assert files() == "aaabbbccc"
    assert made == {"a": 1, "b": 2, "c": 1}  # the item that made it, not the others
    (out / "c.txt").write_text("zzz")  # changed by someone else: the completed run is stale
    assert files() == "aaabbbccc"
    assert made == {"a": 1, "b": 2, "c": 2}
    assert files() == "aaabbbccc"  # as the run left them: nothing runs
    assert made == {"a": 1, "b": 2, "c": 2} and len(read) == 3


def test_a_kept_item_whose_file_is_gone_runs_again(tmp_path: Path) -> None:
    made: Counter[str] = Counter()
    fail = {"c": True}

    def make(name: str) -> str:
        made[name] += 1
        if name == "c" and fail["c"]:
            raise RuntimeError("c not yet")
        path = tmp_path / f"{name}.txt"
        path.write_text(name)
        return str(durable.artifact(path, verify="mtime"))

    @durable.workflow(name="kept", store=str(tmp_path / "store"), run_id="k1")
    def kept() -> list[str]:
        return durable.loop_over(make, ["a", "b", "c"], checkpoint_items=True)

    with pytest.raises(RuntimeError, match="c not yet"):
        kept()
    (tmp_path / "a.txt").unlink()
    fail["c"] = False
    assert len(kept()) == 3
    assert made == {"a": 2, "b": 1, "c": 2}
