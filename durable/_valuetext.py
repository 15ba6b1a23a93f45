"""A value or an error as durable's messages show it, and an error rebuilt
in another process: kept apart from `_errortext` (the words of messages) so
that each stays small. It imports nothing of durable."""

from __future__ import annotations

import reprlib
from typing import Any


def _restore(cls: type[BaseException], args: tuple[Any, ...]) -> BaseException:
    error = cls.__new__(cls)
    error.args = args
    return error


def reduce_error(self: BaseException) -> tuple[Any, ...]:
    # An error crosses a process boundary (a multiprocessing pool, a process
    # executor, Dask) by pickle, whose default calls `cls(*args)` with the
    # message alone; our `__init__`s take fields, so the parent got a
    # TypeError (a hung pool, a BrokenProcessPool) instead of the error.
    # Rebuilt without `__init__`: the message, then the fields (`__dict__`).
    return (_restore, (type(self), self.args), self.__dict__)


class _Short(reprlib.Repr):  # reprlib had no rule for bytes: a whole repr (300 MB) cut to 60 characters
    repr_bytes = repr_bytearray = reprlib.Repr.repr_str


_short = _Short()
_short.maxstring = _short.maxother = 60
_short.maxlist = _short.maxtuple = _short.maxset = _short.maxdict = 5
_short.maxlevel = 3


def error_message(exc: BaseException) -> str:
    """`str(exc)`, or what a traceback shows for an error whose `__str__`
    raises: taking a user's error's text (for its history, an event, a
    worker's report) must never raise in place of the error itself."""
    try:
        return str(exc)
    except Exception:
        return "<exception str() failed>"


def preview_of(value: Any, limit: int = 120) -> str:
    """A one-line, bounded repr for messages and listings."""
    text = _short.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
