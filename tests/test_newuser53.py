"""The 53rd new-user walk, starting from what newuser52 left: `durable cache
ls ca.embed` (the step's name as its module qualifies it) suggested
nothing; `durable gc` stopped at the first run it failed to delete, the
others not tried. In process: `main([...])`."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import durable
from durable._cli.main import main
from durable._manage.runs import list_runs

JOB = """\
import durable


@durable.step(cache=True)
def embed(text: str) -> int:
    with open("counts", "a") as f:
        f.write("embed\\n")
    return len(text)


@durable.workflow
def job(text: str = "a") -> int:
    return embed(text) * 2
"""


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "ca.py").write_text(JOB)
    return tmp_path


def _counts(folder: Path) -> list[str]:
    path = folder / "counts"
    return path.read_text().split() if path.exists() else []


def test_cache_ls_of_a_qualified_or_misspelt_step_name_says_the_one_meant(
    job: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "no cache entries for step ca.embed in ...; steps with
    entries: embed", the name meant left to spot (the runs are listed as
    `ca.job`, so the step's name is typed the same way)."""
    assert main(["run", "ca.py:job"]) == 0
    capsys.readouterr()
    for typed in ("ca.embed", "Embed", "embd"):
        for verb in ("ls", "clear"):
            assert main(["cache", verb, typed]) == 2, (verb, typed)
            assert "did you mean embed? steps with entries: embed" in capsys.readouterr().err, (verb, typed)
    assert main(["cache", "ls", "other"]) == 2
    assert "did you mean" not in capsys.readouterr().err
    assert main(["runs", "job"]) == 2  # a workflow's bare name is said as it was: the same rule
    assert "did you mean ca.job? workflows with runs: ca.job" in capsys.readouterr().err
    assert _counts(job) == ["embed"]


def test_gc_goes_on_past_a_run_it_fails_to_delete(
    job: Path, unwritable: Callable[[Path], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable gc --status completed` stopped at the first run the
    store failed to delete (exit 1, one StorageError): the runs after it
    were not tried, those removed before it went unsaid, and `--json`
    printed no document."""
    store = job / "store"
    for run_id in ("r1", "r2", "r3", "r4"):
        assert main(["run", "ca.py:job", "--run-id", run_id]) == 0
    capsys.readouterr()
    unwritable(store / "ca.job" / "r2")
    unwritable(store / "ca.job" / "r4")
    assert main(["gc", "--status", "completed", "--json"]) == 1
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert sorted(r["runId"] for r in doc["removed"]) == ["r1", "r3"]
    assert [(f["workflow"], f["runId"]) for f in doc["failed"]] == [("ca.job", "r4"), ("ca.job", "r2")]
    assert all("deleting: [Errno" in f["error"] for f in doc["failed"])
    assert "durable: could not remove ca.job/r4: " in err and "durable: could not remove ca.job/r2: " in err
    assert sorted(i.run_id for i in list_runs(durable.open_store(store))) == ["r2", "r4"]
    # The library: the same, as one StorageError that names each run left.
    with pytest.raises(durable.StorageError) as e:
        durable.gc(str(store), status="completed")
    assert "failed to remove 2 runs (ca.job/r4, ca.job/r2)" in str(e.value)
    assert [i.run_id for i in e.value.removed] == []  # type: ignore[attr-defined]
    assert list(e.value.failed) == ["ca.job/r4", "ca.job/r2"]  # type: ignore[attr-defined]
    assert main(["gc", "--status", "completed"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "removed 0 runs; failed to remove 2" in err
    assert _counts(job) == ["embed"]


def test_a_run_id_typed_in_part_names_the_run_meant(
    job: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable show 0c91c8232941` (the part of the id `durable run`
    made that tells it from the others) said "no run '0c91c8232941' ...;
    `durable runs` lists its runs", the id it is part of not named; and
    `job.resume(part)` from a module that imports the script (the workflow
    then named `job`, its runs under `ca.job`) named none either."""
    assert main(["run", "ca.py:job", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["runId"]
    part = run_id.rpartition("-")[2]
    for words in (["show", part], ["rm", part], ["fork", part[:8], "--at", "0"]):
        assert main(words) == 2, words
        assert f"did you mean {run_id}? " in capsys.readouterr().err, words
    assert main(["show", "zzzz"]) == 2  # a part of no id: no guess
    assert "did you mean" not in capsys.readouterr().err
    monkeypatch.syspath_prepend(str(job))
    monkeypatch.delitem(sys.modules, "ca", raising=False)
    flow = importlib.import_module("ca")
    monkeypatch.delitem(sys.modules, "ca")
    with pytest.raises(durable.RunNotFoundError, match=f"Did you mean '{run_id}'\\?"):
        flow.job.resume(part)
    assert [i.run_id for i in list_runs(durable.open_store(job / "store"))] == [run_id]
    assert _counts(job) == ["embed"]


def test_runs_status_repeated_lists_each_status(job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `durable runs --status suspended --status failed` listed the
    failed runs alone (the last --status won, silently), where `durable gc
    --status` repeats."""
    (job / "asks.py").write_text(
        "import durable\n\n\n@durable.workflow\ndef asks(fail: bool = False) -> str:\n"
        "    if fail:\n        raise ValueError('no')\n    durable.suspend('waiting')\n    return 'x'\n"
    )  # fmt: skip
    assert main(["run", "asks.py:asks", "--run-id", "s1"]) == 3  # suspended
    assert main(["run", "asks.py:asks", "--run-id", "f1", "--var", "fail=true"]) == 1
    assert main(["run", "ca.py:job", "--run-id", "c1"]) == 0
    capsys.readouterr()
    assert main(["runs", "--status", "suspended", "--status", "failed", "--json"]) == 0
    assert sorted(d["runId"] for d in json.loads(capsys.readouterr().out)) == ["f1", "s1"]
    assert main(["runs", "ca.job", "--status", "suspended", "--status", "failed"]) == 0
    assert "durable: no suspended or failed runs of workflow ca.job in " in capsys.readouterr().err
    assert main(["runs", "--status", "failed", "--status", "done"]) == 2
    assert "unknown run status 'done'" in capsys.readouterr().err


def test_a_fork_into_an_id_another_workflow_has_says_so(job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `durable fork o1 --at 0 --new-run-id r2`, r2 being a run of
    another workflow, said only "forked ...": every later `durable show r2`
    (rm, fork, cancel) then asked for --workflow, the cause unsaid."""
    (job / "two.py").write_text(JOB.replace("def job(", "def other("))
    assert main(["run", "ca.py:job", "--run-id", "r1"]) == 0
    assert main(["run", "two.py:other", "--run-id", "r2"]) == 0
    capsys.readouterr()
    assert main(["fork", "r1", "--at", "1", "--new-run-id", "r2"]) == 0
    err = capsys.readouterr().err
    assert "run r2 is also a run of two.other: a command that names r2 needs --workflow" in err
    assert main(["fork", "r1", "--at", "1", "--new-run-id", "r3"]) == 0
    assert "also a run of" not in capsys.readouterr().err
    assert _counts(job) == ["embed", "embed"]  # ca.embed and two.embed: a fork executes nothing


@pytest.mark.slow  # moto's server
def test_an_object_store_prefix_mistyped_names_the_one_beside_it(
    s3_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable --store s3://team/durabl runs` (a letter short)
    said "no runs in s3://team/durabl" and nothing more, where a local
    folder that is not there is told as such; `show RUN` the same."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ca.py").write_text(JOB)
    assert main(["--store", s3_url, "run", "ca.py:job", "--run-id", "r1"]) == 0
    capsys.readouterr()
    typo = s3_url[:-1]
    for words in (["runs"], ["show", "r1"]):
        main(["--store", typo, *words])
        err = capsys.readouterr().err
        assert f"nothing is stored under {typo}; did you mean {s3_url}? " in err, words
        assert f"durable --store {s3_url} runs" in err, words
    assert main(["--store", f"{s3_url}/sub", "runs"]) == 0  # nothing beside it: as before
    assert "did you mean" not in capsys.readouterr().err


def test_cache_info_of_a_step_counts_what_its_script_cached(
    job: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the entries `python ca.py` (or `durable run ca.py:job`)
    cached were noted as made by `__main__.embed`, so `cache_info(ca.embed)`
    of the same step imported (one identity, `ca.embed`, as its runs and
    fingerprints have) counted 0 entries of the 1 it serves from."""
    assert main(["run", "ca.py:job"]) == 0
    monkeypatch.syspath_prepend(str(job))
    monkeypatch.delitem(sys.modules, "ca", raising=False)
    flow = importlib.import_module("ca")
    monkeypatch.delitem(sys.modules, "ca")
    info = durable.cache_info(flow.embed, store=str(job / "store"))
    assert info.entries == 1  # hits and misses: of this process, where other tests ran ca.embed too
    assert flow.embed("a") == 1 and durable.cache_info(flow.embed, store=str(job / "store")).hits == info.hits + 1
    assert _counts(job) == ["embed"]  # the import's call was served from the script's entry
