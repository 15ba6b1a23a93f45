"""Which global a store or a call reaches, read from the head of its chain.

Pure standard library. `cfg.SCALE = s` reaches `SCALE` of the module `cfg`;
so do `setattr(cfg, "SCALE", s)`, `vars(cfg)["SCALE"] = s`,
`cfg.__dict__["SCALE"] = s`, `importlib.import_module("cfg").SCALE = s`,
`sys.modules["cfg"].SCALE = s`, and `m.SCALE = s` after `m = cfg`; and
`c["k"] = v` after `c = cfg.CONFIG` reaches `CONFIG`. A key the text does
not spell (`vars(cfg).update(...)`, `setattr(cfg, name, v)`) reaches any
global of that module (`ANY`).
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from collections import ChainMap
from collections.abc import Iterable, Mapping

from .imports import module_imported

# A global of a module reached through `globals()[key]` with a key the
# text does not spell: any global of that module may be filled.
ANY = "*"
# The home of an `ANY` that may be in any module: a function the run is
# given, helpers past those followed, a module named at run time.
EVERYWHERE: Mapping[str, object] = types.MappingProxyType({})
Hit = tuple[str, Mapping[str, object]]  # (a global's name, the namespace it lives in)
_SETTERS = frozenset({"setattr", "delattr", "__setattr__", "__delattr__"})


class Heads:
    """What the names a function's chains start from hold: the modules it
    can name (its own imports and its module's globals), and its locals
    bound to a module or to a global object (`m = cfg`, `c = cfg.CONFIG`)."""

    def __init__(self, nodes: Iterable[ast.AST], modules: Mapping[str, object], namespace: Mapping[str, object]):
        self.namespace = namespace
        self.objects: dict[str, Hit] = {}
        aliases: dict[str, object] = {}
        self.modules = ChainMap[str, object](aliases, dict(modules))
        for node in nodes:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign) and isinstance(sub.value, (ast.Name, ast.Attribute)):
                    for target in sub.targets:
                        if isinstance(target, ast.Name):
                            self._alias(target.id, sub.value, aliases)

    def _alias(self, local: str, value: ast.expr, aliases: dict[str, object]) -> None:
        held = self._module(value)
        if held is not None:
            aliases[local] = held
            return
        hit = self.reached(value) if isinstance(value, ast.Attribute) else None
        if isinstance(value, ast.Name) and value.id in self.namespace:
            hit = value.id, self.namespace
        if hit is not None:
            self.objects[local] = hit

    def _module(self, expr: ast.AST) -> types.ModuleType | None:
        """The module `expr` names: `cfg`, `pkg.cfg`, `__import__("pkg.cfg").cfg`."""
        value: object = None
        if isinstance(expr, ast.Name):
            value = self.modules.get(expr.id)
        elif isinstance(expr, ast.Call):
            value = module_imported(expr)
        elif isinstance(expr, ast.Attribute) and (held := self._module(expr.value)) is not None:
            value = vars(held).get(expr.attr)
        return value if isinstance(value, types.ModuleType) else None

    def reached(self, expr: ast.AST) -> Hit | None:
        """(the first global under a module along `expr`'s chain, that
        module's namespace), or the global object a local alias holds; None
        when the chain starts at neither."""
        path: list[ast.AST] = []
        while isinstance(expr, (ast.Attribute, ast.Subscript, ast.Call)):
            path.append(expr)
            expr = expr.func if isinstance(expr, ast.Call) else expr.value
        path.reverse()
        if isinstance(expr, ast.Name) and expr.id in self.objects:
            return self.objects[expr.id]
        if not isinstance(expr, ast.Name) or not path:
            return None
        if expr.id in ("globals", "vars", "__import__") and expr.id not in self.modules:
            return self._builtin(expr.id, path)
        return _walk(self.modules.get(expr.id), path)

    def _builtin(self, name: str, path: list[ast.AST]) -> Hit | None:
        call = path[0]
        if not isinstance(call, ast.Call):
            return None
        if name == "globals":  # `globals()["K"]`; `globals().update(...)` may fill any
            return None if call.args else _keyed(self.namespace, path[1:])
        if len(call.args) != 1:
            return None
        if name == "__import__":  # `__import__("pkg.cfg")` returns `pkg`
            held = module_imported(call)
            return _walk(held, path[1:]) if isinstance(held, types.ModuleType) else (ANY, EVERYWHERE)
        held = self._module(call.args[0])  # `vars(cfg)`, or `vars(NS)` of an object
        if held is not None:
            return _keyed(vars(held), path[1:])
        return self.object_of(call.args[0])

    def object_of(self, expr: ast.AST) -> Hit | None:
        """The global `expr` names (`CONFIG`, `cfg.CONFIG`, a local alias)."""
        if isinstance(expr, ast.Name) and expr.id in self.objects:
            return self.objects[expr.id]
        if isinstance(expr, ast.Name) and expr.id in self.namespace:
            return expr.id, self.namespace
        return self.reached(expr) if isinstance(expr, ast.Attribute) else None

    def set_by_call(self, call: ast.Call) -> Hit | None:
        """What `setattr(X, "k", v)`, `delattr(X, "k")` or
        `object.__setattr__(X, "k", v)` sets: `k` of a module X (any of its
        globals when the name is not spelled), else the global X."""
        func = call.func
        named = func.id if isinstance(func, ast.Name) and func.id not in self.modules else None
        named = func.attr if isinstance(func, ast.Attribute) else named
        if named not in _SETTERS or not call.args:
            return None
        held = self._module(call.args[0])
        if held is None:
            return self.object_of(call.args[0])
        key = call.args[1] if len(call.args) > 1 else None
        spelled = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else ANY
        return spelled, vars(held)


def _walk(value: object, path: list[ast.AST]) -> Hit | None:
    for i, part in enumerate(path):
        if not isinstance(value, types.ModuleType) or not isinstance(part, ast.Attribute):
            return None
        if part.attr == "__dict__":  # `cfg.__dict__["SCALE"] = s`
            return _keyed(vars(value), path[i + 1 :])
        inner = vars(value).get(part.attr)
        after = path[i + 1] if i + 1 < len(path) else None
        if inner is importlib.import_module and isinstance(after, ast.Call) and after.args:
            return _walk_imported(after.args[0], path[i + 2 :])
        if inner is sys.modules and isinstance(after, ast.Subscript):
            return _walk_imported(after.slice, path[i + 2 :])
        if not isinstance(inner, types.ModuleType):
            return part.attr, vars(value)
        value = inner
    return None


def _keyed(namespace: Mapping[str, object], path: list[ast.AST]) -> Hit:
    key = path[0] if path else None
    name = getattr(key.slice, "value", None) if isinstance(key, ast.Subscript) else None
    return (name if isinstance(name, str) else ANY), namespace


def _walk_imported(name: ast.AST, path: list[ast.AST]) -> Hit | None:
    """Along the module a name given to `import_module` names, as imported
    now; any module's global when the name is not spelled or not imported."""
    spelled = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None
    module = sys.modules.get(spelled) if spelled else None
    return _walk(module, path) if module is not None else (ANY, EVERYWHERE)
