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
import dis
import os
import sys
import types
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError
from .attributes import attribute_tokens
from .bindings import module_statements
from .changers import MUTATORS
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
    if isinstance(held, _FIXED):
        return False
    code = _driven_by(vars(main))
    if code is None or (_whole_program(code) and not _may_write(code, loaded_state()[1])):
        return False  # `python -c "import flow; flow.wf(10)"`: as `python run.py` of that text
    for module in loaded_state()[1]:
        names = vars(module)
        written = functions_write(names)
        if written is None:  # its text cannot be read: what it writes is not known
            continue
        if (names is namespace and name in written) or any(names.get(n) is held for n in written):
            return False
    return True


_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _driven_by(main: Mapping[str, Any]) -> types.CodeType | None:
    """The code of `main`'s outermost frame on the stack, when it is there,
    reached from here through durable's and the user's code alone (a
    library's frame, pytest's or a pool's, runs what is below it: the
    program is its own); None when it is not."""
    frame = sys._getframe(1)
    found = None
    while frame is not None:
        if frame.f_globals is main:
            found = frame.f_code
        else:
            filename = frame.f_code.co_filename
            root = str(frame.f_globals.get("__name__", "")).partition(".")[0]
            if found is None and not filename.startswith(_OWN) and not is_user_file(filename, root):
                return None
        frame = frame.f_back  # type: ignore[assignment]
    return found


def _whole_program(code: types.CodeType) -> bool:
    """Whether `code` is the whole program that ran in `__main__` so far:
    that of `python -c` or `python -` (one code object), not a line typed
    at the REPL or a notebook's cell, after others no frame shows."""
    argv = getattr(sys, "argv", None) or [""]
    return (
        code.co_name == "<module>" and argv[0] in ("-c", "-") and not hasattr(sys, "ps1")
        and not sys.flags.interactive and "IPython" not in sys.modules
    )  # fmt: skip


# What code may write another module's globals with, by name: a changing
# method, a builtin reaching a namespace, code made of text.
_WRITING = MUTATORS | frozenset({"setattr", "delattr", "exec", "eval", "compile", "globals", "vars", "reload",
                                 "__dict__", "modules", "import_module", "run_path", "run_module"})  # fmt: skip
_STORES = frozenset({"STORE_ATTR", "DELETE_ATTR", "STORE_SUBSCR", "DELETE_SUBSCR", "STORE_SLICE", "DELETE_SLICE"})


def _may_write(code: types.CodeType, modules: tuple[types.ModuleType, ...]) -> bool:
    """Whether the program `code` (its nested code too) may change a global
    of the user's `modules` itself, as `elsewhere` reads a script's text
    for: it stores into an attribute or an item of anything, names a
    changing method or a namespace (`_WRITING`), or names a global of
    theirs holding data (`flow.CFG`, handed to what may change it). Code
    only importing and calling the user's functions (`flow.wf(10)`) does
    not: its run counts as the same program's run from a file."""
    data = {k for m in modules for k, v in list(vars(m).items()) if not isinstance(v, _FIXED) and not callable(v)}
    for each in _codes(code):
        if set(each.co_names) & (_WRITING | data):
            return True
        if any(i.opname in _STORES for i in dis.get_instructions(each)):
            return True
    return False


def _codes(code: types.CodeType) -> list[types.CodeType]:
    found, todo = [], [code]
    while todo:
        each = todo.pop()
        found.append(each)
        todo += [c for c in each.co_consts if isinstance(c, types.CodeType)]
    return found


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
