"""Which calls of a library's or a builtin's change the object handed to
them first, as `LOG.append(x)` changes `LOG`: `heapq.heappush(LOG, x)`,
`bisect.insort(LOG, x)`, `random.shuffle(LOG)`, a builtin type's method
called through its class (`list.append(LOG, x)`, `dict.update(CFG, k=v)`,
`dict.__setitem__(CFG, k, v)`) and `operator`'s in-place functions
(`operator.setitem(CFG, k, v)`, `operator.iadd(LOG, [x])`). Any other
function handed a global is taken to read it (`print(LOG)`, `sum(LOG)`).

Pure standard library."""

from __future__ import annotations

import ast
import bisect
import builtins
import heapq
import operator
import random
import types
from collections.abc import Mapping

from .inplace import MUTATORS
from .written import DUNDERS, LOGS

_WRITERS = (heapq.heappush, heapq.heappop, heapq.heapify, heapq.heapreplace, heapq.heappushpop,
            bisect.insort, bisect.insort_left, bisect.insort_right, random.Random.shuffle)  # fmt: skip
# An `operator` function changing its first argument, as the method it calls.
_OPERATORS = {
    operator.setitem: "__setitem__", operator.delitem: "__delitem__", operator.iadd: "extend",
    operator.iconcat: "extend", operator.ior: "update", operator.isub: "__isub__",
    operator.iand: "__iand__", operator.ixor: "__ixor__", operator.imul: "__imul__",
}  # fmt: skip
_DESCRIPTORS = (types.MethodDescriptorType, types.WrapperDescriptorType)


def writes_first(func: ast.AST, globs: Mapping[str, object], logs: bool) -> bool:
    """Whether the call of `func` (named in a module of namespace `globs`)
    changes the object it is handed first. `logs`: an append counts (a
    count or a log, `stepstate.state_logged`), else only another change."""
    target = _named(func, globs)
    if any(getattr(target, "__func__", target) is w for w in _WRITERS):
        return True
    if isinstance(target, _DESCRIPTORS):  # `list.append`, `dict.__setitem__`
        name = target.__name__
    else:
        try:
            name = _OPERATORS.get(target)  # type: ignore[call-overload]
        except TypeError:  # not hashable: no `operator` function
            return False
        if name is None:
            return False
    return name in DUNDERS or name in (MUTATORS if logs else MUTATORS - LOGS)


def _named(func: ast.AST, globs: Mapping[str, object]) -> object:
    """What a dotted name names, a builtin (`list`) or a class's attribute
    (`collections.deque.append`) included, looked up without running code
    of the user's: a class of theirs is not asked (`helperreads` follows its
    methods as code of theirs)."""
    if isinstance(func, ast.Name):
        return globs[func.id] if func.id in globs else vars(builtins).get(func.id)
    if isinstance(func, ast.Call) and len(func.args) == 1 and _named(func.func, globs) is type:
        value = _named(func.args[0], globs)  # `type(LOG).append`, as `list.append`
        return None if value is None else type(value)
    if not isinstance(func, ast.Attribute):
        return None
    owner = _named(func.value, globs)
    if func.attr == "__class__" and owner is not None:  # `LOG.__class__.append`
        return type(owner)
    if isinstance(owner, types.ModuleType):
        return vars(owner).get(func.attr)
    if isinstance(owner, type) and owner.__module__ in ("builtins", "collections", "array"):
        return next((vars(c)[func.attr] for c in owner.__mro__ if func.attr in vars(c)), None)
    return None
