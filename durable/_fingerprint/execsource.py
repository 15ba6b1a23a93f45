"""The source of a function a module made by `exec` of a text it holds
(`exec(SRC, globals())`, `exec(SRC, NS)` with `SRC = '''def made(x): ...'''`,
as config loaders, stored-source patterns and notebooks exported as
scripts do): Python names its code `<string>` and keeps no text of it, so
`source_of` has none. The texts the user's loaded modules hand to `exec`
or `compile` at module level, as a constant or a global string, are the
candidates; one counts only when compiling it now gives the running code
(`runs_this_source`), so the fingerprint reads exactly the code that runs.
Any other text (read from a file, built at run time) is not found: the
function's fingerprint then asks for `version=`, as before.

Pure standard library."""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

from .imports import user_module
from .inplace import run_now
from .source import Source, parse, runs_this_source, source_of

_RUNNERS = ("exec", "compile")


def exec_source(code: types.CodeType, globs: Mapping[str, Any] | None) -> Source | None:
    """The text `code` was compiled from by `exec` in a module of the
    user's, checked to give `code` again; None when none does."""
    if code.co_filename != "<string>":
        return None
    for module in _modules(globs):
        for text in _texts(module):
            src = parse(text)
            if src.tree is not None and runs_this_source(code, src, globs):
                return src
    return None


def _modules(globs: Mapping[str, Any] | None) -> Iterator[types.ModuleType]:
    """The module whose namespace `globs` is first (`exec(SRC, globals())`),
    then every loaded module of the user's (`exec(SRC, NS)` in another)."""
    home = sys.modules.get(str((globs or {}).get("__name__")))
    if home is not None and vars(home) is globs:
        yield home
    for module in list(sys.modules.values()):
        if isinstance(module, types.ModuleType) and module is not home and _may_exec(module):
            yield module


def _may_exec(module: types.ModuleType) -> bool:
    filename = getattr(module, "__file__", None)
    return isinstance(filename, str) and filename.endswith(".py") and user_module(module)


def _texts(module: types.ModuleType) -> Iterator[str]:
    """The texts `module`'s statements give `exec` or `compile` as they run
    at import: a string constant, or a global of the module holding one."""
    namespace, filename = vars(module), getattr(module, "__file__", None)
    if not isinstance(filename, str):  # `python -c`: no text to read
        return
    src = source_of(filename, namespace)
    if src.tree is None or not any(r + "(" in src.text for r in _RUNNERS):
        return
    for stmt in src.tree.body:
        for node in run_now(stmt):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _RUNNERS):
                continue
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield arg.value
            elif isinstance(arg, ast.Name) and isinstance(text := namespace.get(arg.id), str):
                yield text
