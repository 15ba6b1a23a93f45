"""The pickled side of `codec`: cloudpickle, for values msgpack cannot
hold exactly and for code sent to `loop_over` workers. The only module that
imports cloudpickle, and `codec` loads it on first use: a run whose values
are all plain never pays for it."""

from __future__ import annotations

import io
import pickle
import struct
import sys
import types
from typing import Any

import cloudpickle

from .raised import chained

_IN_MEMORY = (io.StringIO, io.BytesIO)
_OOB_HEAD = struct.Struct(">QI")  # length of the pickle, number of buffers
_OOB_BUF = struct.Struct(">QQ")  # offset (from the start) and length of each
_ALIGN = 64


def dumps(value: Any) -> bytes:
    """A stored value's bytes (protocol 5), open files refused; refused, the
    error says which part of the value (`_part`): "cannot pickle
    '_thread.lock' object" did not say where in a dict of forty keys."""
    buffer = io.BytesIO()
    try:
        StorePickler(buffer, protocol=5).dump(value)
    except Exception as e:
        at = "" if isinstance(e, RecursionError) else _part(value, "")  # too deep: `codec._TOO_DEEP` says it
        if at and len(e.args) == 1 and isinstance(e.args[0], str):
            e.args = (f"{e.args[0]} (in the value's {at})",)
        raise
    return buffer.getvalue()


def _part(value: Any, path: str, depth: int = 0) -> str:
    """Where in `value` (`['key'].attr[2]`, and its type) the innermost part
    that does not pickle is, through dicts, lists, tuples, sets and objects'
    attributes; "" when none is found (the value itself, or too deep)."""
    if depth == 8:
        return ""
    parts: list[tuple[str, Any]]
    if isinstance(value, dict):
        parts = [(f"[{k!r}]", v) for k, v in value.items()]
    elif isinstance(value, (list, tuple)):
        parts = [(f"[{i}]", v) for i, v in enumerate(value)]
    elif isinstance(value, (set, frozenset)):
        parts = [(f" item {v!r}", v) for v in value]
    else:
        parts = [(f".{k}", v) for k, v in getattr(value, "__dict__", {}).items()]
    for label, part in parts[:1000]:  # an error's path only: bounded, not the whole of a large value
        try:
            StorePickler(io.BytesIO(), protocol=5).dump(part)
        except Exception:
            kind = type(part)
            named = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
            return _part(part, path + label, depth + 1) or f"{path}{label}, a {named}"
    return ""


class _Traveller(cloudpickle.CloudPickler):  # type: ignore[misc]
    """cloudpickle, except for exceptions whose own `__init__` takes other
    arguments than their `args` (`rebuild_exception`), and which keep their
    chain and fields (`raised.chained`): what goes to and comes
    back from `loop_over` workers (an item's error among it), and the base of
    what a store keeps."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, BaseException):  # with what pickle leaves out of it (`raised`)
            return chained(obj, _exception_reduce(obj))
        return super().reducer_override(obj)


class StorePickler(_Traveller):
    """`_Traveller`, except for open files: it would record their content and
    replay an `io.StringIO` in their place, which is not the value the step
    returned (a handle on a file); and for the script's own classes."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, io.IOBase) and not isinstance(obj, _IN_MEMORY):
            raise TypeError(
                f"it holds an open file or stream ({type(obj).__name__}"
                f"{_named(obj)}), which cannot be replayed: return its path or its content"
            )
        if isinstance(obj, types.GeneratorType):  # cloudpickle: "cannot pickle 'generator'"
            raise TypeError(
                "it holds a generator, which is used up as it is read and cannot be replayed: "
                "return a list (list(...)) of what it yields"
            )
        if isinstance(obj, types.CoroutineType):  # "cannot pickle 'coroutine'": not the cause
            raise TypeError(
                "it holds a coroutine, which is never run unless awaited: make the workflow "
                "`async def` and `await` it (an async step's call and a loop_over of an async "
                "function give one; a step awaits what it calls, or runs it with asyncio.run)"
            )
        if isinstance(obj, memoryview):  # cloudpickle would replay its bytes as `bytes`
            raise TypeError(
                "it holds a memoryview, which cannot be replayed as one: "
                "return bytes(view) or the object it views"
            )
        if isinstance(obj, type) and _in_main(obj):
            return _main_class, (obj.__qualname__, cloudpickle.dumps(obj, protocol=5))
        return super().reducer_override(obj)


def _exception_reduce(obj: BaseException) -> tuple[Any, ...] | None:
    """How to pickle an exception whose class has an `__init__` of its
    own, which pickle's default rebuild `cls(*args)` calls: `class
    Bad(Exception): def __init__(self, a, b): super().__init__(f"{a} {b}")`
    pickles as `Bad("...")` and loads as a TypeError, so a value holding it
    (an `asyncio.gather(..., return_exceptions=True)` result) would be
    recorded and never replayed. Rebuilt by `rebuild_exception` instead,
    with the state the class's own reduce gives. None (pickle as usual) for
    the exceptions the default rebuild serves, and for a class that says
    how it pickles (a `__reduce__` or `__new__` of its own)."""
    cls = type(obj)
    python = types.FunctionType
    if not isinstance(cls.__init__, python) or isinstance(cls.__new__, python):
        return None
    if isinstance(cls.__reduce__, python) or isinstance(cls.__reduce_ex__, python):
        return None
    reduced = obj.__reduce_ex__(5)
    if not isinstance(reduced, tuple) or len(reduced) < 2 or reduced[0] is not cls:
        return None
    return (rebuild_exception, (cls, tuple(reduced[1])), *reduced[2:])


def rebuild_exception(cls: type[BaseException], args: tuple[Any, ...]) -> BaseException:
    """An exception of `cls` made from `args` without its own `__init__`:
    by its `__new__` and the `__init__` of its first built-in base
    (`BaseException`'s sets `args`, `OSError`'s `errno` and the rest), its
    attributes then restored as pickle's state: the same type, `args` and
    message as the one pickled. Named in stored pickles: never rename or
    move it."""
    exc = cls.__new__(cls, *args)
    for base in cls.__mro__:
        init = base.__dict__.get("__init__")
        if init is not None and not isinstance(init, types.FunctionType):
            init(exc, *args)
            break
    return exc


def _in_main(cls: type) -> bool:
    """A class of the script (`python flow.py`) that the script defines at
    the top level: cloudpickle would carry it by value, and a resumed
    process would get instances of a copy (an enum member that `is` no
    member, a dataclass equal to no instance of the live class)."""
    main = sys.modules.get("__main__")
    return cls.__module__ == "__main__" and _attribute(main, cls.__qualname__) is cls


def _attribute(owner: Any, qualname: str) -> Any:
    for part in qualname.split("."):
        owner = getattr(owner, part, None)
    return owner


def _main_class(qualname: str, by_value: bytes) -> Any:
    """The script's live class of that name, as a class of a module is
    found by its name; the copy carried along where the script reading the
    value has none (another program: `durable show`, a notebook)."""
    live = _attribute(sys.modules.get("__main__"), qualname)
    return live if isinstance(live, type) else cloudpickle.loads(by_value)


def _named(obj: Any) -> str:
    name = getattr(obj, "name", None)
    return f" {name!r}" if isinstance(name, str) else ""


def dumps_out_of_band(value: Any) -> tuple[bytes, bool]:
    """(bytes, whether buffers follow the pickle): the pickle, then each
    contiguous buffer (a numpy array's data...) aligned to 64 bytes, so a
    reader holding the bytes in writable memory of its own uses them in
    place (`loads_out_of_band`)."""
    raws: list[memoryview] = []

    def keep(buffer: pickle.PickleBuffer) -> bool:
        try:
            raws.append(buffer.raw())
        except BufferError:  # not contiguous: it stays in the pickle
            return True
        return False

    stream = io.BytesIO()
    StorePickler(stream, protocol=5, buffer_callback=keep).dump(value)
    pickled = stream.getvalue()
    if not raws:
        return pickled, False
    end = _OOB_HEAD.size + _OOB_BUF.size * len(raws) + len(pickled)
    table: list[bytes | memoryview] = [_OOB_HEAD.pack(len(pickled), len(raws))]
    parts: list[bytes | memoryview] = [pickled]
    for raw in raws:
        start = -(-end // _ALIGN) * _ALIGN
        table.append(_OOB_BUF.pack(start, raw.nbytes))
        parts += [bytes(start - end), raw]
        end = start + raw.nbytes
    return b"".join(table + parts), True


def loads_out_of_band(data: bytes | memoryview) -> Any:
    """A value `dumps_out_of_band` wrote with buffers. They are used where
    they lie when the data is writable memory (the caller's own, e.g. a
    fresh read), else copied: either way the arrays returned are writable
    and the caller's."""
    view = memoryview(data)
    length, count = _OOB_HEAD.unpack_from(view, 0)
    start = _OOB_HEAD.size + _OOB_BUF.size * count
    buffers: list[Any] = []
    for i in range(count):
        offset, size = _OOB_BUF.unpack_from(view, _OOB_HEAD.size + _OOB_BUF.size * i)
        if offset < start + length or offset + size > len(view):
            raise ValueError("a pickled buffer lies outside the value")
        part = view[offset : offset + size]
        buffers.append(bytearray(part) if view.readonly else part)
    return cloudpickle.loads(view[start : start + length], buffers=buffers)


def loads(data: bytes | memoryview) -> Any:
    return cloudpickle.loads(data)


def dumps_callable(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _Traveller(buffer, protocol=cloudpickle.DEFAULT_PROTOCOL).dump(obj)
    return buffer.getvalue()


class _Noting(_Traveller):
    """`_Traveller`, noting each class it pickles (by reference or not)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.classes: list[type] = []

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, type):
            self.classes.append(obj)
        return super().reducer_override(obj)


def dumps_noting(obj: Any) -> tuple[bytes, list[type]]:
    """`dumps_callable`, and the classes it pickled."""
    buffer = io.BytesIO()
    pickler = _Noting(buffer, protocol=cloudpickle.DEFAULT_PROTOCOL)
    pickler.dump(obj)
    return buffer.getvalue(), pickler.classes


def digest_callable(obj: Any) -> bytes:
    """`dumps_callable`'s bytes, to digest a closure by: each class it pickles
    by value (a script's or a notebook's, `__main__`'s) carries an id that
    cloudpickle draws at random once per process, so that the same closure
    over the same configuration looked changed in every new process (each
    resume refused). Each id becomes its class's place among those pickled;
    the class itself, its code and attributes, is in the bytes all the same."""
    data, classes = dumps_noting(obj)
    drawn: Any = getattr(cloudpickle.cloudpickle, "_DYNAMIC_CLASS_TRACKER_BY_CLASS", {})
    ids = [found for cls in classes if isinstance(found := _drawn(drawn, cls), str)]
    for place, found in enumerate(dict.fromkeys(ids)):
        data = data.replace(found.encode(), b"%032x" % place)
    return data


def _drawn(drawn: Any, cls: type) -> object:
    try:
        return drawn.get(cls)
    except TypeError:  # a metaclass's `__eq__` without `__hash__`: its id stays (fail closed)
        return None
