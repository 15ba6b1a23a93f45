"""The store stays inside its root (issue 11, item 6): symlinks planted in a
local store are never followed for writes or deletes, and every entry point
that takes a workflow name or run id validates it."""

from __future__ import annotations

import errno
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._manage import delete, runs

from .clikit import child_env
from .clikit import durable as durable_cli


def counted(store: durable.Store, counts: Counter[str], run_id: str = "r") -> Any:
    @durable.step(name="work")
    def work(i: int) -> str:
        counts[f"work{i}"] += 1
        return "w" * 2000 if i == 1 else f"v{i}"  # position 1 is a blob (threshold 1024)

    @durable.workflow(name="wf", store=store, run_id=run_id)
    def flow() -> list[str]:
        return [work(i) for i in range(3)]

    return flow


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the store, with a file nobody may touch."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "precious").write_text("keep me")
    return folder


def untouched(outside: Path) -> bool:
    return sorted(os.listdir(outside)) == ["precious"] and (
        outside / "precious"
    ).read_text() == "keep me"


def store_at(tmp_path: Path) -> durable.Store:
    return durable.open_store(tmp_path / "store", blob_threshold=1024)


@pytest.mark.parametrize("planted", ["lease", "records.log", "run", "blobs"])
def test_a_symlinked_object_inside_a_run_is_never_written_through(
    tmp_path: Path, outside: Path, planted: str
) -> None:
    counts: Counter[str] = Counter()
    run = tmp_path / "store" / "wf" / "r"
    run.mkdir(parents=True)
    target = outside if planted == "blobs" else outside / "precious"
    (run / planted).symlink_to(target)
    if planted == "run":  # os.replace swaps the link for the manifest itself
        assert counted(store_at(tmp_path), counts)() == ["v0", "w" * 2000, "v2"]
        assert not (run / "run").is_symlink()
    else:
        with pytest.raises(durable.StorageError) as err:
            counted(store_at(tmp_path), counts)()
        assert "symlink" in str(err.value)
    assert untouched(outside)
    # Once the link is gone, the run goes on, each step executed once in all
    # (a manifest replaced the link to "run": removed, the records would be
    # leftovers of no run, removed and run again).
    if planted != "run":
        (run / planted).unlink(missing_ok=True)
    assert counted(store_at(tmp_path), counts)() == ["v0", "w" * 2000, "v2"]
    # Only the blob's step ran before the refusal (its output had nowhere to go).
    twice = {"work1"} if planted == "blobs" else set()
    assert counts == {f"work{i}": 2 if f"work{i}" in twice else 1 for i in range(3)}
    assert untouched(outside)


@pytest.mark.parametrize("planted", ["run folder", "workflow folder"])
def test_rm_and_gc_never_delete_through_a_symlinked_folder(
    tmp_path: Path, outside: Path, planted: str
) -> None:
    # The outside folder looks like a run: a manifest copied from a real one.
    store = store_at(tmp_path)
    counted(store, Counter(), run_id="real")()
    if planted == "run folder":
        (outside / "run").write_bytes((tmp_path / "store" / "wf" / "real" / "run").read_bytes())
        (tmp_path / "store" / "wf" / "linked").symlink_to(outside)
        run_id, workflow_dir = "linked", tmp_path / "store" / "wf"
    else:
        (outside / "real").mkdir()
        (outside / "real" / "run").write_text("x")
        (tmp_path / "store" / "wf2").symlink_to(outside)
        run_id, workflow_dir = "real", tmp_path / "store" / "wf2"
    before = sorted(p.name for p in outside.rglob("*"))
    env = child_env(tmp_path, DURABLE_STORE=str(tmp_path / "store"))
    workflow = "wf" if planted == "run folder" else "wf2"
    removed = durable_cli(tmp_path, "rm", run_id, "--workflow", workflow, env=env)
    assert removed.returncode == 1 and "a symlink inside the store" in removed.stderr
    with pytest.raises(durable.StorageError, match="never writes or deletes through a symlink"):
        delete.delete_run(store, workflow, run_id)
    durable.gc(store, keep_last=0)
    assert sorted(p.name for p in outside.rglob("*")) == before
    assert (outside / "precious").read_text() == "keep me"
    assert workflow_dir.exists()


@pytest.mark.parametrize(
    "bad", ["../../other/wf/run", "..", "a/b", "run\0id", "", ".hidden", "with space"]
)
def test_every_entry_point_validates_names(tmp_path: Path, bad: str) -> None:
    store = store_at(tmp_path)
    flow = counted(store, Counter())
    flow()
    calls = [
        lambda: flow.history(bad),
        lambda: flow.fork(bad, at=0),
        lambda: flow.delete(bad),
        lambda: flow.resume(bad),
        lambda: durable.gc(store, keep_last=1, workflow=bad),
        lambda: runs.list_runs(store, bad),
        lambda: runs.run_info(store, bad, "r"),
    ]
    for call in calls:
        with pytest.raises(durable.ConfigurationError):
            call()


def test_another_stores_run_is_not_reachable_by_a_relative_run_id(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    counted(durable.open_store(tmp_path / "other"), counts)()
    mine = counted(store_at(tmp_path), counts)
    with pytest.raises(durable.ConfigurationError):
        mine.history("../../other/wf/r")


def test_a_nul_byte_is_a_configuration_error_everywhere(tmp_path: Path) -> None:
    with pytest.raises(durable.ConfigurationError, match="NUL"):
        durable.open_store(str(tmp_path / "st\0re"))
    env = child_env(tmp_path, DURABLE_STORE=str(tmp_path / "store"))
    for args in (["runs", "w\x01f"], ["show", "r\x01"], ["rm", "r\x01"]):
        done = durable_cli(tmp_path, *args, env=env)
        assert done.returncode == 2 and "invalid" in done.stderr, done.stderr


def test_a_store_root_that_is_a_file_is_an_error_not_an_empty_store(tmp_path: Path) -> None:
    """A file at the root when the store is opened is a ConfigurationError
    (tests/test_newuser36.py); one put there after it was opened is a
    StorageError with the advice, never an empty listing."""
    root = tmp_path / "rootfile"
    with pytest.raises(durable.ConfigurationError, match="is not a folder"):
        root.write_text("not a store")
        durable.open_store(root)
    root.unlink()
    store = durable.open_store(root)
    root.write_text("not a store")
    with pytest.raises(durable.StorageError, match=r"(?i)a file stands where the store needs a folder"):
        store.list("")
    with pytest.raises(durable.StorageError, match=r"(?i)a file stands where the store needs a folder"):
        counted(store, Counter())()
    assert root.read_text() == "not a store"


def test_a_run_removed_while_the_store_is_listed_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = durable.open_store(tmp_path / "s")
    for run_id in ("a", "b"):
        counted(store, Counter(), run_id)()
    from durable._storage import localfs

    scandir, removed = os.scandir, []

    def scandir_then_remove(path: Any) -> Any:
        # Another process's `durable rm b` lands between the listing of
        # "wf" (which found "b") and the listing of "b" itself.
        if str(path).endswith(os.sep + os.path.join("wf", "b")) and not removed:
            removed.append(True)
            delete.delete_run(durable.open_store(tmp_path / "s"), "wf", "b")
        return scandir(path)

    monkeypatch.setattr(localfs.os, "scandir", scandir_then_remove)
    assert [r.run_id for r in runs.list_runs(store)] == ["a"]
    assert removed


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
@pytest.mark.parametrize(("umask", "mode"), [(0o027, "0o640"), (0o007, "0o660")])
def test_every_file_of_a_local_store_is_made_with_the_processs_umask(
    tmp_path: Path, umask: int, mode: str
) -> None:
    """A team sharing a store folder through its group read the log and the
    lease, but not the manifests, blobs, cache entries or cancel markers:
    those were 0600 whatever the umask (mkstemp's mode, kept by the rename),
    and a team mate's `durable runs` failed on them. Under 007, a group that
    also resumes its members' runs: the lease and the log were 0640 (made
    0644 before the umask), so the other member's resume failed on the
    lease, Permission denied."""
    store = durable.open_store(str(tmp_path))
    before = os.umask(umask)
    try:
        assert counted(store, Counter())() == ["v0", "w" * 2000, "v2"]
    finally:
        os.umask(before)
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in tmp_path.rglob("*") if p.is_file()}
    assert {"run", "lease", "records.log"} <= set(modes), modes
    assert set(modes.values()) == {mode}, modes


@pytest.mark.skipif(getattr(os, "geteuid", lambda: 1)() != 0, reason="gives a file away: root")
def test_a_file_of_another_member_of_the_group_is_named_with_its_owner(tmp_path: Path) -> None:
    """A team mate's resume refused on the lease said "check the permissions
    of the store's folder": a shared folder is group-writable, so that
    found nothing; the file was the other member's, 0640 under umask 027."""
    from durable._storage.localerrors import local_error

    lease = tmp_path / "lease"
    lease.touch(mode=0o640)
    os.chown(lease, 2001, -1)
    denied = PermissionError(errno.EACCES, "Permission denied", str(lease))
    said = str(local_error(str(tmp_path), "taking the lease", denied))
    assert f"{lease} belongs to another user (uid 2001, -rw-r-----)" in said
    assert "umask 002 or 007" in said and "chmod -R g+w" in said
    # A run's folder not made yet: refused by the other's workflow folder.
    os.chown(tmp_path, 2001, -1)
    denied = PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "run"))
    said = str(local_error(str(tmp_path), "taking the lease", denied))
    assert f"{tmp_path} belongs to another user (uid 2001, " in said
