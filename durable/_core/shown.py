"""What a user sees of an exception that leaves a workflow or step call:
their own frames (the line that called it, the body, the step, what those
call) and durable's one-paragraph message, not the twenty frames of the
engine between them, which in a notebook buried both. An error raised in
durable's code that is neither a `DurableError` nor the caller's mistake
(a call that does not bind: `_calls.callers`), a fault of durable's, keeps
its frames from the user's last one down to the raise: where to look.
Every error keeps them all under `DURABLE_TRACEBACK=full` (the project's
own tests set it)."""

from __future__ import annotations

from .._calls import users_frames
from .context import current_state


def for_user(error: BaseException) -> bool:
    """Whether `error` leaves the outermost durable call (none under way
    here) to be shown to a user, then with durable's frames cut from its
    traceback and from those of the exceptions it was raised from or while
    handling (`_calls.users_frames`, the rule the decorators' errors follow)."""
    return current_state() is None and users_frames(error)
