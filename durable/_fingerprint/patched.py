"""Functions that IPython's `%autoreload 2` patched in place without
running their module again (its deduperreload, IPython 9): when only the
bodies of a module's functions changed, it compiles each changed `def` on
its own, from `ast.unparse` of its node (a method inside a
`class __autoreload_class__:`), and gives the old function that code. The
code starts on line 1 (2 for a method) under the module's file name, so
the line `source.runs_this_source` looks at holds no such definition,
though the file's text is what runs. Pure standard library."""

from __future__ import annotations

import ast
import textwrap
import types
import warnings
from functools import lru_cache

from .nodes import walk

# Where the deduper's compile puts a function, and a method.
_FUNCTION_LINE, _METHOD_LINE = 1, 2
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_MANGLED = "_autoreload_class__"  # `__x` in `class __autoreload_class__:`


def may_be_patched(code: types.CodeType) -> bool:
    """Cheap: only code starting where the deduper puts it can be its."""
    return code.co_firstlineno in (_FUNCTION_LINE, _METHOD_LINE)


@lru_cache(maxsize=256)
def compiled_alone(
    tree: ast.Module, filename: str, name: str, line: int
) -> tuple[tuple[int, types.CodeType], ...]:
    """For each `def name` of `tree`, the line it starts on in the file and
    the code the deduper would make of it (compiled on its own, as it
    compiles it: no `__future__` flags), when that code starts on `line`."""
    found = []
    for node in walk(tree):
        if not isinstance(node, _DEFS) or node.name != name:
            continue
        text = textwrap.dedent(ast.unparse(node))
        if line == _METHOD_LINE:
            text = "class __autoreload_class__:\n" + textwrap.indent(text, "    ")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escapes etc. are not ours to report
                module = compile(text, filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        found += [(first, co) for co in _nested(module) if _starts(co, name, line)]
    # A private name (`self.__x`) in a method it compiles is mangled with its
    # own class's name, not the class's: that code is not what the text makes.
    return tuple((first, co) for first, co in found if not _mangled(co))


def _mangled(code: types.CodeType) -> bool:
    names = [n for co in _nested(code) for n in (*co.co_names, *co.co_varnames)]
    return any(_MANGLED in n for n in names)


def _starts(code: types.CodeType, name: str, line: int) -> bool:
    return code.co_name == name and code.co_firstlineno == line


def _nested(code: types.CodeType) -> list[types.CodeType]:
    out = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out += _nested(const)
    return out
