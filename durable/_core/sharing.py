"""What a step's output shares with its call's arguments, kept through a
replay. Live, `return {**state, "rev": 1}` holds the very lists of
`state`; decoded from a record, it would hold copies: a later step given
both (`reflect(state, revised)`) is another call by the argument digest,
which counts one object held twice (`identity._Walk`), and a body
changing one no longer sees the other change.

So the record notes which parts of the output ARE (identity) mutable
parts of the arguments (`shared`: output path -> argument path, found
among the objects the digest walk of the arguments met after the body,
which the record path makes anyway), and a replay hands back the current
call's part at that path in their place (`rejoined`), only when the two
are equal by the identity digest: a step that changed its argument and
returned it recorded the changed value, which the argument as it is now
(not changed by a replay) must never stand for. A path goes through
lists, tuples (rebuilt on the way back), dicts under str or int keys and
an exception's chain and args (`raise ToolError(...) from err` of an
`err` given to the step); what lies inside another object or a set is
not followed (it stays a copy).
A numpy array of the output that is a view of an argument's array
(`a[:2]`, memory they share) is noted with where it lies in it, and made
again as a view of the call's array on replay (`arrays.view_of`)."""

from __future__ import annotations

import sys
from typing import Any

from .._storage.codec import only_scalars
from .arrays import holders, values_of, view_of, viewed
from .identity import is_token, value_digest

# What a body can change in place: the identity of one of these is what it sees.
_PARTS = frozenset({list, dict, set, bytearray})
_WALKED = _PARTS | {tuple}  # what a part may be, or lie inside of
_KEYS = frozenset({str, int})
_SEQUENCES = frozenset({list, tuple})
_MISSING: Any = object()
# What an exception holds that a path follows (its attributes of that name).
_CHAIN = ("__cause__", "__context__", "args")

Path = list[Any]  # keys: int (a list's or tuple's index, an argument's position) or str


def shared(
    value: Any, held: list[Any], call: tuple[tuple[Any, ...], dict[str, Any]], plain: bool = False
) -> list[list[Path]] | None:
    """`[[output path, argument path], ...]` for each part of `value` that
    is one of `held` (the mutable objects the digest walk of the call's
    arguments met); None when there is none (most outputs). `plain`: msgpack
    took `value` (`codec.pack_plain`), so a long list of numbers is told in C."""
    ids = {id(o) for o in held if _is_part(o)}
    array = _array_type()
    given = [o for o in held if type(o) is array] if array is not None else []
    if not ids:
        return None
    bases = holders(given)
    leaves: list[tuple[tuple[Any, ...], Any]] | None = [] if given else None
    found = _paths([((), value)], ids, stop=False, plain=plain, leaves=leaves)
    views = [(out, how) for out, v in leaves or () if (how := view_of(v, bases)) is not None]
    if not found and not views:
        return None
    args, kwargs = call
    roots = [((i,), v) for i, v in enumerate(args)] + [((k,), v) for k, v in kwargs.items()]
    wanted = {i for i, _ in found} | {id(base) for _, (base, _) in views}
    where = dict(reversed(_paths(roots, wanted, stop=True)))  # the first path wins
    notes = [[list(out), list(where[i])] for i, out in found if i in where]
    notes += [[list(out), list(where[id(base)]), how] for out, (base, how) in views if id(base) in where]
    return notes or None


def rejoined(value: Any, notes: Any, call: tuple[tuple[Any, ...], dict[str, Any]]) -> Any:
    """`value` decoded from a record with `notes` (`shared`), each noted
    part replaced by the call's own part at its argument path when the two
    are equal by the identity digest; left decoded otherwise, or when the
    notes are not ours."""
    if type(notes) not in _SEQUENCES:
        return value
    args, kwargs = call
    for note in notes:  # lists, or tuples as a record read back may spell them
        if not (type(note) in _SEQUENCES and len(note) in (2, 3) and _is_path(note[0]) and _is_path(note[1])):
            continue
        out, arg = note[0], note[1]
        if not arg or (type(arg[0]) is int and not 0 <= arg[0] < len(args)):
            continue
        root = args[arg[0]] if type(arg[0]) is int else kwargs.get(arg[0], _MISSING)
        part = _at(root, arg[1:])
        if len(note) == 3:  # a view of the call's array, lying in it as noted
            part = viewed(part, note[2])
            if part is None:
                continue
        elif not _is_part(part):
            continue
        mine = _at(value, out)
        if len(note) == 3:  # by values: a record keeps a strided view as a compact copy
            mine, theirs = values_of(mine), value_digest(values_of(part))
        else:
            theirs = value_digest(part)
        if mine is _MISSING or is_token(theirs) or value_digest(mine) != theirs:
            continue  # changed by the step (or gone): the recorded value stands
        try:
            value = _put(value, out, part)
        except (AttributeError, TypeError):  # an exception whose `args` cannot be set: left decoded
            continue
    return value


def note(
    extra: dict[str, Any], value: Any, held: list[Any], call: tuple[tuple[Any, ...], dict[str, Any]],
    plain: bool = False,
) -> None:  # fmt: skip
    """`shared` into a record's (or a cache entry's) `extra`, when there is any."""
    # An output neither a container nor a tuple nor an array (a number, an object) holds no part we follow.
    followed = type(value) in _WALKED or type(value) is _array_type() or isinstance(value, BaseException)
    notes = shared(value, held, call, plain) if held and followed else None
    if notes is not None:
        extra["shares"] = notes


def back(extra: dict[str, Any], value: Any, call: tuple[tuple[Any, ...], dict[str, Any]]) -> Any:
    """`rejoined` by what a record's `extra` noted (nothing: `value`)."""
    notes = extra.get("shares")
    return value if notes is None else rejoined(value, notes, call)


def _array_type() -> Any:
    np = sys.modules.get("numpy")  # looked at only when the program imported it
    return None if np is None else getattr(np, "ndarray", None)


def _paths(
    roots: list[tuple[tuple[Any, ...], Any]], ids: set[int], *, stop: bool, plain: bool = False,
    leaves: list[tuple[tuple[Any, ...], Any]] | None = None,
) -> list[tuple[int, tuple[Any, ...]]]:  # fmt: skip
    """(id, path) of each object of `ids` met under `roots`, in order,
    not looking inside one met (it is handed back whole); `stop`: once each
    id was met. A long list of scalars (a large output) is told in C.
    `leaves` gets (path, array) of each numpy array met that is not one of `ids`."""
    array = _array_type()
    found: list[tuple[int, tuple[Any, ...]]] = []
    left, seen = set(ids), set()
    stack = roots[::-1]
    while stack:
        path, v = stack.pop()
        i = id(v)
        if i in ids:
            found.append((i, path))
            left.discard(i)
            if stop and not left:
                break
            continue
        t = type(v)
        items: Any
        children: Any
        if t is array and leaves is not None:
            leaves.append((path, v))
            continue
        if t is list or t is tuple:
            items, children = v, enumerate(v)
        elif t is dict:
            items, children = v.values(), ((k, x) for k, x in v.items() if type(k) in _KEYS)
        elif isinstance(v, BaseException):  # what `raise ... from err` or `Error(msg, err)` holds
            items = children = [(k, getattr(v, k)) for k in _CHAIN]
        else:
            continue
        if i in seen:  # a cycle, or a container held twice: walked once
            continue
        seen.add(i)
        if len(items) >= 16 and (only_scalars(items) if plain else _no_parts(set(map(type, items)), array)):
            continue
        below = [((*path, k), x) for k, x in children if type(x) in _WALKED or type(x) is array or _raised(x)]
        stack += below[::-1]
    return found


def _no_parts(types: set[type], array: Any) -> bool:
    return _WALKED.isdisjoint(types) and array not in types and not any(issubclass(t, BaseException) for t in types)


def _raised(v: Any) -> bool:
    return isinstance(v, BaseException)


def _is_part(v: Any) -> bool:
    """What a body can change in place, so that its identity is what it sees."""
    return type(v) in _PARTS or isinstance(v, BaseException) or type(v) is _array_type()


def _is_path(p: Any) -> bool:
    return type(p) in _SEQUENCES and all(type(k) in _KEYS for k in p)


def _at(v: Any, path: Path) -> Any:
    for k in path:
        t = type(v)
        if (t is list or t is tuple) and type(k) is int and 0 <= k < len(v):
            v = v[k]
        elif t is dict and k in v:
            v = v[k]
        elif isinstance(v, BaseException) and k in _CHAIN:
            v = getattr(v, k)
        else:
            return _MISSING
    return v


def _put(v: Any, path: Path, part: Any) -> Any:
    """`v` with `part` at `path` (found there by `_at`): lists and dicts
    changed in place, tuples made anew on the way."""
    if not path:
        return part
    k = path[0]
    child = _put(_at(v, [k]), path[1:], part)
    if type(v) is tuple:
        return (*v[:k], child, *v[k + 1 :])
    if isinstance(v, BaseException):
        setattr(v, k, child)
        return v
    v[k] = child
    return v
