"""Whether a module's file is the source of its running code: every
function of the file bound in its namespace (and the methods of its
classes) still matches the text. Pure standard library."""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from typing import Any

from .source import Source, runs_this_source


def module_runs_this_source(filename: str, namespace: Mapping[str, Any], src: Source) -> bool:
    """Whether every function of `filename` bound in `namespace` (and the
    methods of its classes) still matches `src`: text read around them (a
    module-level assignment) is then the text that ran."""
    for code in _codes_from(filename, namespace):
        if not runs_this_source(code, src, namespace):
            return False
    return True


def _codes_from(filename: str, namespace: Mapping[str, Any]) -> Iterator[types.CodeType]:
    module = namespace.get("__name__")
    for value in list(namespace.values()):
        try:  # a proxy (a web framework's `request`) may raise anything
            members = list(vars(value).values()) if _class_of(value, module) else [value]
        except Exception:
            continue
        for member in members:
            code = _code_of(member)
            if code is not None and code.co_filename == filename:
                yield code


def _code_of(value: object) -> types.CodeType | None:
    try:
        code = getattr(getattr(value, "__func__", value), "__code__", None)
    except Exception:
        return None
    return code if isinstance(code, types.CodeType) else None


def _class_of(value: object, module: object) -> bool:
    return isinstance(value, type) and getattr(value, "__module__", None) == module
