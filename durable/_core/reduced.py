"""An object digested as `pickle` sees it (DESIGN §2 "Identity of a
call"): its type and the state its `__reduce_ex__` (or a `copyreg`
reducer) gives, walked by `identity` so that a set or a float in it is
digested canonically too; what a pickling hook of the user's own class
leaves out counts as well (`ownstate.left_out`). An exception also counts
by what pickle drops and a step reads (`traceback.format_exception(err)`,
`err.__cause__`): its chain and where it was raised. So does a method
bound at run time (`bound_at_run_time`)."""

from __future__ import annotations

import copyreg
import sys
import types
from typing import Any

from .._storage.raised import RAISED_AT, c_fields, frames
from .arrays import qualname
from .ownstate import left_out, memo_counts, own_state


def reduced(v: Any) -> tuple[str, Any]:
    """A kind and a stand-in: the type and pickled state of `v`."""
    name = qualname(type(v))
    # An instance dict made on first reading (an exception's) changes what its
    # reduction says ({} where it said None): read it first, so that a digest is
    # the same the first time and every time after (`own_state` reads it).
    try:
        object.__getattribute__(v, "__dict__")
    except AttributeError:
        pass
    # As pickle reduces it: by a reducer registered with `copyreg` (a ufunc, a regex) first;
    # not an exception's: Dask registers one for every exception class (tblib's, with the
    # traceback's frames), which made a digest differ once `distributed` was imported and
    # between a live error and its record; its chain and frames count by `_raised`.
    reducer = None if isinstance(v, BaseException) else copyreg.dispatch_table.get(type(v))
    reduced = v.__reduce_ex__(4) if reducer is None else reducer(v)
    if isinstance(reduced, str):  # pickled by name: a builtin function, a singleton
        named: tuple[Any, ...] = (getattr(v, "__module__", None), reduced)
        # An object of the user's class named so still holds its own state, which it reads.
        left = left_out(v, None)
        if not _found_by_name(v, reduced):
            named += (_own(v),)
        return f"global:{name}", named if left is None else (*named, left)
    parts = list(reduced) + [None] * (5 - len(reduced))
    fn, args, state, list_items, dict_items = parts[:5]
    left = left_out(v, state)
    if type(state) is dict:  # as in `own_state`
        state = {k: x for k, x in state.items() if k != RAISED_AT and memo_counts(v, type(v).__mro__, k, x)}
    listed = list(list_items) if list_items is not None else None
    pairs = list(dict_items) if dict_items is not None else None
    stand_in: tuple[Any, ...] = (fn, args, state, listed, pairs)
    if isinstance(v, BaseException):
        stand_in += (_raised(v),)
    return f"object:{name}", stand_in if left is None else (*stand_in, left)


def _found_by_name(v: Any, name: str) -> bool:
    """Whether the name `v` is pickled by finds it, as pickle looks it up."""
    module = getattr(v, "__module__", None)
    if module is None:
        import pickle

        module = getattr(pickle, "whichmodule")(v, name)  # noqa: B009 - not in typeshed
    owner: Any = sys.modules.get(module) if isinstance(module, str) else None
    for part in name.split("."):
        owner = getattr(owner, part, None)
    return owner is v


def _own(v: Any) -> Any:
    """What an object its name does not find holds (a `typing.NewType` a
    factory made: its name and the type it stands for); the name stands for
    another object or for none, so without state of its own to count it has
    no digest (fail closed)."""
    own = own_state(v, by_getstate=False)
    if own is None:
        raise TypeError("it is pickled by a name that does not find it")  # `content_of`: no digest
    return own


def _raised(e: BaseException) -> tuple[Any, ...]:
    """What pickle leaves out of an exception (`raised`): the one it was
    raised from and the one being handled when it was raised (each digested
    as an exception too), the frames it passed through (as a traceback shows
    them, without the file's path: the same code raising it on another
    machine or in a restarted notebook is the same call) and, when its
    classes declare any (in C or as `__slots__`), what their fields hold."""
    found = ("raised", e.__cause__, e.__context__, e.__suppress_context__, frames(e))
    fields = c_fields(e)
    return (*found, fields) if fields else found


def bound_at_run_time(m: types.MethodType) -> bool:
    """A method its instance's class does not hold under its name
    (`types.MethodType(make_style(tone), agent)`): pickle names it by its
    instance and name (`getattr(agent, "respond")`), which says nothing of
    the function it runs and what that function's closure holds. One its
    class holds counts so, by its instance (and its class's code)."""
    owner = m.__self__ if isinstance(m.__self__, type) else type(m.__self__)
    name = getattr(m.__func__, "__name__", None)
    for cls in owner.__mro__:
        held = vars(cls).get(name) if isinstance(name, str) else None
        if held is not None:
            return getattr(held, "__func__", held) is not m.__func__
    return True
