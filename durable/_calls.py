"""The API's calls as a user sees them fail: a mistyped keyword that names
the option meant, and an exception leaving durable shown with the user's
frames and durable's one-paragraph message, not the frames of durable's
code between them (`@durable.step` on a generator function showed four of
them above its message, `wf()` without an argument six). One rule, for
the decorators and option-taking calls (`keywords`) and for a workflow or
step call (`_core.shown.for_user`); `DURABLE_TRACEBACK=full` (the project's
own tests set it) keeps every frame."""

from __future__ import annotations

import functools
import inspect
import os
import sysconfig
import types
from collections.abc import Callable
from typing import Any, TypeVar

from ._errortext import and_list, near
from .errors import DurableError, SerializationError

# DURABLE_TRACEBACK's words (any other is warned of: `_settings`): full keeps durable's frames.
TRACEBACKS = ("full", "short")
_OWN = os.path.dirname(os.path.abspath(__file__)) + os.sep
# Set on a TypeError that is the caller's (a call that does not bind): shown
# at the caller's line, as Python shows it for a plain function.
_CALLERS = "_durable_callers"


def callers(error: TypeError) -> TypeError:
    """`error`, marked as the caller's mistake (a call that does not bind):
    none of durable's frames tells where to look."""
    setattr(error, _CALLERS, True)
    return error


def users_frames(error: BaseException) -> bool:
    """Cut durable's frames from `error`'s traceback and from those of the
    exceptions it was raised from or while handling, unless
    DURABLE_TRACEBACK=full; whether it did."""
    if os.environ.get("DURABLE_TRACEBACK", "").strip().lower() == TRACEBACKS[0]:
        return False
    seen: set[int] = set()
    todo: list[BaseException | None] = [error]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        _cut(e)
        if isinstance(e, SerializationError) and e.__cause__ is not None and not _written(e.__cause__):
            # The pickler's frames, printed above the message, said less than it
            # does (which part of the value, what to do); full keeps them.
            e.__cause__, e.__suppress_context__ = None, True
        todo += [e.__cause__, e.__context__]
    return True


def _written(error: BaseException) -> bool:
    """Whether the user's own code is among `error`'s frames (a `__reduce__`
    of theirs that raised), not only durable's and libraries' (cloudpickle's)."""
    tb = error.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not durables_frame(tb) and not name.startswith(_libraries()) and not name.startswith("<"):
            return True
        tb = tb.tb_next
    return False


@functools.cache
def _libraries() -> tuple[str, ...]:
    """Where the standard library and installed packages live: not a user's code."""
    import sysconfig  # an error's path only: not on `import durable`'s

    return tuple({sysconfig.get_paths()[k] + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def _cut(e: BaseException) -> None:
    entries = []
    tb = e.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    users = [i for i, t in enumerate(entries) if not durables_frame(t) and not _library(t)]
    ours = [i for i, t in enumerate(entries) if durables_frame(t)]
    # Raised in durable's code, or in a library's that durable's called, but no
    # refusal nor the caller's mistake: its path from the user's last frame on
    # stays (a fault of ours), all of it when none is the user's (an OSError a
    # StorageError was raised from). Judged by the last frame alone, a library
    # raising for durable's wrong call was shown at the user's line.
    said = isinstance(e, DurableError) or getattr(e, _CALLERS, False)
    whole = bool(ours) and ours[-1] > (users[-1] if users else -1) and isinstance(e, Exception) and not said
    below = (users[-1] + 1 if users else 0) if whole else len(entries)
    kept = [t for t in entries[:below] if not durables_frame(t)] + entries[below:]
    if len(kept) == len(entries):
        return
    cut: types.TracebackType | None = None
    for t in reversed(kept):  # new entries: the old ones may be another exception's too
        cut = types.TracebackType(cut, t.tb_frame, t.tb_lasti, t.tb_lineno)
    e.__traceback__ = cut


def durables_frame(tb: types.TracebackType) -> bool:
    """An entry of a traceback in durable's own code."""
    return tb.tb_frame.f_code.co_filename.startswith(_OWN)


# Where Python's own modules and installed packages lie: no user's code.
_LIBRARIES = ("<frozen ", *{os.path.join(sysconfig.get_paths()[k], "") for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def _library(tb: types.TracebackType) -> bool:
    return tb.tb_frame.f_code.co_filename.startswith(_LIBRARIES)


def at_callers(fn: F) -> F:
    """`fn`, a call of the API (`open_store`, `gc`, `wf.history`, ...), its
    errors shown from the caller's frames (`users_frames`)."""

    @functools.wraps(fn)
    def shown(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if users_frames(e):
                raise e  # durable's own frames left out: DURABLE_TRACEBACK=full shows them
            raise

    return shown  # type: ignore[return-value]


# The keywords of the API's option-taking calls, by the name a user calls them by.
_KEYWORDS: dict[str, tuple[str, ...]] = {}
F = TypeVar("F", bound=Callable[..., Any])


def keywords(called: str, *, runs_steps: bool = False) -> Callable[[F], F]:
    """Check a call's keyword names before the call: a mistyped one
    (`step(retry=3)`, `with_options(retires=2)`) is a TypeError that says the
    option meant, here or in another of these calls; Python before 3.13 said
    only "unexpected keyword argument". What the call raises is shown from
    the user's frames (`users_frames`), but for a call that `runs_steps`
    (`loop_over`): inside a run, the run's end decides that."""

    def wrap(fn: F) -> F:
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        given = [p for p in inspect.signature(fn).parameters.values() if p.kind in kinds and p.name != "self"]
        known = frozenset(p.name for p in given)
        # The options listed: the keyword-only ones, not `loop_over`'s fn and items.
        options = [p.name for p in given if p.kind is p.KEYWORD_ONLY] or [p.name for p in given]
        _KEYWORDS[called] = tuple(options)

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            if not known.issuperset(kwargs):
                raise callers(TypeError(_unknown(called, next(k for k in kwargs if k not in known))))
            if runs_steps:
                return fn(*args, **kwargs)
            try:  # as `at_callers`, in this frame: one of durable's shown, not two
                return fn(*args, **kwargs)
            except Exception as e:
                if users_frames(e):
                    raise e  # durable's own frames left out: DURABLE_TRACEBACK=full shows them
                raise

        return checked  # type: ignore[return-value]

    return wrap


def _unknown(called: str, word: str) -> str:
    said = f"{called}() got an unexpected keyword argument {word!r}"
    if meant := near(word, _KEYWORDS[called], n=2):  # `retry`: retry_on or retries, both near
        return f"{said}; did you mean {and_list(meant, 'or')}?"
    elsewhere = {o: name for name, options in reversed(_KEYWORDS.items()) if name != called for o in options}
    if meant := near(word, elsewhere):  # the nearest of all: `retires` is step's retries, not Cache's expire
        takers = [f"{name}()" for name, options in _KEYWORDS.items() if name != called and meant[0] in options]
        # Every call that takes it: `durability` is not configure()'s alone.
        return f"{said}; {meant[0]} is an option of {and_list(takers)}, not of {called}()"
    return f"{said}; its options: {', '.join(_KEYWORDS[called])}"


def an_option(name: str, words: list[str], call: str = "(...)") -> str:
    """`wf(1, run_id="r1")`, `wf.resume(r, restart=True)`: options of
    with_options() passed as the workflow's arguments, said with the call
    that takes them ("" when none of `words` is one)."""
    options = [w for w in words if w in _KEYWORDS.get("with_options", ())]
    if not options:
        return ""
    are = "is an option, not an argument" if len(options) == 1 else "are options, not arguments"
    return f"; {and_list(options)} {are}: {name}.with_options({', '.join(f'{w}=...' for w in options)}){call}"
