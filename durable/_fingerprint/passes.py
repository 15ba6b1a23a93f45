"""One fingerprinting pass: what it asked once, answered again from what
it found, for the rest of the outermost pass (a step's fingerprint with
every helper, global and step it reaches, or a step's at decoration).

The analysis asks the same questions over and over: where each global is
bound, for every name a statement reads, in each function that reads it
(tens of thousands of times for a module of a few steps). Inside one pass
no user code edits a module's text, so an answer found once holds for the
rest of it; what finding it witnessed (`witness`) is remembered again by
each asker, so a memoised fingerprint is checked against the same inputs
as when computed afresh. A file edited meanwhile is a change at the next
check, as when read again. An answer that raised is not kept: asked
again, it raises again.

Pure standard library."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from .witness import Witness, call_key, forward, recording, remember

T = TypeVar("T")
_Calls = list[tuple[Callable[..., Any], tuple[Any, ...], Any]]
# The value, the calls it witnessed, the witnesses forwarded into it, the arguments (held).
_Answer = tuple[Any, _Calls, list[Witness], tuple[Any, ...]]

_ANSWERS: ContextVar[dict[Any, _Answer] | None] = ContextVar("durable_pass_answers", default=None)


@contextmanager
def one_pass() -> Iterator[None]:
    """Within it (the outermost one counts), each question is answered once."""
    token = _ANSWERS.set({}) if _ANSWERS.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _ANSWERS.reset(token)


def per_pass(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn`, answered once per pass for the same arguments (keyed as a
    witness keys a call: a string by its text, anything else by identity;
    the arguments are held, so their ids stay theirs)."""

    @functools.wraps(fn)
    def answered(*args: Any) -> T:
        answers = _ANSWERS.get()
        if answers is None:
            return fn(*args)
        key = call_key(fn, args)
        hit = answers.get(key)
        if hit is None:
            try:
                with recording(Witness()) as seen:
                    value = fn(*args)
            finally:  # raised too: what it read counts for the asker, who may catch it
                _told(seen.calls + seen.files, [*seen.absorbed()])
            answers[key] = (value, seen.calls + seen.files, [*seen.absorbed()], args)
            return value
        _told(hit[1], hit[2])
        return hit[0]  # type: ignore[no-any-return]

    return answered


def _told(calls: _Calls, inner: list[Witness]) -> None:
    for call in calls:
        remember(*call)
    for witness in inner:
        forward(witness)
