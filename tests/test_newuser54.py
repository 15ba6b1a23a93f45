"""The 54th new-user walk's CLI items, in process (`main([...])`): a fork
of a run suspend() stopped printed a line without the `--var` its resume
needs; `show` of a run on S3 said "durability fsync" for a run started
with `--durability none`; `show --html` numbered failed attempts across
the whole run."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from durable._cli.main import main

APPROVE = """\
import durable


@durable.step
def fetch(x: int) -> int:
    with open("counts", "a") as f:
        f.write("fetch\\n")
    return x + 1


@durable.workflow
def approve(x: int = 1, approved: bool = False) -> int:
    y = fetch(x)
    if not approved:
        durable.suspend("waiting for approved")
    return fetch(y)
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "ap.py").write_text(APPROVE)
    return tmp_path


def _counts(folder: Path) -> list[str]:
    path = folder / "counts"
    return path.read_text().split() if path.exists() else []


def _printed(err: str, head: str) -> list[str]:
    """The command a line of stderr starting with `head` gives, as typed."""
    line = next(s for s in err.splitlines() if s.strip().startswith(head))
    return shlex.split(line.strip()[len(head) :].strip())


@pytest.mark.parametrize("at", [0, 1])
def test_a_fork_of_a_suspended_run_prints_the_var_its_resume_needs_and_runs_as_printed(
    folder: Path, capsys: pytest.CaptureFixture[str], at: int
) -> None:
    """Before: "run it with: durable run ap.py:approve --run-id f --resume",
    which stopped at the same suspend() again."""
    assert main(["run", "ap.py:approve", "--run-id", "r"]) != 0
    capsys.readouterr()
    assert main(["fork", "r", "--at", str(at), "--new-run-id", "f"]) == 0
    err = capsys.readouterr().err
    line = _printed(err, "run it with:")
    assert line[-2:] == ["--var", "approved=VALUE"], err
    assert main(["show", "f"]) == 0
    said = capsys.readouterr()
    shown = _printed(said.out + said.err, "continue with:")
    assert shown == line
    assert main([*line[1:-1], "approved=true"]) == 0  # as printed, VALUE filled in
    assert _counts(folder) == ["fetch"] * (2 + (at == 0))  # r's one; f's: copied or run again, then the next


def test_show_of_a_run_on_an_object_store_says_what_its_durability_means_there(
    folder: Path, s3_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "durability fsync" for a run started with `--durability none`
    on S3, which reads as the option ignored, or a level asked and lost."""
    assert main(["--store", s3_url, "run", "ap.py:approve", "--run-id", "s", "--durability", "none",
                 "--var", "approved=true"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["--store", s3_url, "show", "s"]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("durability"))
    assert line == (
        "durability fsync (an object store: each record is durable once its write returns, "
        "whatever level was asked; --durability changes nothing there)"
    )
    page = folder / "s.html"
    assert main(["--store", s3_url, "show", "s", "--html", str(page)]) == 0
    assert "each record is durable once its write returns" in page.read_text()


FLAKY = """\
import durable


@durable.step(retries=1, retry_delay=0)
def flaky() -> int:
    with open("counts", "a") as f:
        f.write("flaky\\n")
    raise ValueError("down")


@durable.workflow
def job() -> int:
    return flaky()
"""


def test_show_html_numbers_failed_tries_per_call_as_show_does(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the marks and tooltip said "attempt 3 failed" and "attempt 4
    failed" for the resume's two tries (budget 2), and the TRIES column "4",
    where `show` says "4 (2+2)": read as a budget overrun."""
    (folder / "fl.py").write_text(FLAKY)
    assert main(["run", "fl.py:job", "--run-id", "j"]) == 1
    assert main(["run", "fl.py:job", "--run-id", "j", "--resume"]) == 1
    assert _counts(folder) == ["flaky"] * 4
    capsys.readouterr()
    assert main(["show", "j", "--html", str(folder / "j.html")]) == 0
    page = (folder / "j.html").read_text()
    assert "attempt 3" not in page and "attempt 4" not in page, page
    for said in ("try 1 failed", "try 2 failed", "try 1 failed (try 3 of the run)", "try 2 failed (try 4 of the run)"):
        assert page.count(f"{said}: ValueError: down") == 3, said  # its mark's title, the bar's, the tip
    assert "<td>4 (2+2)</td>" in page
