"""The exception tree. Every error carries structured fields and a message
that says what to do next. This module imports nothing from the package
but the leaves `_errortext`, `_damagetext` and `_valuetext` (which import
nothing of durable), so every part of it may raise these.

    DurableError                      every error durable raises
    ├── RunNotFoundError              (also a LookupError)
    ├── DefinitionChangedError        a refusal: code or arguments differ
    ├── NondeterminismError           a refusal: another step at a position
    ├── RunLockedError                another process holds the run
    │   └── LeaseLostError            this process lost the run it held
    ├── SerializationError
    ├── StorageError
    ├── CorruptRecordError
    ├── IntegrityError
    ├── RunKilledError                its process died N times in one step
    ├── ArtifactMissingError
    ├── ConfigurationError            (also a ValueError)
    ├── ValidationError               a step's output failed its validate=
    └── Suspended, Cancelled          also ControlFlow, see below

    ControlFlow (BaseException)       a run ended on purpose, not a failure
    ├── Suspended                     waiting for a person (a DurableError too)
    ├── Cancelled                     `durable cancel` (a DurableError too)
    └── Stopped                       a graceful stop (a SystemExit too)

`ControlFlow` lets code tell the two signals from failures: retries, item
failures and error reports never count them, and user code that catches
broadly can let them through with `except durable.ControlFlow: raise`.
`Suspended` stays a `DurableError` (and so an `Exception`): code written
against earlier versions catches it that way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._damagetext import artifact_missing_text, corrupt_record_text
from ._errortext import (
    RERUN,
    Position,
    arguments_message,
    lease_lost_text,
    other_call,
    plain_data,
    shell_words,
)  # fmt: skip
from ._errortext import stamp as _stamp
from ._valuetext import preview_of
from ._valuetext import reduce_error as _reduce


class DurableError(Exception):
    """Base class of every error raised by durable."""

    __reduce__ = _reduce


class RunNotFoundError(DurableError, LookupError):
    def __init__(self, workflow: str, run_id: str, store: str, *, resuming: bool = False) -> None:
        self.workflow, self.run_id, self.store = workflow, run_id, store
        self.start = start = " or call the workflow without resume() to start it" if resuming else ""  # not of history()
        super().__init__(
            f"no run {run_id!r} of workflow {workflow!r} in store {store}; nothing was run or changed. Check the "
            f"run id (`durable {shell_words('runs', workflow)}` lists them){start}."
        )


class DefinitionChangedError(DurableError):
    """The code or the arguments of a run differ from what was recorded.

    `changed_steps` names the steps whose code changed; `changed_arguments`
    maps each workflow argument that differs from the completed run's to
    `"old -> new"` previews (empty when the arguments are not the issue)."""

    def __init__(
        self, workflow: str, run_id: str, old: str, new: str, changed: Mapping[str, str],
        position: Position | None = None, *, arguments: Mapping[str, str] | None = None, note: str = "",
    ) -> None:
        # `note`: said after what changed, that the change may be durable's own (`rules.rules_note`).
        self.workflow, self.run_id, self.note = workflow, run_id, note
        self.old_fingerprint, self.new_fingerprint = old, new
        self.changed_steps, self.changed_arguments, self.position = dict(changed), dict(arguments or {}), position
        if self.changed_arguments:
            super().__init__(arguments_message(workflow, run_id, self.changed_arguments))
            return
        lines = [f"  - {name}: {why}" for name, why in sorted(self.changed_steps.items())]
        detail = ("\n".join(lines) if lines else "  - (the workflow body itself)") + (f"\n{note}" if note else "")
        if position is None:
            head = (
                f"run {run_id!r} of {workflow!r} was recorded with definition {old} but the "
                f"code now has {new}; changed:\n{detail}\nNothing was executed."
            )
        elif old == new:
            head = (
                f"run {run_id!r} of {workflow!r}: the record at position {position} {other_call(changed)}:"
                f"\n{detail}\nNo step from position {position} on was executed."
            )
        else:
            head = (
                f"run {run_id!r} of {workflow!r}: the record at position {position} does not "
                f"match the call made now (recorded step fingerprint {old}, now {new}):\n"
                f"{detail}\nNo step from position {position} on was executed."
            )
        super().__init__(
            head + " Ways out:\n"
            "  * start fresh: with_options(restart=True) / durable run --restart\n"
            "  * continue deliberately with the old records: with_options(rebase=True) / "
            "--rebase-checkpoint\n"
            "  * re-run from the first changed step: " + RERUN
        )


_NO_WAIT = "Wait for it to finish, or pass with_options(wait=SECONDS) to wait for the lease."
_WAITED = "Waited {:g}s for the lease; wait longer with with_options(wait=SECONDS)."


class NondeterminismError(DurableError):
    def __init__(self, run_id: str, position: Position, recorded: str, called: str) -> None:
        self.run_id, self.position, self.recorded, self.called = run_id, position, recorded, called
        super().__init__(
            f"run {run_id!r}: at position {position} the workflow called step {called!r} "
            f"but the record there is for step {recorded!r}. The workflow body must call "
            "the same steps in the same order on every run: move non-deterministic choices "
            "(time, randomness, I/O) into steps, or start fresh with restart=True."
        )


class RunLockedError(DurableError):
    def __init__(
        self, run_id: str, holder: str, since: float, expires: float, *, waited: float = 0.0
    ) -> None:
        self.run_id, self.holder, self.since, self.expires = run_id, holder, since, expires
        self.waited = waited  # seconds this call waited for the lease (with_options(wait=))
        super().__init__(
            f"run {run_id!r} is being executed by {holder} (since {_stamp(since)}, lease "
            f"expires {_stamp(expires)}). {_WAITED.format(waited) if waited else _NO_WAIT}"
        )


class LeaseLostError(RunLockedError):
    """This process held the run, stalled past its lease, and another
    process took the run over: it must not execute another step."""

    def __init__(
        self, run_id: str, position: Position | None = None, *, why: str | None = None,
        written: bool = False,
    ) -> None:  # fmt: skip
        self.run_id, self.holder, self.since, self.expires = run_id, "another process", 0.0, 0.0
        self.waited, self.written = 0.0, written  # written: found lost after the write landed
        self.position, self.why = position, why
        DurableError.__init__(self, lease_lost_text(run_id, why, position, written))


class SerializationError(DurableError):
    """`advice`: the way out for a value that is not a step's output."""

    def __init__(
        self, step: str, type_name: str, cause: str, *, advice: str | None = None,
        pickles: bool = True, subject: str | None = None,
    ) -> None:
        self.step, self.type_name = step, type_name
        super().__init__(
            f"{subject or f'the output of {step!r}'} (type {type_name}) cannot be recorded: {cause}. "
            + (advice or f"{plain_data(pickles)}, or mark the step persist=False. Earlier "
               "records are intact; fix it and call again to resume.")
        )  # fmt: skip


class StorageError(DurableError):
    """The store could not be read or written. `advice` says what to do about
    this cause (free space, permissions, network, ...)."""

    def __init__(self, url: str, cause: str, advice: str = "") -> None:
        self.url, self.cause, self.advice = url, cause, advice
        hint = f" {advice[:1].upper()}{advice[1:]}." if advice else ""
        super().__init__(f"store {url} failed: {cause}.{hint} Records already written are intact.")


class CorruptRecordError(DurableError):
    """A record or manifest that can't be used; `newer`: intact, in a newer format."""

    def __init__(
        self, run_id: str, position: Position | None, key: str, why: str, *,
        advice: str | None = None, newer: int | None = None, unloadable: bool = False,
    ) -> None:
        self.run_id, self.position, self.key, self.newer = run_id, position, key, newer
        super().__init__(corrupt_record_text(run_id, position, key, why, advice, newer, unloadable))


class IntegrityError(DurableError):
    def __init__(
        self, key: str, why: str, *, run_id: str | None = None, position: Position | None = None,
        advice: str | None = None,
    ) -> None:  # fmt: skip
        self.key, self.run_id, self.position = key, run_id, position
        at = "" if position is None else f", position {position}"
        where = "" if run_id is None else f"run {run_id!r}{at}: "
        advice = advice or "Someone without the signing key wrote it, or the key differs: check DURABLE_SIGNING_KEY."
        super().__init__(f"{where}{key}: {why}. The object was not decoded. {advice}")


class RunKilledError(DurableError):
    """The run's process was killed `times` times in a row at `position` (OOM, os._exit, kill -9)."""

    def __init__(self, workflow: str, run_id: str, position: int, step: str | None, times: int) -> None:
        self.workflow, self.run_id, self.position, self.step, self.times = workflow, run_id, position, step, times
        at = f"step {step!r} (position {position})" if step else f"position {position}"
        super().__init__(f"run {run_id!r} of {workflow!r}: its process was killed {times} time{'s' if times != 1 else ''} in a row at {at} (out of memory? os._exit? kill -9?); the run is marked failed and that step was not run again. "
                         f"Fix the cause, then try again with DURABLE_MAX_RECOVERY_ATTEMPTS={times + 1} (0: no limit), change the step, or restart=True.")  # fmt: skip


class ControlFlow(BaseException):
    """A run ended on purpose, not because something failed: `Suspended`
    or `Stopped`. A BaseException, so `except Exception` around a step's
    own code does not swallow `Stopped`; check `isinstance(e, ControlFlow)`
    to tell `Suspended` from a failure."""

    __reduce__ = _reduce


class Suspended(DurableError, ControlFlow):
    """The run waits for a person (`durable.suspend(reason)`); resume it
    with the missing arguments as overrides, or (`waiting_for`, the name of
    the `durable.wait_for` it stopped at) with `inputs={name: value}`."""

    workflow: str | None = None  # the run's, once it stopped (its message says how to answer)

    def __init__(
        self, run_id: str, reason: str, *, waiting_for: str | None = None, child: str | None = None,
        position: Position | None = None,
    ) -> None:  # fmt: skip
        # `waiting_for`: the `wait_for` the run stopped at, answered in inputs=
        # (as its reason says); `child`: the child run that stopped, if not run_id.
        self.run_id, self.reason, self.waiting_for, self.child = run_id, reason, waiting_for, child
        self.position = position  # of the wait_for or suspend() (in `child` when set)
        how = "" if waiting_for else f" Resume it with workflow.resume({run_id!r}, name=value, ...)."
        where = f" (in its child run {child!r})" if child else ""
        super().__init__(f"run {run_id!r} is suspended{where}: {reason}.{how}")


class Cancelled(DurableError, ControlFlow):
    """The run was cancelled (`durable cancel`): only a restart runs it again."""

    def __init__(self, workflow: str, run_id: str) -> None:
        self.workflow, self.run_id = workflow, run_id
        super().__init__(
            f"run {run_id!r} of {workflow!r} was cancelled; nothing more of it runs. Start it afresh if need be: "
            ".with_options(restart=True) on the workflow, or --restart on the `durable run` line of the run (`durable show` of the run prints it)."
        )


class Stopped(SystemExit, ControlFlow):
    """A graceful stop (`request_stop()`, a signal under `stop_on_signals()`),
    raised once the step in flight is recorded (`at_once`: by a second signal, in
    it too); the run ends `interrupted`. A SystemExit: code 128 + signal (130 when no signal asked)."""

    def __init__(self, signum: int | None = None, at_once: bool = False) -> None:
        import signal  # here: its enums cost every `import durable` 2% of a process's start

        super().__init__(128 + (signum if signum is not None else signal.SIGINT))
        self.signum, self.at_once, self._by = signum, at_once, signal.Signals(signum).name if signum else "request_stop()"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.signum, self.at_once))  # its `code` is set by `__init__` only

    def __str__(self) -> str:  # not its code alone: a stopped run's error read "Stopped: 130"
        return f"stopped {'at once by a second ' if self.at_once else 'by '}{self._by} (exit code {self.code})"


class ArtifactMissingError(DurableError):
    """A file or folder a step produced is gone or differs, and the step may
    not be run again (`artifacts_policy="refuse"`), or it never appeared."""

    def __init__(self, run_id: str, position: Position, step: str, url: str, state: str) -> None:
        self.run_id, self.position, self.step = run_id, position, step
        self.url = url
        self.state = state
        super().__init__(artifact_missing_text(run_id, position, step, url, state))


class ConfigurationError(DurableError, ValueError):
    """A decorator, option or argument that cannot work, caught before running."""


class ValidationError(DurableError):
    """A step's output failed its `validate=`: the attempt failed (retries apply)."""

    def __init__(self, step: str, validator: str, output: Any, why: str) -> None:
        self.step, self.validator = step, validator
        super().__init__(
            f"step {step!r}: its output {preview_of(output)} failed validation by "
            f"{validator} ({why}); the output was not recorded. Fix the step or the "
            "validator; the step runs again on the next try or resume."
        )
