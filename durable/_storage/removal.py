"""Removing a run's objects (`Store.delete_run`: `durable rm`, `gc`,
`Workflow.delete`, a restart) under its lease, which nothing done after
can undo. A removal that stalled past its lease (a GC pause, SIGSTOP) while
another process took the run over and recorded in it would go on deleting
what it listed, the new holder's manifest and segments with it. So before
each batch it deletes, it asks the store whether it still holds the lease
(`Store.guard(now=True)`: a renewal, whatever its clocks say), and stops with
`LeaseLostError` when it does not. What is still in flight when the process
stalls (one batch) cannot be called back: a store without conditional
deletes has no way to refuse it. Landing after a takeover, it deletes
objects of the same names the new holder wrote since (a run started afresh
once the manifest was gone writes its records and blobs in a new
incarnation's folder, `keys.INCARNATION`, but a run recorded before
incarnations writes at the old names). So the removal asks once more after its last batch, and says
so when the run was taken over meanwhile, instead of reporting the run
removed; a resume that finds none of the records the run's last attempt
ended with refuses (`outcome.records_kept`) rather than run them again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errortext import shell_words
from ..errors import LeaseLostError
from .keys import CANCEL, blob_name, generation_of, run_of, run_prefix

if TYPE_CHECKING:
    from .base import Store

BATCH = 1000  # keys a batch: as many as one S3 DeleteObjects request takes


def remove_fenced(store: Store, workflow: str, run_id: str, keys: list[str]) -> None:
    """Delete a run's listed keys in `_order`, each batch under the lease."""
    done, total = 0, len(keys)
    for part in _order(workflow, run_id, keys):
        for start in range(0, len(part), BATCH):
            try:
                store.guard(workflow, run_id, now=True)
            except LeaseLostError as e:
                raise _stopped(run_id, e, done, total) from None
            batch = part[start : start + BATCH]
            store.delete(batch)
            done += len(batch)
    if done:
        try:
            store.guard(workflow, run_id, now=True)
        except LeaseLostError as e:
            raise _stopped(run_id, e, done, total, late=True) from None


def _order(workflow: str, run_id: str, keys: list[str]) -> list[list[str]]:
    """The manifest first, then the cancel marker, the records, blobs last.
    A removal cut short (`kill -9` in `durable rm` or `gc`) then leaves no
    run: never a manifest whose records are gone (its resume ran again the
    steps it lists as done), only objects the next call of the run id
    removes as left over. Generations oldest first: the manifest stays the
    newest until it goes. Blobs last: nothing left names a deleted blob."""
    prefix = run_prefix(workflow, run_id)
    blobs, marker = blob_name(""), prefix + CANCEL

    def rank(key: str) -> int:
        if run_of(key) is not None or generation_of(key) is not None:
            return 0
        name = key[len(prefix) :]  # a blob at the prefix, or in an incarnation's folder
        blob = name.startswith(blobs) or name.partition("/")[2].startswith(blobs)
        return 1 if key == marker else 3 if blob else 2

    ranked = sorted(keys, key=lambda k: (rank(k), k))
    return [[k for k in ranked if rank(k) == r] for r in range(4)]


def _stopped(
    run_id: str, lost: LeaseLostError, done: int, total: int, *, late: bool = False
) -> LeaseLostError:
    """What a removal that lost the lease says: what to do next is not a
    workflow call's (`lease_lost_text`), but a removal made again later.
    `late`: lost while its last batch was on its way (see the module)."""
    why = lost.why or "another process took the run over"
    error = LeaseLostError(run_id, why=f"{why}; the removal stopped")
    what = (
        f"the removal's last deletion ({total} objects listed) was on its way when the run was "
        f"taken over ({why}): it may have deleted objects the process that took the run over "
        "wrote since"
        if late
        else f"the removal stopped with {done} of its {total} objects deleted, as it lost the "
        f"run's lease ({why}): the process that took the run over goes on with it"
    )
    error.args = (
        f"run {run_id!r}: {what}. To remove the run still, once that process has ended, "
        f"`durable {shell_words('rm', run_id)}` removes it.",
    )
    return error
