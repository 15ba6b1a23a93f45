"""Where code names `sys.modules` or `import_module` without reading a
namespace of the user's modules (`stepreach._names` takes the rest for a
read through the step's own module's namespace, `sys.modules[__name__]`).

Pure standard library."""

from __future__ import annotations

import ast
import sys

from .nodes import walk


def is_modules(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "modules"


def other_modules(node: ast.AST) -> set[int]:
    """The `sys.modules` and `import_module` in `node` that read no namespace
    of the user's: a membership test (`"torch" in sys.modules`), and a
    module of the standard library named by its text (`sys.modules.get("json")`,
    `sys.modules["json"]`, `import_module("json")`)."""
    found: set[int] = set()
    for n in walk(node):
        if isinstance(n, ast.Compare) and all(isinstance(op, (ast.In, ast.NotIn)) for op in n.ops):
            found.update(id(c) for c in n.comparators if is_modules(c))
        elif isinstance(n, ast.Subscript) and is_modules(n.value) and _stdlib(n.slice):
            found.add(id(n.value))
        elif isinstance(n, ast.Call) and n.args and _stdlib(n.args[0]):
            func = n.func
            if isinstance(func, ast.Attribute) and func.attr == "get" and is_modules(func.value):
                found.add(id(func.value))
            elif isinstance(func, (ast.Name, ast.Attribute)) and (func.id if isinstance(func, ast.Name) else func.attr) == "import_module":
                found.add(id(func))
    return found


def _stdlib(key: ast.AST) -> bool:
    """Whether `key` is the text naming a module of the standard library."""
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return False
    return key.value.partition(".")[0] in getattr(sys, "stdlib_module_names", ())
