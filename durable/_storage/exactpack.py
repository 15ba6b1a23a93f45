"""Whether a list or dict msgpack took comes back as it went in (`codec.pack_plain`):
msgpack packs a bytearray or a memoryview as bytes even with `strict_types`,
and a list or dict held twice comes back as two. Told in C where it can be:
a long list is a large output, and walking it in Python cost more than
packing it."""

from __future__ import annotations

import gc
import re
from collections.abc import Collection
from itertools import compress
from typing import Any

BIN_MARKER = re.compile(b"[\xc4-\xc6]")  # msgpack's bin 8, 16 and 32
SCALARS = frozenset({int, float, str, bool, type(None), bytes})


def holds_byte_buffer(value: Any) -> bool:
    """Whether a value msgpack took holds a bytearray or a memoryview."""
    todo = [value]
    while todo:
        v = todo.pop()
        t = type(v)
        if t is bytearray or t is memoryview:
            return True
        if t is list:
            if not only_scalars(v):
                todo += v
        elif t is dict:
            for part in (v.keys(), v.values()):
                if not only_scalars(part):
                    todo += part
    return False


def only_scalars(items: Collection[Any]) -> bool:
    """Whether a list (or a dict's keys or values) that msgpack took holds
    only scalars, none a byte buffer, told in C (a long list is a large
    output: walking it in Python cost more than packing it; `sharing` asks too). Of the exact
    plain types msgpack took, `sum` adds only numbers and `str.join` joins
    only strings; any other mix is told by the set of its types."""
    if len(items) < 16:
        return False  # a walk is as quick
    try:
        if type(next(iter(items))) is str:
            "".join(items)
        else:
            sum(items)  # None, bytes, lists, dicts... raise TypeError
    except TypeError:
        return set(map(type, items)).isdisjoint(_NOT_SCALAR)
    return True


_NOT_SCALAR = (list, dict, bytearray, memoryview)
_HELD = frozenset(_NOT_SCALAR)
_IS_HELD = _HELD.__contains__
_BUFFERS = frozenset({bytearray, memoryview})


def unplain(value: list[Any] | dict[Any, Any], sharing: bool) -> bool:
    """Whether a list or dict msgpack took holds a bytearray or a memoryview,
    or (`sharing`) one list or dict twice (`[row, row]`): it would come back
    as two equal ones, which a step that changes one tells apart, and so
    does the digest of the next step given it (pickle keeps it one). One
    walk, level by level, each level's parts listed in C
    (`gc.get_referents`: a list's items, a dict's values, and its keys
    when one is not a str). A level holding one list or dict alone (most
    outputs: a dict holding one list) cannot repeat one: ids are compared
    only from the first level holding two. A long list or dict of scalars
    is told without a walk (`only_scalars`: a large output)."""
    if len(value) >= 16 and (
        only_scalars(value.values()) and only_scalars(value.keys())
        if isinstance(value, dict)
        else only_scalars(value)
    ):
        return False
    level: list[Any] = [value]
    seen: set[int] | None = None
    while True:
        held = gc.get_referents(*level)
        if len(held) < 16:  # a loop: a comprehension's own function costs more here
            level = []
            for x in held:
                if x.__class__ in _HELD:
                    level.append(x)
        else:
            level = list(compress(held, map(_IS_HELD, map(type, held))))
        if not level:
            return False
        if len(level) == 1 and seen is None:  # no cycle reaches here: msgpack refused it
            if level[0].__class__ in _BUFFERS:
                return True
            continue
        if not _BUFFERS.isdisjoint(map(type, level)):
            return True
        if sharing:
            if seen is None:
                seen = set()
            before = len(seen)
            seen.update(map(id, level))
            if len(seen) != before + len(level):
                return True
