"""The fourth new-user walk, in process: what an operator on a shared
machine reads when a relative store is read from another working folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import durable
from durable._cli.main import main


def test_a_relative_store_missing_here_names_the_folder_it_looked_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: with DURABLE_STORE=runs, a run made in ~/a was looked for in
    ~/b: `durable show r1` said only "no run 'r1' in store runs; `durable
    runs` lists its runs", that listing "there is no such folder", and
    `durable run --resume` "Check the run id"."""

    @durable.workflow(store=str(tmp_path / "a" / "runs"), run_id="r1")
    def job() -> int:
        return 1

    assert job() == 1
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "b")
    monkeypatch.setenv("DURABLE_STORE", "runs")
    looked_in = f"({tmp_path / 'b' / 'runs'}: a relative path is read from the working folder)"
    assert main(["show", "r1"]) == 2
    assert looked_in in capsys.readouterr().err
    assert main(["runs"]) == 2
    assert looked_in in capsys.readouterr().err
    (tmp_path / "b" / "flow.py").write_text("import durable\n\n@durable.workflow\ndef job() -> int:\n"
                                          "    return 1\n")  # fmt: skip
    for resume in (["--resume"], ["--resume", "--run-id", "r1"]):
        assert main(["run", "flow.py:job", *resume]) == 2
        assert looked_in in capsys.readouterr().err, resume
    with pytest.raises(durable.RunNotFoundError, match="a relative path is read from"):
        job.with_options(store="runs").resume("r1")
    assert not (tmp_path / "b" / "runs").exists()  # looking made nothing


def test_a_wait_for_a_held_run_is_announced_once(tmp_path: Path) -> None:
    """Before: `with_options(wait=)` (and `durable run --wait`) waited
    without a word; now one RunWaiting event names the holder."""
    executed: list[int] = []

    @durable.step
    def work() -> int:
        executed.append(1)
        return 1

    @durable.workflow(store=str(tmp_path), run_id="held")
    def job() -> int:
        return work()

    seen: list[durable.events.Event] = []
    lease = durable.open_store(str(tmp_path)).acquire(job.name, "held", 30)
    try:
        with durable.on_event(seen.append), pytest.raises(durable.RunLockedError) as held:
            job.with_options(wait=0.3)()
    finally:
        lease.release()
    waits = [e for e in seen if isinstance(e, durable.events.RunWaiting)]
    assert [(e.run_id, e.workflow, e.wait) for e in waits] == [("held", job.name, 0.3)]
    assert waits[0].holder == held.value.holder and waits[0].holder.startswith("pid ")
    assert executed == []


def test_show_gives_the_wake_up_time_of_a_sleep_not_yet_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a run stopped in `durable.sleep(3600)` showed `2  sleep  sleep
    pending  0  -` and an empty output: when its timer fires was nowhere."""
    from durable._cli.format import local
    from durable.testing import FakeClock, fake_clock

    class CtrlC(FakeClock):
        def sleep(self, seconds: float) -> None:
            raise KeyboardInterrupt  # Ctrl-C while the timer runs

    @durable.workflow(store=str(tmp_path), run_id="t1")
    def reminder() -> None:
        durable.sleep(3600)

    with fake_clock() as clock, pytest.raises(KeyboardInterrupt):
        clock.__class__ = CtrlC
        reminder()
    assert main(["--store", str(tmp_path), "show", "t1"]) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("0 ")]
    assert row.split()[1:4] == ["sleep", "sleep", "pending"]
    assert row.endswith(f"wakes at {local(clock.now + 3600)}"), row


def test_durable_run_says_when_a_step_waits_to_try_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a step failing with retries=3, retry_delay=10 printed nothing
    for the 70 s of its delays, then `[1] upload executed`: it looked hung."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "retried.py").write_text(
        "import durable\n\ntries = []\n\n@durable.step(retries=1, retry_delay=0.01)\n"
        "def upload() -> int:\n    tries.append(1)\n    if len(tries) == 1:\n"
        "        raise ConnectionError('bucket timed out')\n    return len(tries)\n\n"
        "@durable.workflow\ndef job() -> int:\n    return upload()\n"
    )  # fmt: skip
    assert main(["--store", str(tmp_path / "s"), "run", "retried.py:job", "--run-id", "j"]) == 0
    said = capsys.readouterr().err
    # `executed in 136ms` past 100 ms (a loaded machine): the time is not the point here
    assert re.search(
        r"  \[0\] upload failed on try 1 of 2 \(ConnectionError: bucket timed out\); retrying in 10ms\n"
        r"  \[0\] upload executed( in [0-9.]+m?s)?\n",
        said,
    ), said
