"""What a refusal says about a call that no longer matches its record
(`replay.lookup` under on_change="refuse"): the arguments it is called with
now, or the argument that cannot be digested, and what to pass instead."""

from __future__ import annotations

from typing import Any

from .._errortext import NOT_AS_LEFT, READ_BACK, and_list
from .._storage.records import INPUT_KIND, StepRecord
from .._valuetext import preview_of
from .content import Undigestable, content_of
from .identity import is_token, value_digest
from .named import NAMED
from .written import REREAD, WRITERS

# Said of a record without an argument digest instead of "arguments changed":
# nothing about the call changed, its record cannot tell.
NO_DIGEST = (
    "its record has no argument digest (written by an older version of durable, before "
    "every call kept one, or damaged), so this call cannot be told the same as the one "
    "recorded"
)


def arguments_changed(
    rec: StepRecord, digest: str | None, call: tuple[tuple[Any, ...], dict[str, Any]] | None
) -> str:
    """Why the record `rec` is not this call's, whose argument digest is
    `digest` now; `call` (the arguments, when known) is shown."""
    if rec.kind == INPUT_KIND:
        return _answered_for_others(rec, digest)
    if rec.args_digest is None:  # `replayrow.same_fields`: never the same call
        return NO_DIGEST
    if is_token(digest) or is_token(rec.args_digest):
        return _undigestable(rec, digest, call)
    now_called = ""
    if call is not None:
        shown = [preview_of(a, 60) for a in call[0]]
        shown += [f"{k}={preview_of(v, 60)}" for k, v in call[1].items()]
        now_called = f"called now as {rec.name}({', '.join(shown)}); "
    # What the step writes that another reads, which a replay cannot redo, is
    # the likelier cause when there is one (nothing edited, a new process): first.
    written = _written(rec.name, rec.fingerprint)
    return (
        (f"{written}. Or its " if written else "")
        + f"arguments changed: {now_called}the record was made by a call with other "
        f"arguments (argument digest {rec.args_digest or 'unknown'}, now {digest or 'unknown'})"
        + (_IN_PLACE if call is not None and any(map(_changeable, _values(call))) else "")
        + (_SHARED if call is not None and _copies(_values(call)) else "")
        + (_per_process(_values(call)) if call is not None else "")
        + _named(rec.name, rec.fingerprint)
    )


def _named(name: str, fp: str) -> str:
    """A hint for a step that imports modules by the names its arguments
    give (`named.with_named`): their code counts in its calls. `fp`: its
    fingerprint, the recorded one's too (the arguments alone differ)."""
    modules = NAMED.get((name, fp))
    if not modules:
        return ""
    return (
        f". Or the code of {and_list(modules)}, which {name} is given by name and "
        "looks up, changed since the record was made: that is a changed call"
    )


def _written(name: str, fp: str) -> str:
    """A hint for a step writing module-level values another step reads,
    which its record holds as it left them (`written.with_written`); by
    its name and fingerprint, as another module's step of that name may
    write others."""
    names = WRITERS.get((name, fp))
    if not names:
        return ""
    # Read back by the step's own next call (`state_reread`): said so, as nothing else reads it.
    again = REREAD.get((name, fp), ())
    which = READ_BACK if again and set(again) >= set(names) else NOT_AS_LEFT
    itself = f" ({and_list(again)}: {name} itself, at its next call)" if again and which == NOT_AS_LEFT else ""
    return (
        f"{and_list(names)}, which {name} {which}{itself}, {'are' if len(names) > 1 else 'is'} "
        f"not as {name} left it (in a new process, as the import made it; or made anew by a workflow's body): a replay cannot redo "
        "that write (fail closed); return the new state from the step and pass it on instead"
        + (" (return what its next call needs and hand it that), or re-run from here (on_change='rerun')" if again else "")
    )


def _per_process(values: list[Any]) -> str:
    """A hint for an argument pickled by a hook of its class: its state may
    be listed in an order each process draws anew (a set of strings), so
    the same value has another digest in every new process."""
    for value in filter(_pickled, values):
        for cls in type(value).__mro__:
            hook = next((h for h in _HOOKS if h in vars(cls)), None)
            if hook is not None and cls.__module__ != "builtins":
                return (
                    f". If this happens in every new process, {cls.__qualname__}.{hook} may give "
                    "the same value's state in another order in each (a set listed as it "
                    "iterates: string hashing differs per process): return it sorted"
                )
    return ""


_HOOKS = ("__getstate__", "__reduce__", "__reduce_ex__")


def _pickled(value: Any) -> bool:
    """Whether the value is digested by its pickled state (not by fields, as a dataclass is)."""
    try:
        return content_of(value, code=False)[0].startswith("object:")
    except Exception:  # no digest at all: `_undigestable` says so
        return False


# An object given to a step may differ without any edit: an earlier step
# changed it in place when it ran, and its replay returned only its value.
_IN_PLACE = (
    ". If nothing was edited, an earlier step probably changed an object it was given "
    "in place (self.history.append(...), a list or dict argument) when it ran: a replay "
    "returns its recorded value but does not redo that change. Return the new state "
    "from the step instead of changing its arguments"
)


_SHARED = (
    ". Or a list or dict it holds twice, as two equal copies now, was one object when the record "
    "was made (two steps returning one module-level list, or a list an object or a set held: the "
    "replayed outputs are copies of their own): one object held twice is another argument than two copies "
    "(a step changing one sees the other change). Pass copy.deepcopy(...) of one where it is "
    "made, or only what the step needs"
)


def _copies(values: list[Any]) -> bool:
    """Whether a call's arguments hold two equal lists or dicts (not empty)
    that are distinct objects, within the first few hundred they hold."""
    found: list[Any] = []
    todo, looked = list(values), 0
    while todo and looked < 5000 and len(found) < 200:
        v, looked = todo.pop(), looked + 1
        if type(v) is tuple:
            todo.extend(v)
        elif (type(v) is list or type(v) is dict) and v:
            found.append(v)
            todo.extend(v.values() if type(v) is dict else v)
    for i, a in enumerate(found):
        for b in found[i + 1 :]:
            if a is not b and type(a) is type(b) and len(a) == len(b) and _equal(a, b):
                return True
    return False


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an item whose __eq__ raises: no hint
        return False


def _answered_for_others(rec: StepRecord, digest: str | None) -> str:
    """Why the answer recorded at a `wait_for` is not taken for this call."""
    if is_token(digest):
        why = (
            "one of the run's arguments cannot be digested, so the answer recorded there "
            "cannot be told to be one given for these arguments (fail closed); pass "
            "arguments that can be digested (plain data, a dataclass, an object that pickles)"
        )
    else:
        why = (
            "the answer recorded there was given when the run had other arguments (or by "
            "a version of durable that did not record them), so it is not reused for these: "
            "re-run (on_change='rerun') to be asked again, as the run then suspends at "
            "this wait, or rebase to keep the old answer"
        )
    return f"wait_for({rec.name!r}) was answered for other arguments: {why}"


def _values(call: tuple[tuple[Any, ...], dict[str, Any]]) -> list[Any]:
    return [*call[0], *call[1].values()]


def _changeable(value: Any) -> bool:
    return not isinstance(value, (str, bytes, int, float, complex, bool, type(None), tuple, frozenset))


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
    # When each argument has a digest, what the step's function binds has none.
    which = (
        "its arguments, or what its function binds (a functools.partial's arguments, "
        "a bound method's instance),"
    )
    if call is not None:
        named = [(f"argument {i + 1}", v) for i, v in enumerate(call[0])]
        named += [(f"argument {k!r}", v) for k, v in call[1].items()]
        for label, value in named:
            if is_token(value_digest(value)):
                which = f"{label} of {rec.name} ({preview_of(value, 60)}{why_no_digest(value)})"
                owner = rec.name.rpartition(".")[0]
                if label == "argument 1" and owner and type(value).__qualname__ == owner:  # a method's self
                    which = f"the {owner} that {rec.name} is a method of (self: {preview_of(value, 60)})"
                    advice = (f"give {owner} a __getstate__ that leaves out what cannot be pickled (a lock, "
                              "a connection: what it leaves out then counts by its type), or " + advice)  # fmt: skip
                break
    return (
        f"{which} cannot be digested, so the call can never be told the same as the "
        f"recorded one and counts as changed on every run (fail closed). To replay it, "
        + advice
    )


def why_no_digest(value: Any) -> str:
    """`: why` a value has no digest, when the value itself says (not
    something it holds)."""
    try:
        content_of(value)
    except Undigestable as e:
        return f": {e}"
    return ""


# A replay returns a step's output; what the step did to the objects it was
# given when it ran is not redone, so the run would go on with them as they
# were before it (a wrong value an uninterrupted run never gives).
_REDO = (
    "a replay returns the step's output but cannot redo that change, so the run "
    "would go on with the object as it was before the step (fail closed). Return the "
    "new state from the step instead of changing its arguments (rows = with_row(rows, x))"
)


def in_place_warning(name: str, what: str = "step") -> str:
    return f"{what} {name} changed an object it was given (an argument, or self): {_REDO}"


def not_cached_in_place(name: str, what: str = "an object it was given (an argument, or self)") -> str:
    """Why a cached step's output that changed its arguments (or what its
    closure captured) was not kept: a hit, like a replay, would not redo the
    change."""
    return (
        f"step {name} changed {what}: its output "
        "was not cached, since a cache hit returns the output but cannot redo that "
        "change. Return the new state from the step instead of changing its arguments"
    )


def changed_in_place(rec: StepRecord) -> str:
    """Why a record whose step changed its arguments in place is not replayed."""
    return f"step {rec.name} changed an object it was given when it ran: {_REDO}"
