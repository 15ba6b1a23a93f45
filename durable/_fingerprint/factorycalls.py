"""The module-level calls of the factory that made a function no
module-level name holds (`print(mk(1, opts)(5))`, or `w = mk(1, opts)` in
a script importing `mk`), which count for it as the statement binding a
name would (`live.read_live`).

Pure standard library. Such a function holds what counts by its type only
(a list, an object: `holds_by_type_only`); without a statement naming it,
`mk(1, [1] * N)(5)` run again with another `N` replayed the completed run
made with the first.
"""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError
from .bindings import module_statements
from .inplace import run_now, units

# (id of the module's first statement, factory name) -> (that body, the calls found)
_SEEN: dict[tuple[int, str], tuple[tuple[ast.AST, ...], tuple[ast.Call, ...]]] = {}


def factory_calls(fn: Any, namespace: Mapping[str, Any]) -> tuple[tuple[bool, tuple[ast.Call, ...]], ...]:
    """For the module of `fn` and, when the factory is imported there, the
    script (`__main__`): (whether it is the script, its module-level calls
    of the factory). Empty when the factory is not a module-level function
    of that module (a method's, or one made in turn by a call), or its
    module has no text to read."""
    qualname = str(getattr(fn, "__qualname__", ""))
    factory, _, rest = qualname.partition(".<locals>.")
    maker = namespace.get(factory)
    if not rest or "." in factory or not _made_by(fn, maker):
        return ()
    found = [(False, _calls(namespace, factory))]
    main = sys.modules.get("__main__")
    script = vars(main) if main is not None and vars(main) is not namespace else {}
    found += [(True, _calls(script, name)) for name, value in list(script.items()) if value is maker]
    return tuple((is_main, calls) for is_main, calls in found if calls)


def _made_by(fn: Any, maker: object) -> bool:
    """Whether `maker`'s code holds `fn`'s (a function made by calling it)."""
    code, todo = getattr(fn, "__code__", None), [getattr(maker, "__code__", None)]
    while todo:
        outer = todo.pop()
        consts = getattr(outer, "co_consts", ())
        if code in consts:
            return True
        todo += [c for c in consts if isinstance(c, types.CodeType)]
    return False


def _calls(namespace: Mapping[str, Any], name: str) -> tuple[ast.Call, ...]:
    """The calls of `name` a module-level statement makes as it runs. Once
    per parsed source and name: an edit parses anew."""
    try:
        body = tuple(module_statements(namespace) or ())
    except ConfigurationError:  # edited after import: refused where its code is read
        return ()
    key = (id(body[0]) if body else 0, name)
    seen = _SEEN.get(key)
    if seen is not None and seen[0] == body:
        return seen[1]
    calls = tuple(
        node for stmt in units(list(body)) for node in run_now(stmt)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
    )  # fmt: skip
    if len(_SEEN) >= 256:
        _SEEN.clear()
    _SEEN[key] = (body, calls)
    return calls
