"""One run the store refuses to read (a permission error on its folder or
its manifest, a store that keeps failing for its objects) is one
`unreadable` line of `durable runs` and `Workflow.runs()`: the other runs
are listed, the listing exits 1, and `durable show` of that run says which
run and what to do. Nothing recorded is changed: once the store reads it
again, the run lists and shows as before."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

import durable

from .clikit import DURABLE, REPO

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

_RUNS = ("r1", "bad", "r3")


def _three_runs(store: durable.Store) -> None:
    @durable.step
    def one() -> int:
        return 1

    for run_id in _RUNS:

        @durable.workflow(store=store, run_id=run_id, name="A")
        def a() -> int:
            return one()

        assert a() == 1


# root reads any file: without these capabilities its file permissions hold.
_NO_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                "--inh-caps=-dac_override,-dac_read_search"]  # fmt: skip


def _cli(*args: str, env: dict[str, str], bound: bool = False) -> subprocess.CompletedProcess[str]:
    """`durable ARGS` in a child process; `bound`: held to file permissions."""
    prefix = _NO_OVERRIDE if bound and os.geteuid() == 0 else []
    return subprocess.run(
        [*prefix, *DURABLE, *args], env=env, capture_output=True,
        text=True, stdin=subprocess.DEVNULL, timeout=60, cwd=tempfile.gettempdir(),
    )


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_")}
    return {**env, "PYTHONPATH": str(REPO), **extra}


def _listed(done: subprocess.CompletedProcess[str]) -> dict[str, tuple[str, str | None]]:
    return {r["runId"]: (r["status"], r["error"]) for r in json.loads(done.stdout)}


def _check_unreadable_listing(url: str, env: dict[str, str], bound: bool = False) -> None:
    """`durable runs` (JSON and table) and `durable show bad` while run
    `bad` cannot be read."""
    done = _cli("--store", url, "runs", "--json", env=env, bound=bound)
    assert done.returncode == 1, done.stderr
    listed = _listed(done)
    assert {r: s for r, (s, _) in listed.items()} == {
        "r1": "completed", "bad": "unreadable", "r3": "completed"}  # fmt: skip
    assert "A/bad/" in (listed["bad"][1] or "")
    assert "1 run could not be read (bad)" in done.stderr
    assert "run 'bad' of workflow 'A' could not be read (reading A/bad/" in done.stderr
    assert f"`durable --store {url} show bad` shows it" in done.stderr  # as typed, to this store
    table = _cli("--store", url, "runs", env=env, bound=bound)
    assert table.returncode == 1
    assert [line.split()[1] for line in table.stdout.splitlines()[1:]] == ["r3", "r1", "bad"]  # its time unknown: last
    assert "unreadable" in table.stdout and "bad" in table.stderr
    shown = _cli("--store", url, "show", "bad", env=env, bound=bound)
    assert shown.returncode == 1
    assert "run 'bad' of workflow 'A' could not be read" in shown.stderr, shown.stderr
    assert "show bad" in shown.stderr  # what to run again once the store reads it


def _check_intact(url: str, env: dict[str, str]) -> None:
    done = _cli("--store", url, "runs", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert {r: s for r, (s, _) in _listed(done).items()} == dict.fromkeys(_RUNS, "completed")
    shown = _cli("--store", url, "show", "bad", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["status"] == "completed"


@pytest.mark.slow
def test_a_run_s3_refuses_is_listed_unreadable_and_the_others_are_listed(
    s3_url: str, proxy: tuple[str, Any]
) -> None:
    endpoint, faults = proxy
    _three_runs(durable.open_store(s3_url))
    faults.deny("/A/bad/")  # every request for the run's objects: 403 AccessDenied
    env = _env(AWS_ENDPOINT_URL=endpoint)
    _check_unreadable_listing(s3_url, env)
    store = durable.open_store(s3_url, endpoint_url=endpoint, skip_instance_cache=True)
    a = durable.workflow(store=store, name="A")(lambda: 0)
    listed = {i.run_id: i for i in a.runs()}
    assert [listed[r].status for r in _RUNS] == ["completed", "unreadable", "completed"]
    assert "A/bad/" in (listed["bad"].error or "")
    with pytest.raises(durable.StorageError, match="run 'bad' of workflow 'A' could not be read"):
        a.history("bad")
    # gc never removes a run whose state it could not read, even when told its status (and says so).
    with pytest.warns(UserWarning, match="gc never removes an unreadable run"):
        assert durable.gc(store, status="unreadable", dry_run=True) == []
    assert sorted(i.run_id for i in durable.gc(store, older_than=0, dry_run=True)) == ["r1", "r3"]
    # recover() never passes over a run it could not look at: it may be one to recover.
    (told,) = a.recover()
    assert (told.run_id, told.status) == ("bad", "unreadable") and "A/bad/" in (told.error or "")
    faults.deny("")
    _check_intact(s3_url, env)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="file permissions")
@pytest.mark.parametrize("refused", ["bad/run", "bad/records.log", "bad"])
def test_a_local_run_without_read_permission_is_listed_unreadable(
    tmp_path: Path, refused: str
) -> None:
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("root reads any file: setpriv is needed to drop that")
    store_path = tmp_path / "store"
    _three_runs(durable.open_store(store_path))
    target = store_path / "A" / refused
    mode = target.stat().st_mode
    target.chmod(0)
    try:
        _check_unreadable_listing(str(store_path), _env(), bound=True)
    finally:
        target.chmod(stat.S_IMODE(mode))
    _check_intact(str(store_path), _env())
