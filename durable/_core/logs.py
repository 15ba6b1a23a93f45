"""Logging, a consumer of the event stream: messages under the `durable`
logger, which has a NullHandler and nothing else (the stdlib convention for
libraries). INFO: a run starts, resumes, completes, is suspended, fails or
is interrupted; DEBUG: each operation; WARNING: retries, rebases, a lease
taken over. `DURABLE_LOG=info` (or `debug`) installs one stderr handler.

Also the notes added to exceptions that end a run (`add_note`)."""

from __future__ import annotations

import logging
import sys

from .._errortext import duration, try_said, warn
from .._settings import setting, when_configured
from ..errors import ConfigurationError
from . import events

logger = logging.getLogger("durable")
logger.addHandler(logging.NullHandler())

RESUME_HINT = "call again with the same run id to resume"
_FORMAT = "%(asctime)s durable %(levelname)s %(message)s"
_handler: logging.Handler | None = None


def add_note(exc: BaseException, note: str) -> None:
    """A note on exc (Python 3.11+), else a suffix to its message. A
    SystemExit's arguments are its exit code: it keeps them."""
    if sys.version_info >= (3, 11):
        exc.add_note(note)
    elif isinstance(exc, SystemExit):
        return
    elif exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]} [{note}]", *exc.args[1:])
    else:
        exc.args = (*exc.args, note)


def install_handler(level: str | int) -> logging.Handler:
    """One stderr handler on the `durable` logger at `level` ("info",
    "debug", ...), replacing the one installed before; returns it."""
    global _handler
    if isinstance(level, str):
        number = logging.getLevelName(level.strip().upper())
        if not isinstance(number, int):
            raise ConfigurationError(
                f"DURABLE_LOG: unknown log level {level!r}; use info, debug or warning"
            )
        level = number
    if _handler is not None:
        logger.removeHandler(_handler)
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter(_FORMAT))
    logger.addHandler(_handler)
    logger.setLevel(level)
    return _handler


def _step_line(event: events.OperationEvent) -> str:
    return f"run {event.run_id}: {event.kind} {event.position} {event.name!r}"


def _tried(event: events.StepRetried | events.StepFailed) -> str:
    return try_said(event.attempt, event.call_attempt, event.max_attempts)


def _run_started(event: events.RunStarted) -> None:
    if event.resumed and event.replayed:
        start = "the end" if event.resume_position is None else f"step {event.resume_position + 1}"
        logger.info(
            "resumed run %s from %s: %d replayed", event.run_id, start, event.replayed
        )
    elif event.resumed:
        logger.info("resumed run %s of %s: nothing to replay", event.run_id, event.workflow)
    else:
        logger.info("started run %s of %s", event.run_id, event.workflow)


def _operation(event: events.Event) -> None:
    if isinstance(event, events.StepRetried):
        logger.warning(
            "%s failed on %s (%s); retrying in %s",
            _step_line(event), _tried(event), event.error, duration(event.delay),
        )  # fmt: skip
    elif isinstance(event, events.StepFailed):
        logger.debug("%s failed on %s: %s", _step_line(event), _tried(event), event.error)
    elif isinstance(event, events.StepExecuted):
        logger.debug("%s executed in %.3fs", _step_line(event), event.duration)
    elif isinstance(event, events.StepReplayed):
        logger.debug("%s replayed", _step_line(event))


def _run_ended(event: events.Event) -> None:
    if isinstance(event, events.RunCompleted):
        if event.recorded:
            logger.info("run %s had completed: returned its recorded result", event.run_id)
        else:
            logger.info(
                "completed run %s: %d replayed, %d executed",
                event.run_id, event.replayed, event.executed,
            )  # fmt: skip
    elif isinstance(event, events.RunSuspended):
        logger.info("suspended run %s: %s", event.run_id, event.reason)
    elif isinstance(event, events.RunFailed):
        logger.info("run %s failed: %s; %s", event.run_id, event.error, RESUME_HINT)
    elif isinstance(event, events.RunInterrupted):
        logger.info("run %s interrupted (%s); %s", event.run_id, event.error, RESUME_HINT)
    elif isinstance(event, events.RunCancelled):
        logger.info("run %s cancelled; a restart runs it again", event.run_id)


def consume(event: events.Event) -> None:
    """The logging consumer: one message per event, no decisions of its own."""
    if isinstance(event, events.RunStarted):
        _run_started(event)
    elif isinstance(event, events.OperationEvent):
        _operation(event)
    elif isinstance(event, events.RunRebased):
        logger.warning(
            "run %s: definition changed (%s -> %s); replaying its records anyway (rebase)",
            event.run_id, event.old_fingerprint, event.new_fingerprint,
        )  # fmt: skip
    elif isinstance(event, events.RunWaiting):
        logger.info(
            "run %s is held by %s; waiting up to %gs for its lease", event.run_id, event.holder, event.wait
        )
    elif isinstance(event, events.LeaseTakenOver):
        logger.warning(
            "run %s was left running by a process that is gone or stalled; taking it over", event.run_id
        )
    else:
        _run_ended(event)


def _wants_steps() -> bool:
    return logger.isEnabledFor(logging.DEBUG)


def follow_setting(name: str = "log") -> None:
    """Install or remove the stderr handler as `configure(log=)`, else
    `DURABLE_LOG`, says ("off": none)."""
    global _handler
    if name != "log":
        return
    try:
        level = setting("log")
    except ConfigurationError as e:  # a bad log level never stops a run: say so, keep going
        warn(f"{e}; it is ignored: no log is printed for it. Fix or unset it")
        return
    if level != "off":
        install_handler(level)
    elif _handler is not None:
        logger.removeHandler(_handler)
        logger.setLevel(logging.NOTSET)
        _handler = None


events.subscribe(consume, gate=_wants_steps)
when_configured(follow_setting)
follow_setting()
