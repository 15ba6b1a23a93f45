"""A class a step writes through its own methods (`cls.mode = m`,
`type(self).mode = m`), and where another step reads what it wrote
(`Cfg.mode`, `self.mode` in a method of the class): `stepstate`'s
questions about classes.

Pure standard library."""

from __future__ import annotations

import ast
from typing import Any

from .changers import LOGS, MUTATORS
from .nodes import walk
from .reach import is_durable
from .selffills import filled_from_module
from .written import method

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def class_attributes(fn: Any, defs: list[ast.AST], name: str) -> frozenset[str] | None:
    """The attributes of class `name` that `fn` writes or changes in place
    (`name.runs += 1`, `cls.mode = m`, `cls.seen.append(x)`); None when it
    may change another (`setattr(name, ...)`, `vars(cls)`): not told."""
    if len(defs) != 1:
        return None
    first, on_class = _first(fn, defs[0], name)
    found: set[str] = set()
    parts = {id(a.value) for a in walk(defs[0]) if isinstance(a, ast.Attribute)}
    for sub in walk(defs[0]):
        if isinstance(sub, ast.Attribute) and _is_class(sub.value, name, first, on_class):
            found.add(sub.attr)
        elif isinstance(sub, ast.Name) and sub.id in (name, first if on_class else name) and id(sub) not in parts:
            return None  # the class whole: handed to a call, or aliased
    return frozenset(found)


def reads_class(d: ast.AST, name: str, cls: type, attrs: frozenset[str], owner: str | None) -> bool:
    """Whether `d` (a method of class `owner`, or None) may read one of
    `attrs` of class `name` (`cls`): by name (`Cfg.mode`), through its first
    parameter when it is a method of it (`self.mode`, `cls.mode`), through
    a method that is no step (`Cfg.describe()` reading `cls.mode`), or the
    class whole (`f(Cfg)`, `vars(self)`)."""
    params = [*d.args.posonlyargs, *d.args.args] if isinstance(d, _FUNCS) else []
    via = {name} | ({params[0].arg} if owner == name and params else set())
    # Data it does not write, a step (read by its own body), or one it only
    # stores (`cls.runs += 1`: a count all bump).
    harmless = {id(a.value) for a in walk(d) if isinstance(a, ast.Attribute)
                and ((a.attr not in attrs and _inert(cls, a.attr)) or not isinstance(a.ctx, ast.Load))}  # fmt: skip
    return any(isinstance(n, ast.Name) and n.id in via and id(n) not in harmless for n in walk(d))


def _inert(cls: type, attr: str) -> bool:
    """Whether reading `attr` of `cls` (or of its instance) runs none of its
    code: plain data, an instance's own attribute, or a step or workflow."""
    for klass in cls.__mro__:
        if attr in vars(klass):
            member = vars(klass)[attr]
            if is_durable(getattr(member, "__func__", member)):  # under `staticmethod` too
                return True
            return not callable(member) and not hasattr(type(member), "__get__")
    return not hasattr(cls, "__getattr__")


def _first(fn: Any, node: ast.AST, name: str) -> tuple[str, bool]:
    """`fn`'s first parameter when `fn` (its `def` is `node`) is a method of
    class `name` (else ""), and whether it is the class (a class method)."""
    owner = getattr(fn, "__qualname__", "").rpartition(".")[0]
    return first_of(node) if owner == name else ("", False)


def first_of(node: ast.AST) -> tuple[str, bool]:
    """A method's first parameter ("" for none), and whether it is the class."""
    if not isinstance(node, _FUNCS) or not (params := [*node.args.posonlyargs, *node.args.args]):
        return "", False
    return params[0].arg, any(isinstance(d, ast.Name) and d.id == "classmethod" for d in node.decorator_list)


def _is_class(node: ast.AST, name: str, first: str, on_class: bool) -> bool:
    """`Cfg`, or through a method's first parameter: `cls`, `type(self)`, `self.__class__`."""
    if isinstance(node, ast.Name):
        return node.id == name or (on_class and node.id == first)
    if isinstance(node, ast.Attribute):
        return node.attr == "__class__" and isinstance(node.value, ast.Name) and node.value.id == first != ""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
        and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == first != ""
    )  # fmt: skip


def through_class(fn: Any, defs: list[ast.AST], globs: Any, logs: bool) -> frozenset[str]:
    """The module-level name of the class whose method `fn` is, when it
    writes an attribute of the class through `cls` (a class method),
    `type(self)` or `self.__class__` (`cls.mode = "fast"`), as `Cfg.mode =
    "fast"` writes `Cfg`; and `logs`: bumps or appends to one too."""
    owner = getattr(fn, "__qualname__", "").rpartition(".")[0]
    if not owner.isidentifier() or not isinstance((globs or {}).get(owner), type) or len(defs) != 1:
        return frozenset()
    first, on_class = _first(fn, defs[0], owner)
    return frozenset({owner}) if changes_own_class(defs[0], first, on_class, logs) else frozenset()


def changes_own_class(node: ast.AST, first: str, on_class: bool, logs: bool) -> bool:
    """Whether a method (its `def` is `node`, its first parameter `first`)
    writes its class through it: `cls.mode = m`, `type(self).mode = m`."""
    methods = MUTATORS if logs else MUTATORS - LOGS
    parents = {id(c): p for p in walk(node) for c in ast.iter_child_nodes(p)} if first else {}
    for sub in walk(node) if first else ():
        if isinstance(sub, ast.Assign) and on_class and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Attribute):
            # A lazy client kept on the class (`if cls._conn is None: cls._conn = connect()`).
            targets = [] if filled_from_module(sub.targets[0], parents, first) else list(sub.targets)
        elif isinstance(sub, (ast.Assign, ast.Delete)):
            targets = list(sub.targets)
        elif isinstance(sub, ast.AnnAssign) or (logs and isinstance(sub, ast.AugAssign)):
            targets = [sub.target]
        elif isinstance(sub, ast.Call) and (got := method(sub.func)) and (got[1] is None or got[1] in methods):
            targets = [got[0]]  # `cls.items.append(x)`, `cls.items.__iadd__([x])`, `getattr(cls.items, k)(x)`
        else:
            continue
        if any(_within(t, first, on_class) for t in targets):
            return True
    return False


def _within(target: ast.AST, first: str, on_class: bool) -> bool:
    """Whether `target` is a part of the class through a method's first
    parameter: `cls.x`, `cls.x[k]`, `type(self).x`, `self.__class__.x`."""
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        if isinstance(target, ast.Attribute) and _is_class(target.value, "", first, on_class):
            return True
        target = target.value
    return False
