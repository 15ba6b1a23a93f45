"""Whether two code objects are the same code: what `source` compares a
function's running code with, compiled again from the text it reads.

Pure standard library."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any


def nested_code(code: types.CodeType) -> Iterator[types.CodeType]:
    """`code` and every code object defined inside it, at any depth."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from nested_code(const)


_SHAPE = ("co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_argcount",
          "co_posonlyargcount", "co_kwonlyargcount", "co_flags", "co_name")  # fmt: skip


def same_code(a: types.CodeType, b: types.CodeType) -> bool:
    if any(getattr(a, k) != getattr(b, k) for k in _SHAPE):
        return False
    return _same_items(a.co_consts, b.co_consts)


def _same_items(xs: tuple[Any, ...], ys: tuple[Any, ...]) -> bool:
    return len(xs) == len(ys) and all(_same_const(x, y) for x, y in zip(xs, ys, strict=True))


def _same_const(x: object, y: object) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
        return same_code(x, y)
    if isinstance(x, tuple) and isinstance(y, tuple):
        return _same_items(x, y)
    if isinstance(x, (float, complex)):
        return repr(x) == repr(y)  # -0.0 is not 0.0, nan is nan
    return x == y
