"""What a removal (`durable gc`, `rm`) or a fork killed (`kill -9`) half way
leaves, objects of a run without its manifest, was removed by the next
`durable gc` without a word ("removed 0 runs", the objects gone; `--dry-run`
did not look at them), and `durable show RUN` said only that there is no
such run. The next command now says what it found: `show` names the
objects and the `durable rm` that removes them, `gc --dry-run` that it
would remove them, `gc` that it did."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import durable
from durable._cli.main import main
from tests import test_rm_crash as t
from tests.clikit import killed_at

pytestmark = pytest.mark.slow


def test_the_next_command_says_what_a_killed_gc_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "s"
    store = durable.open_store(root, blob_threshold=1024)
    assert t.call(store, "old") == t.expected() and t.call(store, "new") == t.expected()
    gc = ["gc", "--keep-last", "1", "--store", str(root)]
    assert killed_at(t.KILLED_AT, 2, *gc)  # the manifest of "old" gone, its log and blobs not
    left = root / "removed" / "old"
    assert (left / "records.log").exists() and not (left / "run").exists()
    capsys.readouterr()
    assert main(["show", "old", "--store", str(root)]) == 2
    said = capsys.readouterr().err
    assert "no run 'old'" in said and "without a manifest" in said and f"--store {root} rm old` removes them" in said
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main([*gc, "--dry-run"]) == 0
        assert (left / "records.log").exists()  # a dry run removes nothing
        assert main(gc) == 0
    said = [str(w.message) for w in caught] + capsys.readouterr().err.splitlines()
    assert any("gc would also remove what a removal or a fork cut short left of 1 run (removed/old)" in s for s in said), said
    assert any("gc also removed what a removal or a fork cut short left of 1 run (removed/old)" in s for s in said), said
    assert not left.exists()
    t.executed.clear()
    assert t.call(durable.open_store(root, blob_threshold=1024), "old") == t.expected()
    assert t.executed == [0, 1, 2]  # gone: run afresh, each step once
