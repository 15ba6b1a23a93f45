"""Looking back at runs: listing them, reading their manifests.

Plain functions over a `Store` and a workflow name, so that the command line
can manage runs without importing the workflow's code; `Workflow.runs()`
delegates here (gc lives in `cleanup`, history in
`history`, forking in `fork`, deleting in `delete`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from typing import Any

from .._errortext import and_list, near, shell_words
from .._frozen import Frozen, dataclass
from .._storage.base import Store
from .._storage.keycheck import check_key_part, check_names
from .._storage.keys import as_position, is_step_record, manifest_key, position_of
from .._storage.manifest import decode_manifest, manifest_arguments
from .._storage.manifest import read_manifest as read_checked
from .._storage.noted import noted_level
from .._storage.records import RunRecord
from ..errors import (
    ConfigurationError,
    CorruptRecordError,
    IntegrityError,
    RunNotFoundError,
    StorageError,
)
from .missing import near_runs, not_the_commands, renamed_script
from .missing import no_folder as no_folder
from .missing import no_runs_of as no_runs_of
from .reads import Head, reading_run, summaries
from .summary import refused_text, summarize_error


@dataclass(frozen=True)
class RunInfo(Frozen):
    """One run as `Workflow.runs()` and `durable runs` show it."""

    workflow: str
    run_id: str
    # running, completed, failed, suspended, interrupted, cancelled, forked; corrupt,
    # unverified or newer (manifest damaged, not signed with this store's key, or
    # written by a newer version of durable); unreadable (the store failed to read it)
    status: str
    fingerprint: str
    created: float
    updated: float
    steps: int  # finished operations
    position: int | None  # first position not finished; None once completed
    error: str | None = None  # "Type: message" of the failure or interruption
    reason: str | None = None  # why a suspended run waits
    # "<workflow>/<run id>@<position>" of the run that called this one (a child run)
    parent: str | None = None
    # top-level positions of the run as its last completed attempt (or its
    # fork source) had them; None when unknown
    steps_total: int | None = None
    # (when, how the attempt before ended) for each time the run was resumed
    resumes: tuple[tuple[float, str], ...] = ()
    _store: Store | None = field(default=None, repr=False, compare=False)
    # Finished top-level positions: `steps` counts those inside asyncio tasks
    # too, `steps_total` only these. None when not known.
    top_level: int | None = None
    # A resume ran other code than records were made by (`lifecycle.start`): `listed`
    _older_code: bool = field(default=False, repr=False, compare=False)
    # The durability level its last attempt wrote under, as its manifest notes
    # it ("fsync" on an object store, where every PUT is durable); None: not noted
    durability: str | None = None
    # Why its last resume was refused before anything ran (`refused_text`); None once one runs
    refused: str | None = None

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments the run was started (or last resumed) with, as
        recorded, read from the store now (under its pickle policy)."""
        if self._store is None:
            raise ConfigurationError(f"run {self.run_id!r}: no store to read its arguments from")
        store = self._store
        return manifest_arguments(store, read_manifest(store, self.workflow, self.run_id))


def parent_of(info: RunInfo) -> tuple[str, str] | None:
    """(workflow, run id) of the run that called a child run, else None."""
    if info.parent is None:
        return None
    workflow, run_id = info.parent.rsplit("@", 1)[0].split("/", 1)
    return workflow, run_id


def list_runs(
    store: Store, workflow: str | None = None, *, status: str | Iterable[str] | None = None,
    keys: list[str] | None = None,
) -> list[RunInfo]:
    """Every run (of one workflow, or of all; with `status`, of that status
    or those), newest first: one listing (or `keys`, the caller's) and one
    batched read of the manifests, then each run's record names."""
    if status is not None:
        status = {status} if isinstance(status, str) else set(status)
        check_statuses(status)
    found = store.manifest_keys(listing(store, workflow) if keys is None else keys)
    heads = summaries(store, found)
    infos = [_listed(store, w, r, heads[w, r]) for w, r in found if (w, r) in heads]
    if status is not None:
        infos = [i for i in infos if i.status in status]
    return sorted(infos, key=lambda i: (i.updated, i.run_id), reverse=True)


def listing(store: Store, workflow: str | None = None) -> list[str]:
    """The keys of the store (of one workflow: a name checked first, so that
    `../other` lists nothing outside the store)."""
    if workflow is not None:
        check_key_part("workflow name", workflow)
    return store.list(f"{workflow}/" if workflow else "")


# Every status a run can list with (`RunInfo.status`).
RUN_STATUSES = ("running", "completed", "failed", "suspended", "interrupted", "cancelled",
                "forked", "corrupt", "unverified", "newer", "unreadable")  # fmt: skip


# The words a user guesses for a status (`--status done`), by the one meant.
_GUESSED = {"done": "completed", "finished": "completed", "succeeded": "completed", "success": "completed",
            "error": "failed", "errored": "failed", "paused": "suspended", "waiting": "suspended"}  # fmt: skip


def check_statuses(statuses: Iterable[str]) -> None:
    """Refuse a status no run can have: a filter by it would match nothing
    and say so only as "no runs"."""
    unknown = [s for s in statuses if s not in RUN_STATUSES]
    if unknown:
        meant = _GUESSED.get(unknown[0].lower()) or next(iter(near(unknown[0].lower(), RUN_STATUSES)), None)
        raise ConfigurationError(
            f"unknown run status {', '.join(map(repr, unknown))}: a run's status is one of "
            f"{', '.join(RUN_STATUSES)}{f'; did you mean {meant}?' if meant else ''}"
        )


def run_info(store: Store, workflow: str, run_id: str) -> RunInfo:
    check_names(workflow, run_id)
    with reading_run(workflow, run_id):
        raw = store.load_manifest(workflow, run_id)
        if raw is None:
            raise not_found(store, workflow, run_id)
        return _info(store, workflow, run_id, raw)


def _listed(store: Store, workflow: str, run_id: str, head: Head) -> RunInfo:
    """A run as a listing has it: one the store fails to read is listed
    `unreadable` with the store's error, never failing the whole listing."""
    try:
        with reading_run(workflow, run_id):
            if isinstance(head, StorageError):
                raise head
            return _info(store, workflow, run_id, head)
    except StorageError as e:
        return _unread(store, workflow, run_id, "unreadable", e)


def namesakes(store: Store, workflow: str, run_id: str, among: str = "") -> dict[str, bytes]:
    """The manifests of the runs of this id under other workflows (named `among.*`, if given)."""
    names = [w for w in store.workflows() if w != workflow and w.startswith(among)]
    return {w: raw for w in names if (raw := store.load_manifest(w, run_id)) is not None}


def waiting_child(store: Store, info: RunInfo) -> RunInfo | None:
    """The suspended child run a suspended run waits in, at its next
    position, under the id a child gets unless given one; else None."""
    if info.status != "suspended" or info.position is None:
        return None
    link, run_id = f"{info.workflow}/{info.run_id}@{info.position}", f"{info.run_id}.{info.position}"
    found = namesakes(store, info.workflow, run_id)
    children = [_info(store, w, run_id, raw) for w, raw in sorted(found.items())]
    return next((c for c in children if c.parent == link and c.status == "suspended"), None)


def not_found(store: Store, workflow: str, run_id: str, *, resuming: bool = False) -> RunNotFoundError:
    """The error of a look at a run that is not there (`resuming`: by a resume,
    which starting the run answers); when the run id exists under other
    workflows it names them: most often the same function started
    another way (`python flow.py` names it `flow.pipe`, an import `pipe`)."""
    missing = RunNotFoundError(workflow, run_id, store.url, resuming=resuming)
    folder = no_folder(store)
    if folder:  # not a wrong run id: the wrong store
        missing.args = (f"no run {run_id!r} of workflow {workflow!r} in store {store.url}: "
                        f"{folder}{missing.start}. Nothing was run or changed.",)  # fmt: skip
        return missing
    found = namesakes(store, workflow, run_id)
    others = sorted(found)
    same = [w for w in others if w.endswith(f".{workflow}") or workflow.endswith(f".{w}")]
    if others and not same:  # another workflow's run: a child run's id, most often
        parents = [parent_of(_info(store, w, run_id, found[w])) for w in others]
        parent = next((p for p in parents if p), None)
        several = len(others) > 1  # then `durable show RUN` alone asks for --workflow
        show = shell_words("show", run_id, *(("--workflow", others[0]) if several else ()))
        missing.args = (
            f"{missing} A run {run_id!r} exists under "
            f"{'other workflows' if several else 'another workflow'}, "
            f"{and_list(repr(w) for w in others)}"
            + (f": a child run of run {parent[1]!r} of {parent[0]!r}; resume that run, "
               "whose resume answers its child's waits." if parent else
               f": `durable {show}` shows {'the first' if several else 'it'}.{renamed_script(workflow, others)}"),
        )  # fmt: skip
    elif others:
        missing.args = (
            f"{missing} A run {run_id!r} exists under workflow "
            f"{and_list(repr(w) for w in same)}: the same function started another "
            "way (as a script, or imported as a module) has another name. Start it the "
            "way that run was started: @durable.workflow(name=...) gives both ways one "
            "name, but its steps keep theirs, so this run resumed the other way is "
            "refused as renamed code.",
        )
    else:
        missing.args = (near_runs(store, workflow, run_id, str(missing)),)
    if not_the_commands(store) and not store.url.startswith("memory://"):  # its commands, pasted, read it
        missing.args = (str(missing).replace("`durable ", f"`durable {shell_words('--store', store.url)} "),)
    return missing


def read_manifest(store: Store, workflow: str, run_id: str) -> RunRecord:
    manifest = read_checked(store, workflow, run_id)
    if manifest is None:
        raise not_found(store, workflow, run_id)
    return manifest


def _info(store: Store, workflow: str, run_id: str, raw: bytes) -> RunInfo:
    # Listed rather than raised, so that one bad run neither hides the others
    # nor stops gc, nor a look-up naming another workflow's run, and can be
    # looked at and removed. With the store: `arguments` raise its own error.
    try:
        m = decode_manifest(store, workflow, run_id, raw, summary_only=True)
        names = store.record_names(workflow, run_id)
    except CorruptRecordError as e:  # a newer durable's run is intact: never "corrupt"
        return _unread(store, workflow, run_id, "corrupt" if e.newer is None else "newer", e)
    except IntegrityError as e:  # unsigned, or signed with another key
        return _unread(store, workflow, run_id, "unverified", e)
    try:
        return _summary_info(store, m, names)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
        # Fields of the wrong shape in a manifest that decodes (a foreign or broken writer).
        why = f"undecodable: its summary is not a run's ({type(e).__name__}: {e})"
        error = CorruptRecordError(run_id, None, manifest_key(workflow, run_id), why)
        return _unread(store, workflow, run_id, "corrupt", error)


def _unread(store: Store, workflow: str, run_id: str, status: str, error: Exception) -> RunInfo:
    return RunInfo(workflow, run_id, status, "", 0.0, 0.0, 0, None, str(error), _store=store)


def _summary_info(store: Store, m: RunRecord, names: Iterable[str]) -> RunInfo:
    workflow, run_id = m.workflow, m.run_id
    steps = {p for n in names if is_step_record(n) and (p := position_of(n)) is not None}
    # Every finished operation counts; the next position is the body's (top-level) one.
    status = m.status
    # A holder that died (kill -9, power loss) never wrote its final status.
    if status == "running" and not store.is_held(workflow, run_id):
        status = "interrupted"
    position = None if status == "completed" else first_gap(p for p in steps if isinstance(p, int))
    error = None if m.error is None else summarize_error(m.error)
    link = m.extra.get("parent")
    # as_position: a position inside an asyncio task comes back from msgpack as a list
    parent = f"{link['workflow']}/{link['run_id']}@{as_position(link['position'])}" if link else None
    resumes = tuple((float(at), str(before)) for at, before in m.extra.get("resumes", ()))
    return RunInfo(
        workflow, run_id, status, m.fingerprint, m.created, m.updated, len(steps),
        position, error, m.reason, parent, m.steps_total(position), resumes, store,
        top_level=sum(1 for p in steps if isinstance(p, int)),
        _older_code=bool(m.extra.get("older_code")), durability=noted_level(m.extra),
        refused=None if status == "completed" else refused_text(m.extra.get("refused")),
    )  # fmt: skip


def first_gap(positions: Iterable[int]) -> int:
    have, p = set(positions), 0
    while p in have:
        p += 1
    return p
