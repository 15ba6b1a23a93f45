"""What a user sees of an exception that leaves a workflow or step call:
their own frames (the line that called it, the body, the step, what those
call) and durable's one-paragraph message, not the twenty frames of the
engine between them, which in a notebook buried both. An error raised in
durable's code that is no `DurableError` (a TypeError for a call that does
not bind, or a fault of durable's) keeps its frames from the user's last
one down to the raise: where to look. Every error keeps them all under
`DURABLE_TRACEBACK=full` (the project's own tests set it)."""

from __future__ import annotations

import os
import types

from ..errors import DurableError
from .context import current_state

_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def for_user(error: BaseException) -> bool:
    """Whether `error` leaves the outermost durable call (none under way
    here) to be shown to a user, then with durable's frames cut from its
    traceback and from those of the exceptions it was raised from or while
    handling."""
    if current_state() is not None or os.environ.get("DURABLE_TRACEBACK", "").strip().lower() == "full":
        return False
    seen: set[int] = set()
    todo: list[BaseException | None] = [error]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        _cut(e)
        todo += [e.__cause__, e.__context__]
    return True


def _cut(e: BaseException) -> None:
    entries = []
    tb = e.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    theirs = [i for i, t in enumerate(entries) if not _own(t)]
    # Raised in durable's code, but no refusal: its path from the user's
    # last frame on stays (a call that does not bind, or a fault of ours),
    # all of it when none is the user's (an OSError a StorageError was raised from).
    whole = bool(entries) and _own(entries[-1]) and isinstance(e, Exception) and not isinstance(e, DurableError)
    below = (theirs[-1] + 1 if theirs else 0) if whole else len(entries)
    kept = [t for t in entries[:below] if not _own(t)] + entries[below:]
    if len(kept) == len(entries):
        return
    cut: types.TracebackType | None = None
    for t in reversed(kept):  # new entries: the old ones may be another exception's too
        cut = types.TracebackType(cut, t.tb_frame, t.tb_lasti, t.tb_lineno)
    e.__traceback__ = cut


def _own(tb: types.TracebackType) -> bool:
    return tb.tb_frame.f_code.co_filename.startswith(_OWN)
