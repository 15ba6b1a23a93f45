"""A fork whose source is removed (`durable rm`, `gc`) while the fork reads
it. The fork holds no lease of its source (a reader), so a removal can land
between its reads: it then said that the source's record was damaged
(CorruptRecordError "blob missing", with advice to restart the run) or that
position 0 was not finished, of a run that was neither damaged nor
unfinished, only gone; and one removed and started afresh under the id
(the same folder on a local store) was forked from the new run's records
under the removed run's manifest (its arguments, fingerprint). It now says
that the run was removed while it was being forked, and leaves nothing
under the new id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import durable
from durable._manage.delete import delete_run

ran: list[int] = []


@durable.step(name="big")
def big(i: int) -> str:
    ran.append(i)
    return "x" * 2000 + str(i)  # over the store's blob threshold below: a blob


@durable.workflow(name="removed45", run_id="src")
def removed45() -> list[int]:
    return [len(big(i)) for i in range(3)]


@pytest.mark.parametrize("during", ["peek_records", "get_blob", "restarted"])
def test_a_source_removed_while_it_is_forked_is_said_to_be_gone_not_damaged(
    tmp_path: Path, during: str
) -> None:
    store = durable.open_store(str(tmp_path / "runs"), blob_threshold=1000)
    wf = removed45.with_options(store=store)
    ran.clear()
    assert wf.run().value == [2001] * 3

    class Removing(type(store)):  # type: ignore[misc]
        """The real store; the removal lands just before the fork's read."""

        def peek_records(self, workflow: str, run_id: str) -> dict[str, bytes]:
            if during in ("peek_records", "restarted"):
                delete_run(store, workflow, run_id)
            if during == "restarted":  # and started afresh: its records are another run's
                store.__class__ = plain
                wf.run()
                store.__class__ = Removing
            return super().peek_records(workflow, run_id)  # type: ignore[no-any-return]

        def get_blob(self, workflow: str, run_id: str, digest: str) -> Any:
            if during == "get_blob" and run_id == "src" and store.list("removed45/src/"):
                delete_run(store, workflow, run_id)
            return super().get_blob(workflow, run_id, digest)

    plain, store.__class__ = type(store), Removing
    with pytest.raises(durable.RunNotFoundError, match="removed while it was being forked"):
        wf.fork("src", at=2, new_run_id="f")
    left = {k.split("/")[1] for k in store.list("removed45/")}
    assert left == ({"src"} if during == "restarted" else set())  # never a half-made fork
    assert ran == ([0, 1, 2, 0, 1, 2] if during == "restarted" else [0, 1, 2])
