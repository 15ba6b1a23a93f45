"""The 36th new-user walk, in process: `durable show`, `rm` and `fork` of
runs found in an odd place (a store that is a file, a moved item, another
workflow's run, a child run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import durable
from durable._cli.main import main

from .test_newuser36 import _advised


@pytest.mark.parametrize("where", ["file", "below a file"])
def test_a_store_that_is_a_file_is_a_configuration_error(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: exit 1 and "store afile failed: listing /: [Errno 20] the
    store's root is not a folder ... Records already written are intact.";
    a run said "taking the lease .../lease: [Errno 17] File exists". The
    store's path is the user's setting: exit 2, naming it, before anything
    is read or written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("notes\n")
    path = "afile" if where == "file" else "afile/runs"
    ran: list[int] = []

    @durable.workflow(store=path, run_id="r1")
    def job() -> int:
        ran.append(1)
        return 1

    told = (
        f"store {path} is not a folder: {tmp_path / 'afile'} is a file. Give the folder "
        "the runs are kept in (--store, store=, $DURABLE_STORE), or move the file away; "
        "nothing was read or written"
    )
    with pytest.raises(durable.ConfigurationError) as e:
        job()
    assert str(e.value) == told
    assert ran == []
    for command in (["runs"], ["show", "r1"], ["gc"]):
        assert main(["--store", path, *command]) == 2
        assert told in capsys.readouterr().err
    assert (tmp_path / "afile").read_text() == "notes\n"


def test_show_counts_a_moved_kept_item_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: items a, b, c kept by a failed block, then resumed with the
    items in another order (their records moved to the new indexes, the old
    copies left until written over): `durable show` said "4 items
    checkpointed" of a block with four items, one of which never finished."""
    import os

    ran: list[str] = []

    @durable.step
    def work(x: str) -> str:
        ran.append(x)
        if x == "bad":
            raise ValueError(x)
        return x * 2

    @durable.workflow(store=str(tmp_path), run_id="r", name="moves")
    def flow() -> list[str]:
        return durable.loop_over(work, os.environ["ITEMS"].split(","), checkpoint_items=True)

    for order in ("a,b,c,bad", "bad,c,a,b"):
        monkeypatch.setenv("ITEMS", order)
        with pytest.raises(ValueError, match="bad"):
            flow()
    assert sorted(ran) == ["a", "b", "bad", "bad", "c"]
    capsys.readouterr()
    assert main(["--store", str(tmp_path), "show", "r"]) == 0
    row = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("0 "))
    assert "3 items checkpointed; ValueError: bad" in row, row


def test_a_run_looked_for_under_the_wrong_workflow_names_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable show e2 --workflow edit.pipe` of a run of edit2.pipe
    said "no run 'e2' of workflow 'edit.pipe' ... Check the run id (`durable
    runs edit.pipe` lists them)", a list without it; a resume by that name
    already named the workflow that has it."""
    for name in ("edit.pipe", "edit2.pipe"):

        @durable.workflow(store=str(tmp_path), run_id=f"r-{name}", name=name)
        def flow() -> int:
            return 1

        assert flow() == 1
    store = ["--store", str(tmp_path)]
    for command in (["show", "r-edit2.pipe"], ["rm", "r-edit2.pipe"], ["fork", "r-edit2.pipe", "--at", "0"]):
        assert main([*store, *command, "--workflow", "edit.pipe"]) == 2
        err = capsys.readouterr().err
        assert "A run 'r-edit2.pipe' exists under another workflow, 'edit2.pipe'" in err, err
    assert main([*store, "runs", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2


NESTED = """
import durable


@durable.step
def double(x: int) -> int:
    return 2 * x


@durable.workflow
def inner(x: int) -> int:
    if x > 100:
        durable.suspend("too big")
    return double(x)


@durable.workflow
def middle(x: int) -> int:
    return inner(x)


@durable.workflow
def outer(x: int) -> int:
    return middle(x) + 1
"""


def test_show_of_a_child_run_says_to_continue_its_top_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable show n2.0.0` (a child run that suspended) advised
    `continue with: durable run FILE.py:FUNCTION --run-id n2.0.0 --resume
    --var NAME=VALUE`: resumed alone with x=5, the child completed, and the
    parent's resume (with its own x) was then refused as a call with other
    arguments. A child run goes on when the run on top of it resumes."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nest.py").write_text(NESTED)
    store = ["--store", str(tmp_path / "s")]
    assert main([*store, "run", "nest.py:outer", "--var", "x=200", "--run-id", "n2"]) == 3
    capsys.readouterr()
    assert main([*store, "show", "n2.0.0"]) == 0
    err = capsys.readouterr().err
    assert err == (
        "  n2.0.0 is a child run of run n2 of nest.outer: it goes on when that run resumes\n"
        f"  continue with: durable --store {tmp_path / 's'} run nest.py:outer --run-id n2 "
        "--resume --var NAME=VALUE\n"  # its suspend() waits for no wait_for's input (newuser47)
    )
    typed = _advised(err, "continue with: ")[1:]
    assert main([*typed[:-1], "x=5"]) == 0
    assert capsys.readouterr().out.strip() == "11"
