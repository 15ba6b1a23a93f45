"""The ninth new-user walk (the README's release notes, then the CLI), in
process: what misled a newcomer following the docs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import durable
from durable._cli.main import main

PINNED = """
import durable

ran = []


@durable.step
def fetch() -> list[str]:
    return ["a", "b"]


@durable.step
def publish(notes: list[str], decision: str) -> str:
    ran.append(decision)
    return f"{decision}: {notes}"


@durable.workflow(run_id="release-1.0")
def release(decision: str | None = None) -> str:
    notes = fetch()
    if decision is None:
        durable.suspend("waiting for decision")
    return publish(notes, decision)
"""


def _runs(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    capsys.readouterr()
    assert main(["runs", "--json"]) == 0
    return {r["runId"]: r["status"] for r in json.loads(capsys.readouterr().out)}


def test_resume_without_run_id_takes_the_workflows_own_run_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: with a fork of the suspended release-1.0 in the store (newer,
    not completed), `durable run flow.py:release --resume --var
    decision=approved` resumed the fork, and the decision went to a run the
    reviewer never meant; the docs say the run id is --run-id, else the
    workflow's own run_id=."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(PINNED)
    assert main(["run", "flow.py:release"]) == 3  # suspended
    assert main(["fork", "release-1.0", "--at", "1"]) == 0
    (fork,) = set(_runs(capsys)) - {"release-1.0"}
    assert main(["run", "flow.py:release", "--resume", "--var", "decision=approved"]) == 0
    assert "run release-1.0 completed" in capsys.readouterr().err
    assert _runs(capsys) == {"release-1.0": "completed", fork: "forked"}


def test_show_says_how_to_continue_a_run_that_stopped_half_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable show release-1.0` of a suspended run gave its status
    and reason and nothing else; the `continue with:` line was printed once,
    by the `durable run` that suspended it, maybe days before."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text(PINNED)
    store = ["--store", str(tmp_path / "s")]
    assert main([*store, "run", "flow.py:release"]) == 3
    capsys.readouterr()
    assert main([*store, "show", "release-1.0"]) == 0
    said = capsys.readouterr()
    assert "status    suspended (waiting for decision)" in said.out
    assert (
        f"  continue with: durable --store {tmp_path / 's'} run flow.py:release --run-id "
        "release-1.0 --resume --var decision=VALUE\n"  # a suspend(): no wait_for to answer (newuser47)
    ) in said.err, said.err
    assert main([*store, "run", "flow.py:release", "--resume", "--var", "decision=ok"]) == 0
    capsys.readouterr()
    assert main([*store, "show", "release-1.0"]) == 0
    assert "continue with" not in capsys.readouterr().err  # completed: nothing to continue


def _one_run(url: str) -> None:
    @durable.workflow(store=url, run_id="r1", name="job")
    def job() -> int:
        return 1

    assert job() == 1


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_store_given_one_folder_too_high_names_the_store_below(
    where: str, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable --store . runs` in a project whose runs are in
    ./.durable (or `--store s3://team` for s3://team/durable) said only
    "no runs in ."; `durable show r1` "`durable runs` lists its runs"."""
    if where == "s3":
        pytest.importorskip("s3fs")
        below = request.getfixturevalue("s3_url")
        above = below.rsplit("/", 1)[0]
    else:
        above, below = str(tmp_path), str(tmp_path / ".durable")
    _one_run(below)
    hint = f"{below} holds runs: `durable --store {below} runs` lists them"
    assert main(["--store", above, "runs"]) == 0
    assert hint in capsys.readouterr().err
    assert main(["--store", above, "show", "r1"]) == 2
    assert hint in capsys.readouterr().err


def test_cancel_of_a_held_run_says_when_its_holder_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "looks for the mark at a step boundary every cancel_poll
    seconds": a name of the code's, with no number and no way to set it."""
    import threading

    monkeypatch.delenv("DURABLE_CANCEL_POLL", raising=False)
    inside, release = threading.Event(), threading.Event()

    @durable.step
    def hold() -> int:
        inside.set()
        release.wait(60)
        return 1

    @durable.workflow(store=str(tmp_path / "s"), run_id="held", name="held")
    def held() -> int:
        return hold() + hold()

    ended: list[BaseException] = []

    def hold_it() -> None:
        try:
            held()
        except durable.Cancelled as e:
            ended.append(e)

    holder = threading.Thread(target=hold_it)
    holder.start()
    try:
        assert inside.wait(60)
        assert main(["--store", str(tmp_path / "s"), "cancel", "held"]) == 0
    finally:
        release.set()
        holder.join(60)
    assert len(ended) == 1  # the holder saw the mark at its next boundary
    said = capsys.readouterr().err
    assert "looks for the mark at each step boundary (at most every 0.5 s on this store" in said
    assert "DURABLE_CANCEL_POLL" in said, said
