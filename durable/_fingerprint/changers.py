"""What changes a container in place: its methods (`LOG.append(x)`,
`D.appendleft(x)`, `C.subtract(...)`, `C.__setitem__(k, v)`), and the
library functions changing the one handed to them first (`heapq.heappush(LOG,
x)`, `list.append(LOG, x)`, `operator.setitem(C, k, v)`,
`operator.methodcaller("setdefault", k, v)(C)`, `RNG.shuffle(LOG)` of a
`random.Random`). A step changing a global another step reads, by any of
them, leaves a value a replay does not make again.

Pure standard library."""

from __future__ import annotations

import ast
import bisect
import builtins
import heapq
import inspect
import io
import operator
import queue
import random
import sys
import types
from collections.abc import Mapping
from typing import Any

from .hiddenrng import hidden_write
from .imports import user_module
from .userclasses import users_class

# Methods that change a list, dict, set, deque, Counter, OrderedDict or
# array in place (not `logging.basicConfig`).
MUTATORS = frozenset(
    "append extend insert update add setdefault remove discard clear pop popitem sort reverse "
    "appendleft extendleft popleft rotate move_to_end subtract difference_update intersection_update "
    "symmetric_difference_update fromlist frombytes fromunicode fromfile byteswap __setitem__ __delitem__ "
    "__iadd__ __ior__ __iand__ __isub__ __ixor__ __imul__ __imatmul__ __itruediv__ __ifloordiv__ __imod__ "
    "__ipow__ __ilshift__ __irshift__ __setattr__ __delattr__ fill partition resize itemset".split()
)
# numpy's functions changing the array handed first (told by name: durable never imports numpy).
_NUMPY_WRITERS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "shuffle"})
_WRITERS = (heapq.heappush, heapq.heappop, heapq.heapify, heapq.heapreplace, heapq.heappushpop,
            bisect.insort, bisect.insort_left, bisect.insort_right, random.Random.shuffle)  # fmt: skip
# An `operator` function changing its first argument, as the method it calls.
_OPERATORS = {
    operator.setitem: "__setitem__", operator.delitem: "__delitem__", operator.iadd: "extend",
    operator.iconcat: "extend", operator.ior: "update", operator.isub: "__isub__",
    operator.iand: "__iand__", operator.ixor: "__ixor__", operator.imul: "__imul__",
}  # fmt: skip
# What appends to a log or bumps a count (`stepstate.state_logged`): a change only when `logs`.
LOGS = frozenset({"append", "extend", "add"})


def library_writer(func: ast.AST, globs: Mapping[str, Any], logs: bool = True) -> bool:
    """Whether a call of `func`, not a function of the user's, changes what
    it is handed first: one of `_WRITERS`, a builtin type's changing method
    called on the type (`list.append`, `dict.update`), an `operator`
    function changing its first argument, a method of a library's object a
    global holds (`RNG.shuffle`), numpy's `copyto`, `put` or a `shuffle` of
    any object, or what `operator.methodcaller` makes of a changing
    method's name (or of a name the text does not spell). `logs`: an
    append counts (a count or a log), else only another change."""
    methods = MUTATORS if logs else MUTATORS - LOGS
    if isinstance(func, ast.Call):
        maker = _resolved(func.func, globs)
        if maker is not operator.methodcaller:
            return False
        name = func.args[0] if func.args else None
        return not (isinstance(name, ast.Constant) and isinstance(name.value, str)) or name.value in methods
    if isinstance(func, ast.Attribute) and func.attr == "shuffle":  # `np.random.default_rng(s).shuffle(ARR)`
        return True
    target = _resolved(func, globs)
    if isinstance(target, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return target.__name__ in methods  # `list.append(LOG, x)`
    home = getattr(target, "__module__", None)
    if isinstance(home, str) and home.partition(".")[0] == "numpy":
        return getattr(target, "__name__", None) in _NUMPY_WRITERS
    try:
        method = _OPERATORS.get(target)  # type: ignore[call-overload]
    except TypeError:  # not hashable: no `operator` function
        method = None
    return method in methods if method is not None else any(getattr(target, "__func__", target) is w for w in _WRITERS)


def _resolved(node: ast.AST, globs: Mapping[str, Any]) -> object:
    """What a dotted name names, builtins included, read without running
    code: a module's or class's own attributes, and the class attribute a
    library object's method is (`RNG.shuffle` -> `random.Random.shuffle`)."""
    if isinstance(node, ast.Name):
        return globs[node.id] if node.id in globs else vars(builtins).get(node.id)
    if isinstance(node, ast.Call) and len(node.args) == 1 and _resolved(node.func, globs) is type:
        value = _resolved(node.args[0], globs)  # `type(LOG).append`, as `list.append`
        return None if value is None else type(value)
    if not isinstance(node, ast.Attribute):
        return None
    owner = _resolved(node.value, globs)
    if node.attr == "__class__" and owner is not None:  # `LOG.__class__.append`
        return type(owner)
    if isinstance(owner, types.ModuleType):
        return vars(owner).get(node.attr)
    if owner is None:
        return None
    try:
        return inspect.getattr_static(
            owner if isinstance(owner, type) else type(owner), node.attr, None
        )
    except Exception:  # a metaclass whose lookups raise: not told
        return None


# A library's object (not of the user's class) whose every method but these
# changes it: a draw moves a generator of random numbers, a read or a write
# moves a stream, a get or a put changes a queue.
_DRAWN_READS: tuple[tuple[tuple[type, ...], frozenset[str]], ...] = (
    ((random.Random,), frozenset({"getstate"})),
    ((io.IOBase,), frozenset({"getvalue", "getbuffer", "tell", "readable", "writable", "seekable", "fileno", "isatty"})),
    ((queue.Queue, queue.SimpleQueue), frozenset({"qsize", "empty", "full"})),
)


def is_queue(obj: object) -> bool:
    """A queue of `queue` or of asyncio, looked for only where asyncio is
    loaded (no object can be one otherwise: a sync run does not load it)."""
    if isinstance(obj, (queue.Queue, queue.SimpleQueue)):
        return True
    aio = sys.modules.get("asyncio")
    return aio is not None and isinstance(obj, aio.Queue)
# The methods whose name says they change a library's object of another class:
# a model fitted (`MODEL.fit(X)`), its parameters or a setting set, a seed.
LIBRARY_CHANGERS = frozenset(
    "fit partial_fit fit_transform fit_predict set_params set_output seed setstate set put put_nowait "
    "write writelines send step zero_grad train load_state_dict reset add_section read_string read_dict".split()
)


def library_changes(obj: object, attr: str) -> bool:
    """Whether calling method `attr` of `obj`, a library's object a global
    holds, changes it: any but a few that only look of a generator of
    random numbers (numpy's too), a stream, a queue or an iterator
    (`RNG.random()`, `BUF.write(s)`, `Q.put(x)`, `IT.__next__()`), else
    one whose name says so (`LIBRARY_CHANGERS`, `MUTATORS`). Another
    (`MODEL.predict(X)`, `DF.head()`) is a read: told by name only, since
    counting each as a write would digest the object at each call of the
    step and keep a cached step reading it from its cache."""
    if attr in MUTATORS or attr in LIBRARY_CHANGERS:
        return True
    kind = type(obj)
    for types_, reads in _DRAWN_READS:
        if issubclass(kind, types_):
            return attr not in reads
    if is_queue(obj):  # asyncio's
        return attr not in _DRAWN_READS[-1][1]
    home = str(getattr(kind, "__module__", "")).partition(".")[0]
    if home == "numpy" and kind.__name__ in ("Generator", "RandomState"):
        return attr not in ("bit_generator", "get_state")
    return drawn(obj) and attr in ("__next__", "send", "throw", "close")


def drawn(obj: object) -> bool:
    """Whether `obj` is an iterator (`next(IT)` changes it): not a builtin container."""
    kind = type(obj)
    return hasattr(kind, "__next__") and getattr(kind, "__iter__", None) is not None and not isinstance(obj, (str, bytes))


def library_object(value: object) -> bool:
    """Whether `value` is an object of a library's class: no class, module or function."""
    plain = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
    return not isinstance(value, plain) and not users_class(type(value))


def library_write(call: ast.Call, globs: Mapping[str, Any], logs: bool) -> str | None:
    """The global whose library object `call` changes (`library_changes`):
    `RNG.random()`, `MODEL.fit(X)`, `next(IT)`, a library's hidden generator
    (`hiddenrng`: `random.seed(x)`); None for another call. Not
    an append when not `logs` (a log, `stepstate.state_logged`)."""
    if (hidden := hidden_write(call, globs)) is not None:  # `random.seed(x)`, `np.random.rand()`
        return hidden
    func = call.func
    if isinstance(func, ast.Name) and func.id == "next" and call.args:
        held, attr = call.args[0], "__next__"
        if func.id in globs:  # a `next` of the module's own
            return None
    elif isinstance(func, ast.Attribute):
        held, attr = func.value, func.attr
    else:
        return None
    name, value = _held_by(held, globs)
    if name is None or not library_object(value) or (not logs and attr in LOGS):
        return None
    return name if library_changes(value, attr) else None


def _held_by(node: ast.AST, globs: Mapping[str, Any]) -> tuple[str | None, object]:
    """The global that `node` names (`RNG`) and its value; for a module's
    attribute (`rng.R`, `next(tally.IDS)`) of a module of the user's, the
    module's global: a draw there changes what the module holds, which the
    step's module reaches by that name (a library's, `sys.stdout.write`,
    keeps the process's state, not the program's)."""
    if isinstance(node, ast.Name):
        return (node.id, globs[node.id]) if node.id in globs else (None, None)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        module = globs.get(node.value.id)
        if isinstance(module, types.ModuleType) and node.attr in vars(module) and user_module(module):
            return node.value.id, vars(module)[node.attr]
    return None, None
