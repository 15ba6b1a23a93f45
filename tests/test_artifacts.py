"""Artifacts: files a step produced are checked before its record is replayed.

Every test counts executions of the step bodies and asserts exact numbers."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core import replay
from durable._storage.files import artifact_states
from durable._storage.records import StepRecord

Build = tuple[Any, "Counter[str]"]


def make_build(root: Path, store: Any, **build_options: Any) -> Build:
    """clone -> build -> package; each writes files under root and registers
    them three different ways: a folder, a folder, a file via artifacts=."""
    counts: Counter[str] = Counter()
    fail = {"package": False}

    @durable.step(name="clone")
    def clone(repo: str) -> str:
        counts["clone"] += 1
        src = root / "src"
        src.mkdir(parents=True, exist_ok=True)
        (src / "main.c").write_text(f"// {repo}\nint main(void) {{ return 0; }}\n")
        (src / "README").write_text("hello\n")
        durable.artifact(src)
        return str(src)

    @durable.step(name="build", **build_options)
    def build(src: str) -> str:
        counts["build"] += 1
        out = root / "build"
        out.mkdir(exist_ok=True)
        (out / "app.bin").write_bytes(b"BIN1" + Path(src, "main.c").read_bytes())
        durable.artifact(out / "app.bin")
        return str(out)

    @durable.step(name="package", artifacts=lambda tar: [tar])
    def package(build_dir: str) -> str:
        counts["package"] += 1
        if fail["package"]:
            raise RuntimeError("disk full")
        dist = root / "dist"
        dist.mkdir(exist_ok=True)
        tar = dist / "app.tar"
        tar.write_bytes(b"TAR:" + Path(build_dir, "app.bin").read_bytes())
        return str(tar)

    @durable.workflow(name="release", store=store, run_id="release-1")
    def release(repo: str) -> str:
        return package(build(clone(repo)))

    release.fail = fail  # type: ignore[attr-defined]
    return release, counts


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Relative display of paths in reasons ("artifact work/build/app.bin missing").
    monkeypatch.chdir(tmp_path)
    return tmp_path / "work"


@pytest.fixture
def store(tmp_path: Path) -> durable.Store:
    return durable.open_store(tmp_path / "store")


def records(store: durable.Store, run_id: str = "release-1") -> dict[int, StepRecord]:
    return replay.load_context(store, "release", run_id, "refuse").records


def rewrite_same_size(path: Path) -> None:
    """New content, same size, same mtime: only a content digest sees it."""
    st = path.stat()
    data = path.read_bytes()
    path.write_bytes(bytes([data[0] ^ 0x01]) + data[1:])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_records_keep_url_kind_size_mtime_digest(work: Path, store: durable.Store) -> None:
    release, counts = make_build(work, store)
    assert release("org/app") == str(work / "dist" / "app.tar")
    recs = records(store)
    (src,) = recs[0].artifacts
    assert src["url"] == str(work / "src") and src["kind"] == "folder"
    assert src["size"] == (work / "src" / "main.c").stat().st_size + 6
    (binary,) = recs[1].artifacts
    assert (
        binary["kind"] == "file" and binary["size"] == (work / "build" / "app.bin").stat().st_size
    )
    assert binary["mtime"] == (work / "build" / "app.bin").stat().st_mtime
    assert len(binary["digest"]) == 64
    (tar,) = recs[2].artifacts
    assert tar["url"] == str(work / "dist" / "app.tar")
    assert [s["state"] for r in recs.values() for s in artifact_states(r, store)] == ["present"] * 3
    assert counts == {"clone": 1, "build": 1, "package": 1}


def test_untouched_artifacts_replay_without_execution(work: Path, store: durable.Store) -> None:
    release, counts = make_build(work, store)
    release("org/app")
    run = release.run("org/app")
    assert run.status == "completed" and run.steps_executed == 0
    # New mtimes, same content: a digest check still trusts the records.
    for f in (work / "src" / "main.c", work / "build" / "app.bin"):
        os.utime(f, (1_000_000, 1_000_000))
    assert release("org/app") == str(work / "dist" / "app.tar")
    assert counts == {"clone": 1, "build": 1, "package": 1}


def test_resume_checks_artifacts_of_replayed_steps(work: Path, store: durable.Store) -> None:
    release, counts = make_build(work, store)
    release.fail["package"] = True
    with pytest.raises(RuntimeError, match="disk full"):
        release("org/app")
    release.fail["package"] = False
    run = release.run("org/app")  # clone and build checked, present, replayed
    assert (run.steps_replayed, run.steps_executed, run.resumed_from_step) == (2, 1, 2)
    assert counts == {"clone": 1, "build": 1, "package": 2}


def test_resume_of_a_failed_run_reruns_a_step_whose_output_was_deleted(
    work: Path, store: durable.Store
) -> None:
    release, counts = make_build(work, store)
    release.fail["package"] = True
    with pytest.raises(RuntimeError, match="disk full"):
        release("org/app")
    (work / "build" / "app.bin").unlink()
    release.fail["package"] = False
    run = release.run("org/app")
    assert (run.steps_replayed, run.steps_executed, run.resumed_from_step) == (1, 2, 1)
    assert counts == {"clone": 1, "build": 2, "package": 2}
    assert records(store)[1].extra["reopened"] == "artifact work/build/app.bin missing"


def test_deleted_build_output_reruns_build_and_everything_after(
    work: Path, store: durable.Store
) -> None:
    release, counts = make_build(work, store)
    release("org/app")
    shutil.rmtree(work / "build")
    run = release.run("org/app")
    assert counts == {"clone": 1, "build": 2, "package": 2}
    assert (run.steps_replayed, run.steps_executed, run.resumed_from_step) == (1, 2, 1)
    assert (work / "build" / "app.bin").exists() and (work / "dist" / "app.tar").exists()
    recs = records(store)
    assert recs[1].extra["reopened"] == "artifact work/build/app.bin missing"
    assert "reopened" not in recs[0].extra and "reopened" not in recs[2].extra
    release("org/app")  # everything is back: nothing runs
    assert counts == {"clone": 1, "build": 2, "package": 2}


def test_same_size_new_content_is_detected_by_digest(work: Path, store: durable.Store) -> None:
    release, counts = make_build(work, store)
    release("org/app")
    rewrite_same_size(work / "build" / "app.bin")
    release("org/app")
    assert counts == {"clone": 1, "build": 2, "package": 2}
    assert records(store)[1].extra["reopened"] == "artifact work/build/app.bin changed"


def test_folder_gaining_a_file_reopens_from_the_first_step(
    work: Path, store: durable.Store
) -> None:
    release, counts = make_build(work, store)
    release("org/app")
    (work / "src" / "stray.o").write_bytes(b"")
    run = release.run("org/app")
    assert counts == {"clone": 2, "build": 2, "package": 2}
    assert run.resumed_from_step is None and run.steps_executed == 3  # reopened at 0
    assert records(store)[0].extra["reopened"] == "artifact work/src changed"


def test_mtime_mode_sees_size_and_mtime_but_not_same_size_rewrites(
    work: Path, store: durable.Store
) -> None:
    release, counts = make_build(work, store, verify="mtime")
    release("org/app")
    assert records(store)[1].artifacts[0]["digest"] is None  # nothing was hashed
    binary = work / "build" / "app.bin"
    rewrite_same_size(binary)  # what verify="mtime" cannot see
    release("org/app")
    assert counts == {"clone": 1, "build": 1, "package": 1}
    os.utime(binary, (1_000_000, 1_000_000))  # a touch is a change to it
    release("org/app")
    assert counts == {"clone": 1, "build": 2, "package": 2}
    with binary.open("ab") as f:  # so is a size change, whatever the mtime
        f.write(b"+")
    release("org/app")
    assert counts == {"clone": 1, "build": 3, "package": 3}


def test_refuse_policy_raises_and_runs_nothing(work: Path, store: durable.Store) -> None:
    release, counts = make_build(work, store, artifacts_policy="refuse")
    release("org/app")
    backup = (work / "build" / "app.bin").read_bytes()
    (work / "build" / "app.bin").unlink()
    with pytest.raises(durable.ArtifactMissingError) as info:
        release("org/app")
    err = info.value
    assert (err.run_id, err.position, err.step, err.state) == ("release-1", 1, "build", "missing")
    assert err.url == "work/build/app.bin" and "restart=True" in str(err)
    assert counts == {"clone": 1, "build": 1, "package": 1}
    assert sorted(records(store)) == [0, 1, 2]  # nothing was discarded
    (work / "build" / "app.bin").write_bytes(backup)
    release("org/app")
    assert counts == {"clone": 1, "build": 1, "package": 1}


def test_artifact_states_report_present_missing_changed(work: Path, store: durable.Store) -> None:
    release, _ = make_build(work, store)
    release("org/app")
    shutil.rmtree(work / "src")
    rewrite_same_size(work / "dist" / "app.tar")
    recs = records(store)
    states = [artifact_states(recs[p], store)[0]["state"] for p in (0, 1, 2)]
    assert states == ["missing", "present", "changed"]


def test_registered_path_that_does_not_exist_fails_the_step(
    tmp_path: Path, store: durable.Store
) -> None:
    ran: list[str] = []

    @durable.step(name="forgetful")
    def forgetful() -> int:
        ran.append("x")
        durable.artifact(tmp_path / "never-written")
        return 1

    @durable.workflow(name="release", store=store, run_id="r")
    def release() -> int:
        return forgetful()

    with pytest.raises(durable.ArtifactMissingError) as info:
        release()
    assert info.value.state == "not produced" and ran == ["x"]
    assert records(store, "r") == {}


def test_a_failed_attempt_leaves_no_registrations(tmp_path: Path, store: durable.Store) -> None:
    attempts: list[int] = []

    @durable.step(name="flaky", retries=1, retry_delay=0.0)
    def flaky() -> str:
        attempts.append(len(attempts))
        if len(attempts) == 1:
            durable.artifact(tmp_path / "half-written")  # never appears
            raise OSError("connection reset")
        (tmp_path / "done").write_text("ok")
        return str(durable.artifact(tmp_path / "done"))

    @durable.workflow(name="release", store=store, run_id="r")
    def release() -> str:
        return flaky()

    release()
    assert attempts == [0, 1]
    assert [a["url"] for a in records(store, "r")[0].artifacts] == [str(tmp_path / "done")]


def test_artifact_outside_a_step() -> None:
    assert durable.artifact("plain/call.txt") == "plain/call.txt"
    p = Path("x.txt")
    assert durable.artifact(p) is p

    @durable.workflow(store="memory://durable-artifacts-body", run_id="r")
    def body_registers() -> None:
        durable.artifact("x.txt")

    with pytest.raises(durable.ConfigurationError, match=r"inside the @durable\.step"):
        body_registers()
    with pytest.raises(durable.ConfigurationError, match="verify"):
        durable.artifact("x", verify="size")
    with pytest.raises(durable.ConfigurationError, match="artifacts_policy"):
        durable.step(artifacts_policy="skip")


def test_async_steps_register_artifacts(work: Path, store: durable.Store) -> None:
    counts: Counter[str] = Counter()

    @durable.step(name="fetch")
    async def fetch() -> str:
        counts["fetch"] += 1
        work.mkdir(exist_ok=True)
        path = work / "model.bin"
        await asyncio.to_thread(path.write_bytes, b"weights")
        return str(durable.artifact(path))

    @durable.step(name="serve")
    async def serve(path: str) -> int:
        counts["serve"] += 1
        return len(Path(path).read_bytes())

    @durable.workflow(name="release", store=store, run_id="release-1")
    async def release() -> int:
        return await serve(await fetch())

    assert asyncio.run(release()) == 7
    assert asyncio.run(release()) == 7
    (work / "model.bin").unlink()
    assert asyncio.run(release()) == 7
    assert counts == {"fetch": 2, "serve": 2}


# -- the same on S3 (moto server) -------------------------------------------


@pytest.fixture
def s3_base(request: pytest.FixtureRequest) -> str:
    try:
        return str(request.getfixturevalue("s3_url"))
    except pytest.FixtureLookupError:
        pytest.skip("needs the s3_url fixture (moto server) from tests/conftest.py")


def test_artifact_on_s3_is_checked_before_replay(s3_base: str) -> None:
    pytest.importorskip("s3fs")
    store = durable.open_store(f"{s3_base}/store")
    fs: Any = store.fs  # type: ignore[attr-defined]
    model_url = f"{s3_base}/artifacts/model.bin"
    folder_url = f"{s3_base}/artifacts/shards"
    counts: Counter[str] = Counter()

    @durable.step(name="train")
    def train(content: bytes) -> str:
        counts["train"] += 1
        fs.pipe_file(model_url, content)
        fs.pipe_file(f"{folder_url}/a", b"shard-a")
        fs.pipe_file(f"{folder_url}/b/c", b"shard-c")
        durable.artifact(model_url)
        durable.artifact(folder_url)
        return model_url

    @durable.step(name="evaluate")
    def evaluate(url: str) -> int:
        counts["evaluate"] += 1
        return len(fs.cat_file(url))

    @durable.workflow(name="pipeline", store=store, run_id="s3-run")
    def pipeline(content: bytes) -> int:
        return evaluate(train(content))

    def call() -> int:
        return pipeline.with_options(run_id="s3-run")(b"weights-v1")

    assert call() == 10
    recs = replay.load_context(store, "pipeline", "s3-run", "refuse").records
    kinds = [(a["url"], a["kind"]) for a in recs[0].artifacts]
    assert kinds == [(model_url, "file"), (folder_url, "folder")]
    assert call() == 10  # untouched: replayed
    assert counts == {"train": 1, "evaluate": 1}
    fs.rm(model_url)
    assert call() == 10
    assert counts == {"train": 2, "evaluate": 2}
    fs.pipe_file(model_url, b"weights-v2")  # same size, new content
    assert artifact_states(recs[0], store)[0]["state"] == "changed"
    assert call() == 10
    assert counts == {"train": 3, "evaluate": 3}
    fs.pipe_file(f"{folder_url}/b/c", b"shard-X")  # a file inside the folder
    assert call() == 10
    assert counts == {"train": 4, "evaluate": 4}
    reopened = replay.load_context(store, "pipeline", "s3-run", "refuse").records[0]
    assert reopened.extra["reopened"] == f"artifact {folder_url} changed"


@pytest.mark.parametrize("completed", [True, False], ids=["re-called", "resumed"])
def test_a_child_runs_file_gone_makes_the_parent_run_the_child_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, completed: bool
) -> None:
    """The parent replays a child's value without running the child: the
    files the child's steps made are checked on the parent's behalf."""
    monkeypatch.chdir(tmp_path)
    store = durable.open_store(tmp_path / "runs")
    ran: list[str] = []

    @durable.step
    def produce(x: int) -> str:
        ran.append("produce")
        Path(f"p{x}.txt").write_text(f"v{x}-{len(ran)}")
        return durable.artifact(f"p{x}.txt")

    @durable.workflow(store=store)
    def child(x: int) -> str:
        return Path(produce(x)).read_text()

    @durable.step
    def consume(v: str, fail: bool) -> str:
        ran.append("consume")
        if fail:
            raise RuntimeError("the parent stops after its child")
        return v.upper()

    @durable.workflow(store=store, run_id="par")
    def parent(x: int, fail: bool = False) -> str:
        return consume(child(x), fail)

    if completed:
        assert parent(1) == "V1-1"
    else:
        with pytest.raises(RuntimeError):
            parent(1, fail=True)
    (tmp_path / "p1.txt").unlink()
    assert parent(1) == "V1-3"  # made again, never the value built on the gone file
    assert (tmp_path / "p1.txt").read_text() == "v1-3"
    assert ran == ["produce", "consume", "produce", "consume"]
