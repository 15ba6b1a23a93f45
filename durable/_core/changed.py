"""What a refusal says about a call that no longer matches its record
(`replay.lookup` under on_change="refuse"): the arguments it is called with
now, or the argument that cannot be digested, and what to pass instead."""

from __future__ import annotations

from typing import Any

from .._errortext import preview_of
from .._storage.records import StepRecord
from .content import Undigestable, content_of
from .identity import value_digest


def arguments_changed(
    rec: StepRecord, digest: str | None, call: tuple[tuple[Any, ...], dict[str, Any]] | None
) -> str:
    """Why the record `rec` is not this call's, whose argument digest is
    `digest` now; `call` (the arguments, when known) is shown."""
    if is_token(digest) or is_token(rec.args_digest):
        return _undigestable(rec, digest, call)
    now_called = ""
    if call is not None:
        shown = [preview_of(a, 60) for a in call[0]]
        shown += [f"{k}={preview_of(v, 60)}" for k, v in call[1].items()]
        now_called = f"called now as {rec.name}({', '.join(shown)}); "
    return (
        f"arguments changed: {now_called}the record was made by a call with other "
        f"arguments (argument digest {rec.args_digest or 'unknown'}, now {digest or 'unknown'})"
        + (_IN_PLACE if call is not None and any(map(_changeable, _values(call))) else "")
    )


# An object given to a step may differ without any edit: an earlier step
# changed it in place when it ran, and its replay returned only its value.
_IN_PLACE = (
    ". If nothing was edited, an earlier step probably changed an object it was given "
    "in place (self.history.append(...), a list or dict argument) when it ran: a replay "
    "returns its recorded value but does not redo that change. Return the new state "
    "from the step instead of changing its arguments"
)


def _values(call: tuple[tuple[Any, ...], dict[str, Any]]) -> list[Any]:
    return [*call[0], *call[1].values()]


def _changeable(value: Any) -> bool:
    return not isinstance(value, (str, bytes, int, float, complex, bool, type(None), tuple, frozenset))


def is_token(digest: str | None) -> bool:
    """A digest that stands for arguments without one (`identity.fresh_token`)."""
    return digest is not None and digest.startswith("!")


def _undigestable(
    rec: StepRecord, digest: str | None, call: tuple[tuple[Any, ...], dict[str, Any]] | None
) -> str:
    """Why a call whose arguments (now or when recorded) have no digest can
    never match its record, and what to pass instead."""
    advice = (
        "pass a value that can be digested (plain data, a dataclass, an object that "
        "pickles; a list rather than a generator), or pass what identifies it (a key, "
        "a path, a version string) and build the object inside the step"
    )
    if not is_token(digest):
        return (
            "arguments changed: the record was made by a call whose arguments could not be "
            "digested, so it never matches a call (fail closed); to get past it, " + advice
        )
    which = "its arguments"
    if call is not None:
        named = [(f"argument {i + 1}", v) for i, v in enumerate(call[0])]
        named += [(f"argument {k!r}", v) for k, v in call[1].items()]
        for label, value in named:
            if is_token(value_digest(value)):
                which = f"{label} of {rec.name} ({preview_of(value, 60)}{_why(value)})"
                break
    return (
        f"{which} cannot be digested, so the call can never be told the same as the "
        f"recorded one and counts as changed on every run (fail closed). To replay it, "
        + advice
    )


def _why(value: Any) -> str:
    """`: why` a value has no digest, when the value itself says (not
    something it holds)."""
    try:
        content_of(value)
    except Undigestable as e:
        return f": {e}"
    return ""
