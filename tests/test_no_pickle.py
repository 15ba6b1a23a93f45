"""Refusing pickles reaches every reader (issue 11, item 5).

A pickle that creates a file when loaded is planted in each place a value is
read from: a step record, a blob, a checkpointed loop item, the manifest's
arguments and its result. Each reader (a run resuming or returning a
completed run, history previews, fork with mutate, and the `durable` command)
is then pointed at it with pickles refused, by `allow_pickle=False`,
`DURABLE_ALLOW_PICKLE=0` or `--no-pickle`: the file never appears. The same
plant read with pickles allowed does create it, so each plant is real."""

from __future__ import annotations

import contextlib
import importlib.util
import pickle
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage.manifest import read_manifest, write_manifest
from durable._storage.records import RunRecord, StepRecord, seal, unseal

from .clikit import child_env, write_flow
from .clikit import durable as durable_cli
from .conftest import rewrite_record


class Planted:
    """Unpickling this creates a file: the stand-in for arbitrary code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


FLOW = '''
import os
import durable

@durable.step(name="plant.small")
def small(i: int) -> dict:
    return {"i": i}

@durable.step(name="plant.big")
def big() -> bytes:
    return b"B" * 4096

@durable.step(name="plant.item")
def item(x: int) -> int:
    if x == 2 and os.environ.get("FAIL_AT_ITEM_2"):
        raise RuntimeError("item 2 fails; items 0 and 1 are kept")
    return x * x

@durable.workflow(name="plant")
def plant_flow(n: int = 3) -> list:
    a = small(0)                                                   # position 0
    b = big()                                                      # position 1, a blob
    items = durable.loop_over(item, range(n), checkpoint_items=True)  # position 2
    return [a, len(b), items]
'''


def load_flow(tmp: Path) -> Any:
    """The workflow file, imported in this process: `name=` (other than the
    function's own name) pins every fingerprint, so it is the same workflow
    `durable run` loads as __main__."""
    path = write_flow(tmp, FLOW, "plantflow.py")
    spec = importlib.util.spec_from_file_location(f"plantflow_{uuid.uuid4().hex}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.plant_flow


def open_plain(root: Path, **options: Any) -> durable.Store:
    return durable.open_store(root, blob_threshold=1024, **options)


def make_runs(root: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run `open` stopped inside its loop (items 0 and 1 kept) and run
    `done` completed, both with pickles allowed."""
    flow = load_flow(tmp).with_options(store=open_plain(root))
    monkeypatch.setenv("FAIL_AT_ITEM_2", "1")
    with pytest.raises(RuntimeError, match="item 2 fails"):
        flow.with_options(run_id="open")()
    monkeypatch.delenv("FAIL_AT_ITEM_2")
    assert flow.with_options(run_id="done")() == [{"i": 0}, 4096, [0, 1, 4]]


def rewrite(store: durable.Store, run_id: str, name: str, change: Callable[[StepRecord], None]) -> None:
    raw = store.load_records("plant", run_id)[name]
    rec = StepRecord.from_bytes(unseal(raw, None, run_id=run_id, position=None, name=name))
    change(rec)
    rewrite_record(store, ("plant", run_id), name, seal(rec.to_bytes(), None), None)


def plant_pickle(store: durable.Store, where: str, marker: Path) -> str:
    """Plant, as someone who can write to the store would; return the run."""
    evil = pickle.dumps(Planted(marker))

    def inline(rec: StepRecord) -> None:
        rec.encoding, rec.value, rec.blob = "p", evil, None

    def blob(rec: StepRecord) -> None:
        rec.encoding, rec.value = "p", None
        rec.blob = store.put_blob("plant", "open", seal(evil, None))

    if where in ("step record", "blob", "loop item"):
        name = {
            "step record": "steps/00000000",
            "blob": "steps/00000001",
            "loop item": "items/00000002/00000000",
        }[where]
        rewrite(store, "open", name, blob if where == "blob" else inline)
        return "open"
    run_id = "open" if where == "manifest arguments" else "done"
    manifest = read_manifest(store, "plant", run_id)
    assert isinstance(manifest, RunRecord)
    if where == "manifest arguments":
        manifest.args_encoding, manifest.args = "p", evil
    else:
        manifest.result_encoding, manifest.result = "p", evil
    write_manifest(store, manifest)
    return run_id


PLACES = ["step record", "blob", "loop item", "manifest arguments", "manifest result"]
# Which readers meet each plant (history and fork read step outputs only).
READERS = {
    "step record": ["run", "history", "fork"],
    "blob": ["run", "history", "fork"],
    "loop item": ["run"],
    "manifest arguments": ["run"],
    "manifest result": ["run"],
}
CASES = [(where, reader) for where in PLACES for reader in READERS[where]]


def read(flow: Any, reader: str, where: str, run_id: str) -> Any:
    if reader == "run":
        if where == "manifest arguments":  # only resume() reads the recorded arguments
            return flow.resume(run_id)
        return flow.with_options(run_id=run_id).run()
    if reader == "history":
        return flow.history(run_id)
    at = 1 if where == "step record" else 2
    return flow.fork(run_id, at=at, mutate=lambda value: value)


@pytest.mark.parametrize("policy", ["allow_pickle=False", "DURABLE_ALLOW_PICKLE=0"])
@pytest.mark.parametrize(("where", "reader"), CASES)
def test_a_planted_pickle_is_never_loaded_when_pickles_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, reader: str, policy: str
) -> None:
    root = tmp_path / "store"
    make_runs(root, tmp_path, monkeypatch)
    marker = tmp_path / "pwned"
    run_id = plant_pickle(open_plain(root), where, marker)
    if policy == "allow_pickle=False":
        store = open_plain(root, allow_pickle=False)
    else:
        monkeypatch.setenv("DURABLE_ALLOW_PICKLE", "0")
        store = open_plain(root, allow_pickle=True)  # the environment wins
    flow = load_flow(tmp_path).with_options(store=store)
    if reader == "history":
        steps = read(flow, reader, where, run_id)
        position = 0 if where == "step record" else 1
        step = steps[position + 1]  # after the "initial" entry (the arguments)
        preview = step.preview
        assert preview.startswith("<pickled value") and "allow_pickle=False" in preview
        with pytest.raises(durable.IntegrityError, match="allow_pickle=False"):
            step.value  # noqa: B018 - the full value is refused too, never returned
    else:
        with pytest.raises(durable.IntegrityError, match="allow_pickle=False"):
            read(flow, reader, where, run_id)
    assert not marker.exists()


@pytest.mark.parametrize(("where", "reader"), CASES)
def test_each_plant_is_real_when_pickles_are_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, reader: str
) -> None:
    root = tmp_path / "store"
    make_runs(root, tmp_path, monkeypatch)
    marker = tmp_path / "pwned"
    run_id = plant_pickle(open_plain(root), where, marker)
    flow = load_flow(tmp_path).with_options(store=open_plain(root))
    with contextlib.suppress(Exception):  # what the loaded object leads to varies
        read(flow, reader, where, run_id)
    assert marker.exists()


def test_fork_mutate_encodes_under_the_stores_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    make_runs(root, tmp_path, monkeypatch)
    flow = load_flow(tmp_path).with_options(store=open_plain(root, allow_pickle=False))
    with pytest.raises(durable.SerializationError, match="allow_pickle=False"):
        flow.fork("done", at=1, mutate=lambda value: ("a", "tuple"))
    assert [i.run_id for i in flow.runs()] == ["done", "open"]  # nothing left behind


@pytest.mark.parametrize("where", PLACES)
def test_the_command_line_never_loads_a_planted_pickle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    root = tmp_path / "store"
    make_runs(root, tmp_path, monkeypatch)
    marker = tmp_path / "pwned"
    run_id = plant_pickle(open_plain(root), where, marker)
    env = child_env(tmp_path, DURABLE_STORE=str(root))
    run = ["run", "plantflow.py:plant_flow", "--run-id", run_id]
    commands = [
        [*run, "--no-pickle"],
        ["show", run_id, "--no-pickle"],
        ["--no-pickle", "show", run_id, "--json"],
        ["runs", "--no-pickle"],
        ["fork", run_id, "--at", "2", "--new-run-id", f"{run_id}-copy", "--no-pickle"],
    ]
    refused = dict(env, DURABLE_ALLOW_PICKLE="0")
    results = [durable_cli(tmp_path, *args, env=env) for args in commands]
    results += [durable_cli(tmp_path, *args, env=refused) for args in (run, ["show", run_id])]
    assert not marker.exists()
    assert [r.returncode == 0 for r in results] == [False, True, True, True, True, False, True]
    if where in ("step record", "blob"):
        for shown in (results[1], results[6]):
            assert "not loaded under allow_pickle=False (--no-pickle)" in shown.stdout
    # The same command with pickles allowed does load it.
    durable_cli(tmp_path, *(["show", run_id] if where in ("step record", "blob") else run), env=env)
    assert marker.exists()


@pytest.mark.parametrize("word", ["flase", "disabled", "never", "O"])
def test_a_misspelt_allow_pickle_variable_refuses_instead_of_allowing_pickles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, word: str
) -> None:
    # Before: any word but 0/false/no/off left pickles allowed, silently.
    root = tmp_path / "store"
    make_runs(root, tmp_path, monkeypatch)
    marker = tmp_path / "pwned"
    run_id = plant_pickle(open_plain(root), "step record", marker)
    monkeypatch.setenv("DURABLE_ALLOW_PICKLE", word)
    with pytest.raises(durable.ConfigurationError, match="DURABLE_ALLOW_PICKLE must be one of"):
        load_flow(tmp_path).with_options(store=str(root), run_id=run_id).run()
    assert not marker.exists()
    env = child_env(tmp_path, DURABLE_STORE=str(root), DURABLE_ALLOW_PICKLE=word)
    shown = durable_cli(tmp_path, "show", run_id, env=env)
    # A command that only reads still shows the run (cli52), warned, and loads no pickle.
    assert shown.returncode == 0 and "warning: DURABLE_ALLOW_PICKLE" in shown.stderr, shown.stderr
    assert "loads no pickled value" in shown.stderr
    assert not marker.exists()


def test_the_allow_pickle_variable_reads_yes_and_no_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for word, allowed in [(" Off ", False), ("NO", False), ("yes", True), ("", True)]:
        monkeypatch.setenv("DURABLE_ALLOW_PICKLE", word)
        assert open_plain(tmp_path / "store").allow_pickle is allowed


def test_a_pickled_record_refused_by_allow_pickle_does_not_blame_the_signing_key(
    tmp_path: Path,
) -> None:
    """Before: "Someone without the signing key wrote it, or the key differs:
    check DURABLE_SIGNING_KEY", for a store with no signing key at all."""

    @durable.step
    def pair(n: int) -> tuple[int, int]:
        return (n, n)

    @durable.workflow(run_id="r")
    def flow() -> tuple[int, int]:
        return pair(1)

    root = tmp_path / "store"
    flow.with_options(store=durable.open_store(root))()
    refusing = flow.with_options(store=durable.open_store(root, allow_pickle=False))
    with pytest.raises(durable.IntegrityError) as refused:
        refusing.resume("r")
    assert "written by a process that allows pickled values" in str(refused.value)
    assert "DURABLE_SIGNING_KEY" not in str(refused.value)
