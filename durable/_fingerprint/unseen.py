"""Code whose text durable cannot read changing the user's modules: the
program of `python -c`, lines typed at the plain REPL or `python -` (a
`__main__` with no file). `elsewhere` reads the statements of the user's
other modules for writes into a module's globals (`helpers.CFG["k"] = 2`
in a script); such code has none to read, so `flow.CFG["k"] = 3` typed
between two calls of a completed run was no change and the second call
replayed the first's output. While such code runs, a global of another
module it may change counts by its contents (fail closed), unless the
user's functions write it themselves (`RUNS.append(x)` in a step, a log
another step reads): what they fill between calls is the program's state,
not its configuration, and counting it would refuse every call again.

Pure standard library."""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError
from .bindings import module_statements
from .loaded import loaded_state
from .stepreach import written_in

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# id(a module's first statement) -> (it, the module-level names its functions write)
_WRITTEN: dict[int, tuple[ast.AST, frozenset[str]]] = {}


def unseen_change(namespace: Mapping[str, Any], name: str) -> bool:
    """Whether code with no text to read runs in the program (`__main__`
    without a file) and may have changed `name` of another module whose
    namespace is `namespace`: not when a function of the user's writes
    the object it holds (through any name bound to it)."""
    main = sys.modules.get("__main__")
    if main is None or isinstance(getattr(main, "__file__", None), str) or vars(main) is namespace:
        return False
    held = namespace.get(name)
    for module in loaded_state()[1]:
        names = vars(module)
        written = _written(names)
        if written is None:  # its text cannot be read: what it writes is not known
            continue
        if names is namespace and name in written:
            return False
        if any(names.get(n) is held for n in written) and not isinstance(held, _PLAIN):
            return False
    return True


_PLAIN = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset, types.ModuleType)


def _written(namespace: Mapping[str, Any]) -> frozenset[str] | None:
    try:
        statements = module_statements(namespace)
    except ConfigurationError:  # edited after import: refused where its text counts
        return None
    if not statements:
        return None
    hit = _WRITTEN.get(id(statements[0]))
    if hit is not None and hit[0] is statements[0]:
        return hit[1]
    found = written_in([s for s in statements if isinstance(s, _DEFS)])
    if len(_WRITTEN) >= 1024:
        _WRITTEN.clear()
    _WRITTEN[id(statements[0])] = (statements[0], found)
    return found
