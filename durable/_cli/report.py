"""What `durable run` says where a run ended (completed, suspended,
stopped by a signal, failed), on stderr; the final value goes to stdout."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import traceback
from typing import Any

from .._errortext import PACKAGE, id_word, said_reason
from .._manage.document import run_doc, value_doc
from .._manage.history import describe
from .._manage.runs import RunInfo, run_info
from .._storage.base import Store
from ..errors import DurableError, RunKilledError, SerializationError
from . import howto
from .common import advised, command, rerun
from .format import value_text


class Report:
    """Says where a run ended, on stderr; the final value goes to stdout."""

    def __init__(self, args: argparse.Namespace, store: Store, workflow: str, run_id: str):
        self.debug = args.debug
        self.durable, self.rerun = command(args), rerun(args, run_id)
        self.store, self.workflow, self.run_id = store, workflow, run_id
        self.started = False  # this process started (or resumed) the run
        self.json = bool(getattr(args, "json", False))

    def say(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def document(self, **extra: Any) -> None:
        """`--json`: where the run ended, on stdout, as `durable runs --json`
        lists a run (`status`, `reason`, `error`, ...), and `extra`."""
        if not self.json:
            return
        info = self.info()
        doc = run_doc(info) if info else {"workflow": self.workflow, "runId": self.run_id, "status": None}
        print(json.dumps(doc | extra, indent=2), flush=True)

    def info(self) -> RunInfo | None:
        try:
            return run_info(self.store, self.workflow, self.run_id)
        except DurableError:
            return None  # stopped before its manifest was written

    def done(self, run: Any, *, existed: bool) -> int:
        if run.resumed_from_step is not None:
            n = run.resumed_from_step
            self.say(
                f"Resumed from step {n + 1} (position {n}): {run.steps_replayed} replayed, "
                f"{run.steps_executed} executed"
            )
        if existed and run.resumed_from_step is None and run.steps_executed == 0:
            # Its value is next: "run ... completed" between read as that value.
            self.say(f"run {id_word(self.run_id)} had already completed; its recorded value:")
        else:
            self.say(f"run {id_word(self.run_id)} completed")
        if self.json:
            self.document(**value_doc(lambda: run.value), resumedFromStep=run.resumed_from_step,
                          stepsReplayed=run.steps_replayed, stepsExecuted=run.steps_executed)  # fmt: skip
        else:
            print(value_text(run.value), flush=True)
        return 0

    def suspended(self, reason: str, waiting: str | None, at: object = None) -> int:
        """`at`: the position it waits at, as the run's own Suspended says; the
        first unrecorded one may lie past a rerun's records not reached yet."""
        info = self.info()
        pos = at if isinstance(at, int) else info.position or 0 if info else 0
        self.say(f"run {id_word(self.run_id)} suspended at step {pos + 1} (position {pos}): {said_reason(reason)}")
        answer = howto.answer_flags(info, reason, waiting)
        self.say(f"  continue with: {self.rerun} --resume {answer}".rstrip())  # no parameter: nothing to give
        self.document(waitingFor=waiting)
        return 3

    def stopped(self, signum: int | None) -> int:
        info = self.info()
        name = signal.Signals(signum).name if signum is not None else "request_stop()"
        if not self.started:  # stopped waiting for the lease: the run is its holder's
            self.say(f"stopped waiting for run {id_word(self.run_id)} ({name}); nothing was executed here")
            self.document()
            return 128 + (signum if signum is not None else signal.SIGINT)
        steps = info.steps if info else 0
        self.say(
            f"run {id_word(self.run_id)} interrupted by {name} with {steps} step{'s' if steps != 1 else ''} "
            f"recorded{self._kept()}"
        )
        self.say(f"  continue with: {self.rerun} --resume")
        self.document()
        return 128 + (signum if signum is not None else signal.SIGINT)

    def _kept(self) -> str:
        """The items a checkpointed `loop_over` block kept: "0 steps
        recorded" alone read as if the block's finished items were lost."""
        try:
            info, steps = describe(self.store, self.workflow, self.run_id)
        except DurableError:
            return ""
        kept = [s for s in steps if s.kind == "loop" and s.position == info.position and s.preview]
        if not kept:
            return ""
        return f" and {kept[0].preview} in {kept[0].name} (a resume does not run them again)"

    def failed(self, exc: BaseException) -> int:
        if self.debug:
            traceback.print_exception(type(exc), exc, exc.__traceback__)
        message = str(exc).strip().splitlines()
        self.say(
            f"run {id_word(self.run_id)} failed{self._where(exc)}: "
            f"{type(exc).__name__}: {advised(message[0], self.durable) if message else ''}"
        )
        if not self.debug and (at := raised_at(exc)):
            self.say(f"  raised at {at} (--debug prints the traceback)")
        if isinstance(exc, RunKilledError) and exc.run_id == self.run_id:  # a resume is refused again
            for line in howto.killed_ways(self.durable, self.store, self.workflow, self.run_id, exc.times):
                self.say(line)
            self.document()
            return 1
        # The usual fix, an edit of the failed step, makes a plain resume refused as changed code.
        self.say(f"  fix the cause, then: {self.rerun} --resume (after an edit of the code: "
                 f"{self.rerun} --resume --on-change rerun, which runs again from the first "
                 "step that changed)")  # fmt: skip
        self.document()
        return 1

    def _where(self, exc: BaseException) -> str:
        try:
            info, steps = describe(self.store, self.workflow, self.run_id)
        except DurableError:
            return ""
        pos = info.position if info.position is not None else info.steps
        pos = exc.position if isinstance(exc, RunKilledError) else pos  # the step that killed it left no record
        names = [s.name for s in steps if s.position == pos and s.status != "changed"]
        # A step whose output could not be recorded left no record: its error names it.
        unrecorded = exc.step if isinstance(exc, SerializationError) else "the workflow body"
        unrecorded = (exc.step or "the step its process died in") if isinstance(exc, RunKilledError) else unrecorded
        return f" at step {pos + 1} (position {pos}, {names[0] if names else unrecorded})"  # as `suspended()`


def raised_at(exc: BaseException) -> str:
    """The innermost line outside durable the error went through (`file, line
    N, in name: text`): its type and message alone did not say what to fix."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(PACKAGE)]
    if not frames:
        return ""
    last, here = frames[-1], os.path.relpath(frames[-1].filename)
    where = f"{last.filename if here.startswith('..') else here}, line {last.lineno}, in {last.name}"
    return where + (f": {last.line.strip()}" if last.line else "")
