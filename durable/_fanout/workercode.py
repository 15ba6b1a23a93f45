"""Whether a worker in another process runs the code the run fingerprinted.

A process or Dask worker gets the item function by reference when its
module is importable (cloudpickle), and imports that module itself: from
the file as it is when the worker starts, not as it was when the workflow
process imported it. A file edited while a long block runs (a worker
started late, or replaced) would compute items with the edited code under
the fingerprint of the old: the workflow process sends the fingerprint it
took, and the worker takes its own of what it loaded before the first item
(once per worker and block). The same holds for a class of the user's
code that an item holds: its digest, which counts that class's code, is
taken on both sides."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

from .._core.bound import bound_values
from .._core.code import class_stamp
from .._core.identity import is_token, value_digest
from .._core.spec import refingerprint, step_spec
from .._fingerprint.fingerprint import fingerprint_function
from .._fingerprint.imports import user_module
from .._fingerprint.reach import code_objects
from .._storage import codec
from ..errors import DefinitionChangedError, DurableError


def code_of(fn: Callable[..., Any]) -> str | None:
    """fn's fingerprint as this process's loaded code and source give it;
    None when this process cannot establish it."""
    try:
        spec = step_spec(fn)
        return refingerprint(spec).value if spec is not None else fingerprint_function(fn).value
    except DurableError:
        return None


# What the workflow process sends when it cannot establish fn's code (a
# step's file edited since the run took its fingerprint) or an item's digest
# now: no worker matches it.
UNKNOWN = "(not established in the workflow process)"


def fn_travel(fn: Callable[..., Any]) -> tuple[bytes, str]:
    """fn's bytes for a worker, and what the worker checks (`check_loaded`):
    its fingerprint here, and when a class of the user's code travels by
    reference in what it binds (a partial's arguments, a method's `self`),
    the digest of those values, which counts that class's code; sent by
    value, after a "|", the fingerprints of what it calls by reference."""
    blob, classes = codec.dumps_noting(fn)
    code = code_of(fn)
    if code is None:
        return blob, UNKNOWN
    if any(_imported_user_class(cls) for cls in set(classes)):
        bound = value_digest(bound_values(fn))
        if is_token(bound):
            return blob, UNKNOWN
        code = f"{code}+{bound}"
    if _sent_by_value(fn) or _binds_by_reference(fn):
        helpers = _helpers_code(fn)
        return blob, UNKNOWN if helpers is None else f"{code}|{helpers}"
    return blob, code


class WorkerCodeChanged(DefinitionChangedError):
    """A worker loaded other code for the item function than the run
    fingerprinted: its items are not computed (and never recorded)."""

    def __init__(self, fn: str, taken: str, loaded: str) -> None:
        self.fn, self.old_fingerprint, self.new_fingerprint = fn, taken, loaded
        self.workflow, self.run_id, self.position = "", "", None
        self.changed_steps, self.changed_arguments = {fn: "edited after this run imported it"}, {}
        DurableError.__init__(
            self,
            f"a loop_over worker loaded {fn} with fingerprint {_short(loaded)}, but the workflow "
            f"process has {_short(taken)}: its code, or a helper's or a value of your modules it "
            "reads, is not the same in both: a file edited after one of them imported it, or a "
            "value a notebook cell or a reload changed after a worker kept alive imported it. The "
            "item was not computed. Run again once the code is as you want it (a new process "
            "imports it; restart a pool or cluster you keep).",
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.fn, self.old_fingerprint, self.new_fingerprint))


# Functions unpickled in this worker process, by block token: once per worker, not per item.
_loaded: dict[str, Callable[[Any], Any]] = {}


def worker_fn(token: str, blob: bytes, taken: str | None) -> Callable[[Any], Any]:
    """The block's function in this worker, checked (`check_loaded`) before its first item."""
    fn = _loaded.get(token)
    if fn is None:
        if len(_loaded) >= 16:
            _loaded.clear()
        fn = codec.loads_callable(blob)
        check_loaded(fn, taken)
        _loaded[token] = fn
    return fn


def check_loaded(fn: Callable[..., Any], taken: str | None) -> None:
    """Raise `WorkerCodeChanged` when this process's code of `fn` is not
    the code the workflow process fingerprinted as `taken`. Fail closed: a
    worker that cannot establish the fingerprint of code the workflow
    process could counts as running other code. A function that came by
    value (a notebook's: its code is the workflow process's, its source not
    here to read) is checked by what it calls by reference (`_helpers_code`)."""
    if taken is None:
        return
    taken, _, helpers = taken.partition("|")
    loaded = code_of(fn)
    if helpers:  # what it reaches by reference, which this worker imported itself
        now = _helpers_code(fn)
        if now != helpers:
            taken, loaded = helpers, now
        elif loaded is None:  # its own code came in the bytes
            return
    if loaded is not None and "+" in taken:
        loaded = f"{loaded}+{value_digest(bound_values(fn))}"
    if loaded != taken:
        raise WorkerCodeChanged(_name(fn), taken, loaded or "(none: its source cannot be read here)")


def item_blob(item: Any) -> tuple[bytes, str | None]:
    """The item's bytes for a worker, with its digest when a class of the
    user's own code travels in it by reference: the worker imports that
    class itself, and the item's digest counts its methods' code (UNKNOWN
    when this process cannot establish it now: no worker matches)."""
    blob, classes = codec.dumps_noting(item)
    if not any(_imported_user_class(cls) for cls in set(classes)):
        return blob, None
    digest = value_digest(item)
    return blob, UNKNOWN if is_token(digest) else digest


def worker_item(blob: tuple[bytes, str | None]) -> Any:
    """The item in this worker, its digest checked as `item_blob` took it."""
    data, taken = blob
    item = codec.loads_callable(data)
    if taken is not None:
        loaded = value_digest(item)
        if loaded != taken:
            raise WorkerCodeChanged(f"the class of the item {type(item).__qualname__}", taken, loaded)
    return item


def _imported_user_class(cls: type) -> bool:
    module = sys.modules.get(cls.__module__)
    if module is None or cls.__module__ == "__main__":  # a script's class travels by value
        return False
    found: Any = module
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is cls and user_module(module)


def _by_value(fn: Callable[..., Any]) -> bool:
    """Whether the function fn runs is not the one its module holds under
    its name: cloudpickle sent its code, not a reference to import."""
    inner: Any = getattr(fn, "func", fn)
    inner = getattr(inner, "__func__", inner)
    found: Any = sys.modules.get(getattr(inner, "__module__", None) or "")
    for part in str(getattr(inner, "__qualname__", "")).split("."):
        found = getattr(found, part, None)
    return getattr(found, "__wrapped__", found) is not getattr(inner, "__wrapped__", inner) and found is not inner


def _sent_by_value(fn: Callable[..., Any]) -> bool:
    """Whether cloudpickle sends fn's code rather than a reference: a
    function of the script or the notebook (`__main__`, in the workflow
    process and as unpickled in a worker), or one `_by_value` tells."""
    inner: Any = getattr(fn, "func", fn)
    inner = getattr(inner, "__func__", inner)
    return getattr(inner, "__module__", None) == "__main__" or _by_value(fn)


def _binds_by_reference(fn: Callable[..., Any]) -> bool:
    """Whether fn is a partial binding a module or a function, which a
    worker takes from its own imports (`partial(times, helpers)`): what is
    read through it counts there (`_helpers_code`), not only fn's code."""
    bound = [*getattr(fn, "args", ()), *getattr(fn, "keywords", {}).values()] if hasattr(fn, "func") else []
    return any(isinstance(v, types.ModuleType) or callable(v) for v in bound)


def _helpers_code(fn: Callable[..., Any]) -> str | None:
    """For a function sent by value (a notebook's, whose cell a worker
    started afresh cannot read), the fingerprints of the functions of the
    user's modules it calls by reference (`helpers.h`), which a worker
    imports from their files as they are now, and the digests of the
    values it reads there (`_module_reads`): through its globals, and
    through what its defaults, closure cells or a partial's arguments hold
    (`m=helpers`, `h=helpers.h`), which travel by reference too; None when
    one cannot be established (fail closed)."""
    inner: Any = getattr(fn, "func", fn)
    bound = [*getattr(fn, "args", ()), *getattr(fn, "keywords", {}).values()] if inner is not fn else []
    todo: list[tuple[Any, list[Any]]] = [(getattr(inner, "__func__", inner), bound)]
    seen: set[int] = set()
    found: dict[str, str] = {}
    while todo:
        current, given = todo.pop()
        code, globs = getattr(current, "__code__", None), getattr(current, "__globals__", None)
        if id(current) in seen or not isinstance(code, types.CodeType) or not isinstance(globs, dict):
            continue
        if len(seen) >= 64:  # not looked at: not established
            return None
        seen.add(id(current))
        names = [n for co in code_objects(code) for n in co.co_names]
        for name, value in [*((n, globs.get(n)) for n in names), *(("", v) for v in given + _held(current))]:
            held = _module_reads(value, names, found) if isinstance(value, types.ModuleType) else [value]
            if held is None:
                return None
            for obj in held:
                if not callable(obj) or getattr(obj, "__module__", None) in (None, "builtins"):
                    continue
                if _sent_by_value(obj):
                    todo.append((obj, []))
                elif (module := sys.modules.get(obj.__module__)) is not None and user_module(module):
                    code_now = _class_code(obj) if isinstance(obj, type) else code_of(obj)
                    if code_now is None:
                        return None
                    found[f"{obj.__module__}.{getattr(obj, '__qualname__', name)}"] = code_now
    return value_digest(sorted(found.items()))


def _class_code(cls: type) -> str | None:
    """A class of the user's modules a function sent by value calls
    (`helpers.Scaler(2).apply(x)`): by its methods' fingerprints and its
    `class` statement (`class_stamp`), as an argument's class counts; it was
    taken for a function, whose fingerprint a class has none of, and every
    item was refused. None when that cannot be established (fail closed)."""
    try:
        return class_stamp(cls)
    except DurableError:
        return None


def _held(fn: Any) -> list[Any]:
    """What fn's defaults and closure cells hold."""
    cells: list[Any] = []
    for cell in fn.__closure__ or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:  # a cell not filled yet
            continue
    return [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values(), *cells]


def _module_reads(module: types.ModuleType, names: list[str], found: dict[str, str]) -> list[Any] | None:
    """The functions and classes a function sent by value may call through
    `module` (`helpers.h`, `pkg.sub.h`), for `_helpers_code`; the other
    values it may read there (`helpers.SCALE`, `helpers.CFG["k"]`) noted
    into `found` by digest when `module` is the user's: a worker kept alive
    holds them as it imported them, whatever a cell or a reload has made of
    them in the workflow process since. None when one has no digest (fail
    closed)."""
    held: list[Any] = []
    todo, seen = [module], {id(module)}
    while todo:
        current = todo.pop()
        mine = user_module(current)
        for name in names:
            obj = getattr(current, name, None)
            if isinstance(obj, types.ModuleType):
                if id(obj) not in seen:
                    seen.add(id(obj))
                    todo.append(obj)
            elif callable(obj):
                held.append(obj)
            elif mine and name in vars(current):
                digest = value_digest(obj)
                if is_token(digest):
                    return None
                found[f"{current.__name__}.{name}"] = digest
    return held


def _short(fingerprint: str) -> str:
    return fingerprint if fingerprint.startswith("(") else fingerprint[:12]


def _name(fn: Callable[..., Any]) -> str:
    inner = getattr(fn, "func", fn)
    return f"{getattr(inner, '__module__', '?')}.{getattr(inner, '__qualname__', repr(inner))}"
