"""The 52nd new-user walk, starting from what cli52 left: `durable rm` of a
run whose workflow folder cannot be written said "removed" and nothing of
the run's folder left behind; a store whose folder cannot be made said
"[Errno 2]" and no way out; a bad DURABLE_MAX_RECOVERY_ATTEMPTS surfaced
only once a dead holder was found; "no runs in X" had no `durable:` as the
other notes of the command do; a typo in DURABLE_TRACEBACK was silent.
In process: `main([...])`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import durable
from durable import _settings
from durable._cli.main import main
from durable._manage.runs import list_runs

JOB = """\
import durable


@durable.step
def add(x: int) -> int:
    with open("counts", "a") as f:
        f.write("add\\n")
    return x + 1


@durable.workflow
def job(x: int = 1) -> int:
    return add(x) * 2
"""


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(JOB)
    return tmp_path


def _counts(folder: Path) -> list[str]:
    path = folder / "counts"
    return path.read_text().split() if path.exists() else []


def test_rm_says_the_emptied_run_folder_that_stays(
    job: Path, unwritable: Callable[[Path], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `removed flow.job/r1` and exit 0, the run's empty folder left
    in the store without a word (its workflow folder cannot be written)."""
    assert main(["run", "flow.py:job", "--run-id", "r1"]) == 0
    capsys.readouterr()
    unwritable(job / "store" / "flow.job")
    with pytest.warns(UserWarning) as said:
        assert main(["rm", "r1"]) == 0
    assert capsys.readouterr().out == "removed flow.job/r1\n"
    text = " ".join(str(w.message) for w in said)
    folder = job / "store" / "flow.job" / "r1"
    assert f"run flow.job/r1 was removed (its records are gone), but the emptied folder {folder} stays" in text
    assert f"remove it (rmdir {folder})" in text
    assert os.listdir(folder) == []  # nothing of the run is left in it
    assert main(["runs"]) == 0
    assert "durable: no runs in " in capsys.readouterr().err


def test_a_store_folder_that_cannot_be_made_says_to_check_the_path(
    job: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "store /proc/self/xx failed: taking the lease ...: [Errno 2]
    No such file or directory: '/proc/self/xx'. Records already written are
    intact." and no way out."""
    assert main(["--store", "/proc/self/xx", "run", "flow.py:job"]) == 1
    err = capsys.readouterr().err
    assert "The store's folder /proc/self/xx does not exist and cannot be made" in err
    assert "check the store's path (--store, store=, $DURABLE_STORE)" in err
    assert _counts(job) == []


def test_a_bad_max_recovery_attempts_is_refused_when_the_run_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the run went on; the value was read only once a run was
    found whose holder had died, the mistake surfacing then."""
    executed: list[int] = []

    @durable.step
    def add(x: int) -> int:
        executed.append(x)
        return x + 1

    @durable.workflow(store=str(tmp_path / "store"))
    def job(x: int) -> int:
        return add(x) * 2

    monkeypatch.setenv("DURABLE_MAX_RECOVERY_ATTEMPTS", "three")
    with pytest.raises(durable.ConfigurationError) as e:
        job(2)
    assert "DURABLE_MAX_RECOVERY_ATTEMPTS must be a whole number >= 0 (0: no limit), not 'three'" in str(e.value)
    assert executed == [] and job.runs() == []
    monkeypatch.setenv("DURABLE_MAX_RECOVERY_ATTEMPTS", "0")
    assert job(2) == 6 and executed == [2]


def test_the_commands_notes_of_nothing_found_start_with_durable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "no runs in X", "no cache entries ...", "removed 0 runs in X:
    there is no such folder" had no `durable:`, as each error and warning
    of the command has."""
    (tmp_path / "empty").mkdir()
    for store, code in ((tmp_path / "empty", 0), (tmp_path / "nope", 2)):
        for words, a_note in ((["runs"], True), (["cache", "ls"], True), (["gc", "--keep-last", "1"], code == 2),
                              (["cache", "clear"], code == 2)):  # fmt: skip
            assert main(["--store", str(store), *words]) == code, words
            err = capsys.readouterr().err
            assert err.startswith("durable: ") == a_note, (words, err)  # "removed 0 runs" is a report
    assert main(["--store", str(tmp_path / "nope"), "cache", "clear"]) == 2
    assert capsys.readouterr().err.startswith(f"durable: removed 0 entries in {tmp_path / 'nope'}: there is no such")


def test_a_word_durable_traceback_does_not_know_is_warned_of(
    job: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: DURABLE_TRACEBACK=ful (for full) said nothing and cut
    durable's frames, as any word but `full` does."""
    monkeypatch.setenv("DURABLE_TRACEBACK", "ful")
    told = "DURABLE_TRACEBACK must be full or short, not 'ful'; it is ignored"
    for words in (["run", "flow.py:job"], ["runs"], ["rm", "r1"]):  # writes (never stopped by it), reads
        monkeypatch.setattr(_settings, "_told", [False])  # each command is a process of its own
        with pytest.warns(UserWarning, match=told) as said:
            main(words)
        assert len([w for w in said if "DURABLE_TRACEBACK" in str(w.message)]) == 1, words
    assert _counts(job) == ["add"]
    monkeypatch.setattr(_settings, "_told", [False])
    with pytest.warns(UserWarning, match=told):  # the library: once, at its first run
        assert _settings.setting("on_change") == "refuse"
    monkeypatch.setenv("DURABLE_TRACEBACK", " Short ")
    assert _settings.bad_variables() == {}


def test_gc_of_a_status_it_never_removes_says_so(job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `durable gc --status running` said "removed 0 runs", exit 0,
    with a run running: a running run is never removed, said nowhere."""
    assert main(["run", "flow.py:job"]) == 0
    with pytest.warns(UserWarning, match=r"gc never removes a running run \(a live process holds it: "
                      r"`durable cancel RUN` or durable.cancel\(\) ends it first\)"):  # fmt: skip
        assert main(["gc", "--status", "running", "--status", "completed", "--dry-run"]) == 0
    assert "would remove 1 run" in capsys.readouterr().err


def test_rm_goes_on_past_a_run_the_store_fails_to_delete(
    job: Path, unwritable: Callable[[Path], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable rm r1 r2` stopped at r1's StorageError (its folder
    not writable): r2 was not removed, and `--json` printed no document."""
    for run_id in ("r1", "r2"):
        assert main(["run", "flow.py:job", "--run-id", run_id, "--var", f"x={len(run_id)}"]) == 0
    capsys.readouterr()
    unwritable(job / "store" / "flow.job" / "r1")
    assert main(["rm", "r1", "r2", "--json"]) == 1
    out, err = capsys.readouterr()
    docs = json.loads(out)
    assert [(d["runId"], d["removed"]) for d in docs] == [("r1", False), ("r2", True)]
    assert "deleting: [Errno" in docs[0]["error"] and "Records already written are intact" in err
    assert [i.run_id for i in list_runs(durable.open_store(job / "store"))] == ["r1"]


def test_a_misspelt_var_names_the_parameter_meant(job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "flow.job has no parameter xx; it takes x" (and the wait_for
    hint), the near name left for the user to spot, as the library's
    resume() names it ("did you mean x=?")."""
    (job / "flow.py").write_text(JOB.replace("x: int = 1", "count: int = 1").replace("add(x)", "add(count)"))
    assert main(["run", "flow.py:job", "--var", "cuont=2"]) == 2
    assert "flow.job has no parameter cuont; did you mean count? It takes count" in capsys.readouterr().err
    assert _counts(job) == []


def test_runs_says_why_a_run_is_listed_unverified(
    job: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable runs` under a signing key the run was not written
    with listed it `unverified`, steps 0, and said nothing of why (as it
    does for an unreadable run), exit 0."""
    assert main(["run", "flow.py:job", "--run-id", "r1"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("DURABLE_SIGNING_KEY", "another")
    assert main(["runs"]) == 0
    out, err = capsys.readouterr()
    assert "unverified" in out
    assert err.startswith("durable: flow.job/r1 is unverified: ") and "check DURABLE_SIGNING_KEY" in err
    assert main(["runs", "--json"]) == 0 and capsys.readouterr().err == ""  # the document holds it


def test_a_store_folder_not_there_names_a_folder_here_that_holds_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a script's `durable.configure(store="team-runs")` put its
    runs there; `durable runs` in its folder said "no runs in .durable:
    there is no such folder", and `show RUN` no run, with no word of the
    folder beside it that holds them."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DURABLE_STORE", raising=False)

    @durable.workflow(store="team-runs", run_id="r1")
    def job() -> int:
        return 1

    assert job() == 1
    (tmp_path / "notes" / "a").mkdir(parents=True)  # a folder that holds no run
    for words in (["runs"], ["show", "r1"]):
        assert main(words) == 2
        err = capsys.readouterr().err
        assert "there is no such folder" in err and "team-runs here holds runs: `" in err, err
        assert " --store team-runs runs` lists them" in err


def test_a_plain_function_as_the_target_says_to_decorate_it(
    job: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "plain in flow.py is a function, not a @durable.workflow; its
    workflows: job", and nothing of what makes one."""
    (job / "flow.py").write_text(JOB + "\n\ndef plain() -> int:\n    return 1\n")
    assert main(["run", "flow.py:plain"]) == 2
    err = capsys.readouterr().err
    assert "plain in flow.py is a function, not a @durable.workflow: put @durable.workflow on it to run it" in err
    assert err.rstrip().endswith("its workflows: job")
