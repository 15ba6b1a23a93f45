"""What pickle leaves out of an exception and a step reads (DESIGN §2
"Identity of a call"): the one it was raised from, the one being handled
when it was raised, where it was raised, and what the fields its classes
declare (in C, or as `__slots__`) hold beyond its `args` (`OSError.errno`
set after it was made, `UnicodeDecodeError.start`, `StopIteration.value`). Its digest
counts them (`_core.reduced`), and a stored exception keeps them
(`codec_pickle`): an error a step returned and a later step is given
comes back from its record as the same argument, the value the body
builds from `err.__cause__` the same value. Its traceback cannot be
pickled: where it passed is kept as the digest counts it (module,
function, line), under `RAISED_AT` in its instance dict, which the digest
does not count as state."""

from __future__ import annotations

import types
from typing import Any

from .._calls import durables_frame

RAISED_AT = "__durable_raised_at__"
Frame = tuple[Any, str, int]
# BaseException's own: its args and chain (counted apart), its instance dict.
_NOT_FIELDS = frozenset({"args", "__dict__", "__weakref__", "__traceback__", "__cause__", "__context__", "__suppress_context__"})
_DESCRIPTORS = (types.MemberDescriptorType, types.GetSetDescriptorType)
_UNSET = object()


def frames(e: BaseException) -> list[Frame]:
    """The frames `e` passed through, as a traceback shows them without the
    file's path, durable's own left out (a step's failure passes through
    others on a resumed run); then those of its record, when it came from one."""
    found: list[Frame] = []
    tb: types.TracebackType | None = e.__traceback__
    while tb is not None:
        if not durables_frame(tb):
            found.append((tb.tb_frame.f_globals.get("__name__"), tb.tb_frame.f_code.co_name, tb.tb_lineno))
        tb = tb.tb_next
    kept = _own_dict(e).get(RAISED_AT)
    return found + list(kept) if type(kept) is list else found


def c_fields(e: BaseException) -> list[tuple[str, Any]]:
    """The fields `e`'s classes declare and what they hold (a field never
    set, OSError's `characters_written`, is left out)."""
    found = []
    for name, field in _fields_of(type(e)):
        try:
            found.append((name, field.__get__(e, type(e))))
        except AttributeError:
            continue
    return found


def _fields_of(cls: type) -> tuple[tuple[str, Any], ...]:
    return tuple(
        (name, field)
        for base in cls.__mro__[:-1]  # not `object`'s `__class__`
        for name, field in vars(base).items()
        if name not in _NOT_FIELDS and isinstance(field, _DESCRIPTORS)
    )


def _own_dict(e: BaseException) -> dict[str, Any]:
    try:
        own = object.__getattribute__(e, "__dict__")
    except AttributeError:
        return {}
    return own if type(own) is dict else {}


def chained(e: BaseException, reduced: Any) -> Any:
    """How to pickle `e` keeping what pickle leaves out: `reduced` (a reduce
    value, or None for the class's own) with that added to its state and
    `restore_raised` to set it; `reduced` (NotImplemented for None: pickle
    as usual) when `e` holds none of it or its reduction cannot carry it.
    A part that does not pickle (an AttributeError's object holding a lock)
    is left out: the exception then comes back as another value (its digest
    differs: the call given it counts as changed)."""
    extra = (e.__cause__, e.__context__, e.__suppress_context__, frames(e), c_fields(e))
    if extra[:2] == (None, None) and not extra[2] and not extra[3] and not extra[4]:
        return NotImplemented if reduced is None else reduced
    # The class's own reduction, not one `copyreg` holds: Dask registers tblib's for every
    # exception class, which pickles the traceback, and a record then came back with frames
    # that `frames` counted twice (and a digest unlike the live error's).
    base = e.__reduce_ex__(5) if reduced is None else reduced
    if not isinstance(base, tuple) or not 2 <= len(base) <= 5:
        return NotImplemented if reduced is None else reduced
    fn, args, state, listed, pairs = (*base, None, None, None)[:5]
    cause, context, suppress, where, fields = extra
    fields = [(name, x) for name, x in fields if _pickles(x)]
    kept = (cause if _pickles(cause) else None, context if _pickles(context) else None, suppress, where, fields)
    return fn, args, (state, kept), listed, pairs, restore_raised


def _pickles(value: Any) -> bool:
    if value is None or type(value) in (str, int, bytes, bool, float):
        return True
    import cloudpickle  # loaded with `codec_pickle`, the one caller: not by a digest

    try:
        cloudpickle.dumps(value, protocol=5)
    except Exception:
        return False
    return True


def restore_raised(e: BaseException, packed: tuple[Any, tuple[Any, ...]]) -> None:
    """Sets the state `chained` pickled. Named in stored pickles: never rename or move it."""
    state, (cause, context, suppress, where, fields) = packed
    if state is not None:
        e.__setstate__(state)
    e.__cause__, e.__context__ = cause, context
    e.__suppress_context__ = suppress
    if where:
        e.__dict__[RAISED_AT] = list(where)
    held = dict(_fields_of(type(e)))
    for name, value in fields:
        field = held.get(name)
        if field is None:
            continue
        try:
            now = field.__get__(e, type(e))
        except AttributeError:
            now = _UNSET
        # Set only what differs: setting OSError's `filename` to None, as it was, adds it to its args.
        if now is value or (type(now) is type(value) and now == value):
            continue
        try:
            field.__set__(e, value)
        except (AttributeError, TypeError):
            pass
