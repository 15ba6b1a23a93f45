"""What a worker process sends back for an item, read in the workflow
process: its value, or its error with the traceback the worker saw."""

from __future__ import annotations

from typing import Any

from .._core import unkept
from .._storage import codec
from .handout import NotStarted


class RemoteTraceback(Exception):
    """Set as the cause of the innermost exception of an error raised in
    another process: its message is the traceback as the worker saw it."""

    def __str__(self) -> str:
        return f"\n{self.args[0]}" if self.args else ""


def unpack_outcome(data: bytes) -> Any:
    ok, value, tb, *made = codec.loads_callable(data)
    if ok:  # a persist=False step's output made there: held as one here
        return unkept.returned(value) if tb == unkept.UNKEPT else value
    if ok is None:  # not started (`run_pickled`): the block hands it out again
        raise NotStarted(value)
    if made == [unkept.UNKEPT]:  # an error raised where one was made: its text may spell it
        unkept.returned(value)
    # Dask carries remote tracebacks itself (tblib); a process pool does not.
    if tb and value.__traceback__ is None:
        inner = _innermost(value)
        if inner.__traceback__ is None:
            inner.__cause__ = RemoteTraceback(tb)
    raise value


def _innermost(e: BaseException) -> BaseException:
    """The first error of `e`'s chain (the one it was raised from or while
    handling, and so on), which pickling now keeps: the worker's traceback,
    shown below it, shows the whole chain."""
    seen = {id(e)}
    while True:
        nxt = e.__cause__ if e.__cause__ is not None else (None if e.__suppress_context__ else e.__context__)
        if nxt is None or id(nxt) in seen:
            return e
        seen.add(id(nxt))
        e = nxt
