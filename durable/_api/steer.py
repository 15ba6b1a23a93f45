"""Steering a workflow's runs from outside: `recover()` resumes every
interrupted or failed run whose holder is gone, one after another;
`cancel(run_id)` marks a run cancelled (`_manage.cancel`). A mixin of
`Workflow`, so that the sync and async classes share one plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._calls import at_callers
from .._core.context import Run
from .._core.plan import Plan, drive_async, drive_sync
from .._storage.base import Store
from ..errors import DurableError, RunLockedError

if TYPE_CHECKING:  # run management loads when recover() or cancel() is called
    from .._manage.cancel import Cancellation
    from .._manage.runs import RunInfo

# What recover() resumes; `running` is listed only while a live process
# holds the run (a dead holder's run lists as `interrupted`).
RECOVERABLE = ("interrupted", "failed")
# How a child run left to its parent's resume ends its report (`durable recover`).
LEFT_TO_PARENT = "recover that run; skipped"


class Steering:
    if TYPE_CHECKING:
        name: str

        def _store(self) -> Store: ...
        def _plan(
            self,
            args: tuple[Any, ...],
            kwargs: dict[str, Any],
            *,
            resume_id: str | None = None,
            overrides: dict[str, Any] | None = None,
            inputs: dict[str, Any] | None = None,
        ) -> Plan[Run[Any]]: ...

    def recover(self) -> list[Run[Any]]:
        """Resume every `interrupted` or `failed` run of this workflow whose
        holder is gone, oldest first, one after another; return one `Run`
        for each run looked at. A run held by a live process is skipped and
        reported with status `running`; a run that fails (or is refused)
        again is reported with its status and `error` instead of raising.
        A graceful stop (`Stopped`) ends the recovery."""
        return drive_sync(self._recover_plan())

    @at_callers
    def cancel(self, run_id: str, /) -> Cancellation:
        """Cancel a run: at once when no process holds it, else its holder
        stops at its next look for the mark (a step boundary, at most every
        `cancel_poll` seconds, or the run's end); either way it ends
        `cancelled` and is run again only by a restart. Refused for a
        completed run (and dropped when the holder completed the run
        before it could look: a cancel landing after the end's look)."""
        from .._manage.cancel import cancel_run

        return cancel_run(self._store(), self.name, run_id)

    def _recover_plan(self) -> Plan[list[Run[Any]]]:
        from .._manage.parents import parent_here
        from .._manage.runs import list_runs

        store = self._store()
        out: list[Run[Any]] = []
        for info in reversed(list_runs(store, self.name)):
            if info.status == "running":
                out.append(_report(info, "held by a live process; skipped"))
            elif info.status == "unreadable":  # maybe one to recover: never passed over unsaid
                out.append(_report(info, info.error or "the store could not read it"))
            elif info.status in RECOVERABLE and parent_here(store, info):
                # Resumed on its own, a child made by a run restarted since
                # ran its steps for nothing (its parent starts it afresh).
                out.append(_report(info, f"a child run of {info.parent}: {LEFT_TO_PARENT}"))
            elif info.status in RECOVERABLE:
                out.append((yield from self._recover_one(store, info)))
        return out

    def _recover_one(self, store: Store, info: RunInfo) -> Plan[Run[Any]]:
        try:
            return (yield from self._plan((), {}, resume_id=info.run_id))
        except RunLockedError:  # taken by another process since the listing
            return _report(info, "held by a live process; skipped", status="running")
        except Exception as e:  # a failure, a refusal, Suspended, Cancelled; Stopped ends it
            return _report(_now(store, info), f"{type(e).__name__}: {e}")


def _now(store: Store, info: RunInfo) -> RunInfo:
    from .._manage.runs import run_info

    try:
        return run_info(store, info.workflow, info.run_id)
    except DurableError:
        return info


def _report(info: RunInfo, error: str, *, status: str | None = None) -> Run[Any]:
    return Run(
        info.run_id, info.workflow, status or info.status, None, error, None, 0, 0,
        info.fingerprint,
    )  # fmt: skip


class AsyncSteering(Steering):
    async def recover(self) -> list[Run[Any]]:  # type: ignore[override]
        return await drive_async(self._recover_plan())
