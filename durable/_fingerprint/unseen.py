"""Code whose text durable cannot read changing the user's modules: the
program of `python -c`, lines typed at the plain REPL or `python -` (a
`__main__` with no file). `elsewhere` reads the statements of the user's
other modules for writes into a module's globals (`helpers.CFG["k"] = 2`
in a script); such code has none to read, so `flow.CFG["k"] = 3` typed
between two calls of a completed run was no change and the second call
replayed the first's output. When such code calls durable (through the
user's functions only: not pytest's or a pool's worker that happens to
start from `python -c`), a global of another module it may change counts
by its contents too (fail closed), unless the user's functions write it
themselves (`RUNS.append(x)` in a step, a log another step reads): what
they fill between calls is the program's state, not its configuration,
and counting it would refuse every call again.

Pure standard library."""

from __future__ import annotations

import ast
import os
import sys
import types
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError
from .attributes import attribute_tokens
from .bindings import module_statements
from .loaded import loaded_state
from .outsidevalues import items_tokens
from .userfiles import is_user_file
from .values import content_tokens, hash_tokens
from .written import written_in

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# id(a module's first statement) -> (it, the module-level names its functions write)
_WRITTEN: dict[int, tuple[ast.AST, frozenset[str]]] = {}


def unseen_part(name: str, obj: object, namespace: Mapping[str, Any]) -> str | None:
    """The hash of `obj`'s contents, `name` of the module whose namespace is
    `namespace`, when code with no text may have changed it (`unseen_change`)."""
    if not unseen_change(namespace, name):
        return None
    toks = content_tokens(obj)
    toks = toks if toks is not None else attribute_tokens(obj)
    toks = toks if toks is not None else items_tokens(obj)
    return None if toks is None else hash_tokens(["unseen", *toks])


def unseen_change(namespace: Mapping[str, Any], name: str) -> bool:
    """Whether code with no text to read (`__main__` without a file) drives
    this call and may have changed the object `name` of another module
    (whose namespace is `namespace`) holds: not a module, a function or a
    number (rebound, it counts by value), nor an object a function of the
    user's writes (through any name bound to it)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)  # `python -` names it "<stdin>"
    if main is None or (isinstance(path, str) and os.path.isabs(path)) or vars(main) is namespace:
        return False
    held = namespace.get(name)
    if isinstance(held, _FIXED) or not _driven_by(vars(main)):
        return False
    for module in loaded_state()[1]:
        names = vars(module)
        written = functions_write(names)
        if written is None:  # its text cannot be read: what it writes is not known
            continue
        if (names is namespace and name in written) or any(names.get(n) is held for n in written):
            return False
    return True


_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _driven_by(main: Mapping[str, Any]) -> bool:
    """Whether `main`'s code is on the stack, reached from here through
    durable's and the user's code alone (a library's frame, pytest's or a
    pool's, runs what is below it: the program is its own)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is main:
            return True
        filename = frame.f_code.co_filename
        root = str(frame.f_globals.get("__name__", "")).partition(".")[0]
        if not filename.startswith(_OWN) and not is_user_file(filename, root):
            return False
        frame = frame.f_back  # type: ignore[assignment]
    return False


_FIXED = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset, types.ModuleType,
          types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def functions_write(namespace: Mapping[str, Any]) -> frozenset[str] | None:
    """The module-level names the functions of the module whose namespace is
    `namespace` write (its program state); None when its text cannot be read."""
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
