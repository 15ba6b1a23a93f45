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
import operator
import random
import types
from collections.abc import Mapping
from typing import Any

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
