"""Damaged and planted objects: every offset of a run's log, manifest and
blob truncated and bit-flipped; pickles planted in every place a value is
read from; symlinks planted in place of a run's files and folders.

Never a wrong value: a damaged run either resumes to the right value
(re-executing what was lost) or raises a named `DurableError`; a planted
pickle never runs; nothing outside the store is written or deleted."""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import durable
from durable import _cli
from durable._manage import delete as _delete
from durable._storage.manifest import read_manifest, write_manifest
from durable._storage.records import StepRecord, seal, unseal
from tests.faults import flows
from tests.faults.common import Outcome

N = 6  # steps of the damaged run; position 2's output is a blob


@contextlib.contextmanager
def env(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def pristine(folder: Path) -> Path:
    """A local store holding one open run ("open": every step recorded, the
    body stopped after them) and one completed run ("done")."""
    root = folder / "pristine"
    store = flows.open_store(str(root))
    with env(FAULT_STOP="1"), contextlib.suppress(RuntimeError):
        flows.call("sync", N, "open", store)
    flows.call("sync", N, "done", store)
    return root


def targets(root: Path) -> dict[str, Path]:
    run = root / "sync_flow" / "open"
    (blob,) = (run / "blobs").iterdir()
    return {
        "log": run / "records.log",
        "manifest": run / "run",
        "blob": blob,
        "result manifest": root / "sync_flow" / "done" / "run",
    }


def damage_every_offset(folder: Path, stride: int, rng: random.Random) -> Outcome:
    """Each offset (every `stride`-th) of each object, truncated there and
    with one bit flipped there; the run is then called again."""
    outcome = Outcome("truncate / flip every offset")
    root = pristine(folder)
    work = folder / "work"
    for what, path in targets(root).items():
        data = path.read_bytes()
        rel = path.relative_to(root)
        run_id = "done" if what == "result manifest" else "open"
        for offset in range(0, len(data), stride):
            flipped = bytearray(data)
            flipped[offset] ^= 1 << rng.randrange(8)
            for how, bad in (("cut", data[:offset]), ("flip", bytes(flipped))):
                shutil.rmtree(work, ignore_errors=True)
                shutil.copytree(root, work)
                (work / rel).write_bytes(bad)
                _call_damaged(outcome, f"{what} {how} at {offset}", work, run_id)
    return outcome


def _call_damaged(outcome: Outcome, trial: str, root: Path, run_id: str) -> None:
    outcome.trials += 1
    try:
        value = flows.call("sync", N, run_id, flows.open_store(str(root)))
    except durable.DurableError as e:
        outcome.endings[type(e).__name__] += 1
        return
    except Exception as e:
        outcome.violation(trial, f"raised {type(e).__name__}, not a named error: {e}")
        return
    if value != flows.expected(N):
        outcome.violation(trial, "returned a wrong value")
    outcome.endings["right value"] += 1


# -- planted pickles ----------------------------------------------------------


class Planted:
    """Unpickling this creates a file: the stand-in for arbitrary code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def plant(store: durable.Store, where: str, marker: Path) -> str:
    """Plant a pickle as someone who can write to the store (but has no
    signing key) would; return the run it was planted in."""
    evil = pickle.dumps(Planted(marker))
    if where in ("step record", "blob"):
        name = "steps/00000000" if where == "step record" else "steps/00000002"
        raw = store.load_records("sync_flow", "open")[name]
        rec = StepRecord.from_bytes(unseal(raw, store.signing_key, run_id="open",
                                           position=None, name=name))  # fmt: skip
        rec.encoding, rec.value, rec.blob = "p", evil, None
        if where == "blob":
            rec.value, rec.blob = None, store.put_blob("sync_flow", "open", seal(evil, None))
        store.replace_record("sync_flow", "open", name, seal(rec.to_bytes(), None))
        return "open"
    run_id = "open" if where == "manifest arguments" else "done"
    manifest = read_manifest(store, "sync_flow", run_id)
    assert manifest is not None
    if where == "manifest arguments":
        manifest.args_encoding, manifest.args, manifest.args_blob = "p", evil, None
    else:
        manifest.result_encoding, manifest.result, manifest.result_blob = "p", evil, None
    saved, store.signing_key = store.signing_key, None  # the attacker has no key
    try:
        write_manifest(store, manifest)
    finally:
        store.signing_key = saved
    return run_id


PLANTS = ["step record", "blob", "manifest arguments", "manifest result"]
READERS: dict[str, Callable[[durable.Store, str], Any]] = {
    "run": lambda store, run_id: flows.call("sync", N, run_id, store),
    "history": lambda store, run_id: _runs_history(store, run_id),
    "fork": lambda store, run_id: flows.FLOWS["sync"].with_options(store=store).fork(
        run_id, at=3, mutate=lambda v: v
    ),
    "durable show": lambda store, run_id: _show(store, run_id),
}
DEFENCES = ["allow_pickle=False", "DURABLE_ALLOW_PICKLE=0", "signing key"]


def _runs_history(store: durable.Store, run_id: str) -> Any:
    from durable._manage import history as _history

    return _history.history(store, "sync_flow", run_id)


def _show(store: durable.Store, run_id: str) -> Any:
    flags = [] if store.allow_pickle else ["--no-pickle"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return _cli.main(["show", run_id, "--store", store.url, *flags])


def planted_pickles(folder: Path) -> Outcome:
    """Every plant, read by every reader, under every defence."""
    outcome = Outcome("planted pickles")
    folder.mkdir(parents=True, exist_ok=True)
    for defence in DEFENCES:
        key = {"signing_key": "k"} if defence == "signing key" else {}
        root = folder / f"plants-{DEFENCES.index(defence)}"
        with env(FAULT_STOP="1"), contextlib.suppress(RuntimeError):
            flows.call("sync", N, "open", durable.open_store(root, **key))
        flows.call("sync", N, "done", durable.open_store(root, **key))
        for where in PLANTS:
            for reader, read in READERS.items():
                work = folder / "plant-work"
                shutil.rmtree(work, ignore_errors=True)
                shutil.copytree(root, work)
                marker = folder / "pwned"
                run_id = plant(durable.open_store(work, **key), where, marker)
                outcome.trials += 1
                options = {"allow_pickle": False} if defence == "allow_pickle=False" else key
                refuse = "0" if defence == "DURABLE_ALLOW_PICKLE=0" else "1"
                with env(DURABLE_ALLOW_PICKLE=refuse):
                    try:
                        read(durable.open_store(work, **options), run_id)
                        outcome.endings["read, not decoded"] += 1
                    except durable.DurableError as e:
                        outcome.endings[type(e).__name__] += 1
                if marker.exists():
                    marker.unlink()
                    outcome.violation(f"{where}, {reader}, {defence}", "the planted pickle ran")
    return outcome


# -- planted symlinks ---------------------------------------------------------


SYMLINKS = ["lease", "records.log", "run", "blobs", "run folder", "workflow folder"]


def planted_symlinks(folder: Path) -> Outcome:
    """A symlink in place of each of a run's files and folders, pointing
    outside the store; then the run is run, removed and gc'd."""
    outcome = Outcome("planted symlinks")
    folder.mkdir(parents=True, exist_ok=True)
    for what in SYMLINKS:
        root, outside = folder / f"sym-{what.replace(' ', '-')}", folder / f"outside-{what}"
        outside.mkdir()
        (outside / "precious").write_text("keep me")
        (outside / "run").write_text("not a manifest")
        run = root / "sync_flow" / "linked"
        if what == "workflow folder":
            root.mkdir()
            (root / "sync_flow").symlink_to(outside)
        elif what == "run folder":
            run.parent.mkdir(parents=True)
            run.symlink_to(outside)
        else:
            run.mkdir(parents=True)
            target = outside if what == "blobs" else outside / "precious"
            (run / what).symlink_to(target)
        before = {p.name: p.read_bytes() for p in outside.iterdir()}
        for action in ("run", "rm", "gc"):
            outcome.trials += 1
            try:
                _act(action, durable.open_store(root, blob_threshold=2048))
                outcome.endings[f"{action}: done"] += 1
            except durable.DurableError as e:
                outcome.endings[f"{action}: {type(e).__name__}"] += 1
            after = {p.name: p.read_bytes() for p in outside.iterdir()}
            if after != before:
                outcome.violation(f"{what}, {action}", "a file outside the store changed")
    return outcome


def _act(action: str, store: durable.Store) -> None:
    if action == "run":
        flows.call("sync", N, "linked", store)
    elif action == "rm":
        _delete.delete_run(store, "sync_flow", "linked")
    else:
        durable.gc(store, keep_last=0)
