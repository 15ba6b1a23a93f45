"""Objects that say where code runs, not what it computes: an executor of
`concurrent.futures` (a process or thread pool) or a Dask client, which a
workflow hands to `loop_over` or a step submits to. What they hold (a
client's id, new in every process; a pool's thread names) is no input of
a call: a global holding one counts by its statements alone, never by its
contents (every resume of a script connecting a client in its main block
was refused). The code they run counts where it is reached, and a worker
checks the code it loaded (`_fanout.workercode`). A subclass of the user's
that holds attributes of its own (`self.scale`) is no bare pool: those
count, the library's are left out (`library_attributes`).

Pure standard library: neither `distributed` nor a pool is imported."""

from __future__ import annotations

import dis
import sys
import types
import weakref

from .imports import user_class
from .reach import code_objects


def runs_code_only(obj: object) -> bool:
    """Whether `obj` is a `concurrent.futures.Executor` or a Dask client
    holding nothing but what the library sets on it."""
    return runs_code(obj) and not (vars(obj).keys() - library_attributes(obj) if hasattr(obj, "__dict__") else ())


def runs_code(obj: object) -> bool:
    """Whether `obj` is a `concurrent.futures.Executor` or a Dask client, a subclass too."""
    futures = sys.modules.get("concurrent.futures")
    if futures is not None and isinstance(obj, futures.Executor):
        return True
    return any(c.__name__ == "Client" and c.__module__.partition(".")[0] == "distributed" for c in type(obj).__mro__)


def library_attributes(obj: object) -> frozenset[str]:
    """The attributes the library's classes of `obj`'s type store on an
    instance (`self._threads = set()`): nothing for what runs no code."""
    if not runs_code(obj):
        return frozenset()
    known = _STORED.get(type(obj))
    if known is None:
        known = _STORED[type(obj)] = _stored(type(obj))
    return known


_STORED: weakref.WeakKeyDictionary[type, frozenset[str]] = weakref.WeakKeyDictionary()


def _stored(cls: type) -> frozenset[str]:
    """Names a `STORE_ATTR` of the functions of `cls`'s classes not the user's gives."""
    found: set[str] = set()
    for base in (b for b in cls.__mro__ if not user_class(b)):
        for value in vars(base).values():
            fn = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            if isinstance(fn, types.FunctionType):
                for code in code_objects(fn.__code__):
                    found.update(i.argval for i in dis.get_instructions(code) if i.opname == "STORE_ATTR")
    return frozenset(found)
