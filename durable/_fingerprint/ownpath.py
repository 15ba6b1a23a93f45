"""Values that count by their statements (`bindings`) where their value or
code would not say enough: strings a module makes from its own `__file__`
(where a file lies is never part of a fingerprint), functions a statement
changes apart from their `def` (`helper.k = 2`).

Pure standard library."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from ..errors import ConfigurationError
from .bindings import binding_statements
from .callsonly import calls_of
from .canon import name_chains
from .inplace import run_now
from .outside import reads_outside
from .passes import per_pass
from .values import PATH_TYPES, plain_tokens


def made_from_own_path(
    name: str, value: object, namespace: Mapping[str, Any], checked_file: str | None = None
) -> bool:
    """Whether `value` is a string or a path (or a tuple of them) the statements binding `name` make from
    the module's `__file__`, directly or through the names they read (`DATA = join(HERE, "data")`
    after `HERE = dirname(abspath(__file__))`). Such a string is where this
    copy of the file lies, which differs in another folder, checkout or
    machine: it counts by its statements, since
    the path of a file is never part of a fingerprint."""
    todo, seen = [name], {name}
    while todo and isinstance(value, (str, PurePath, tuple, frozenset)):
        try:
            found = binding_statements(todo.pop(), namespace, checked_file) or []
        except ConfigurationError:  # a stale file: counted by value, as before
            return False
        for chain in {c for stmt in found for c in name_chains(stmt)}:
            if chain[0] == "__file__":
                return True
            if chain[0] not in seen:
                seen.add(chain[0])
                todo.append(chain[0])
    return False


def changed_apart(name: str, namespace: Mapping[str, Any], checked_file: str | None) -> bool:
    """Whether a module-level statement besides those that bind `name` as
    a whole (its `def`, `class`, import or `name = ...`) sets or changes
    what it names: `helper.k = 2` on a function whose code reads
    `wrapper.k`, `setk(2)`, `helper.cache_clear()`. A function counts by
    its code, which shows none of those."""
    found = binding_statements(name, namespace, checked_file) or []
    durable = is_durable(namespace.get(name))  # `inner.runs()` in a notebook cell changes nothing
    return any(not _binds_whole(s, name) and not (durable and calls_of(s, name)) for s in found)


def is_durable(value: object) -> bool:
    """A workflow or a step: none of their methods changes them."""
    try:  # a proxy may raise anything
        kind = type(value)
        return getattr(kind, "__durable_workflow__", False) is True or "__durable_step__" in vars(value)
    except Exception:
        return False


def bound_again(name: str, namespace: Mapping[str, Any], checked_file: str | None = None) -> bool:
    """Whether more than one module-level statement binds `name` as a whole
    (`h = h1` ... `h = h2`, `K = 1` ... `K = 2`): which ran last decides
    what it holds when a step is called, not the statements, all in the file."""
    found = binding_statements(name, namespace, checked_file) or []
    return sum((_binds_whole(s, name) and _names(s, name)) or _unpacks(s, name) for s in found) > 1


def bound_in_places(name: str, namespace: Mapping[str, Any], checked_file: str | None = None) -> bool:
    """Whether `name` is bound in more than one place, counting those inside an `if` or `try` (`try:
    import orjson as js` / `except ImportError: import json as js`): which ran decides, the installed
    library, not the statement, the same text whichever ran."""
    found = binding_statements(name, namespace, checked_file) or []
    return sum(_binds_here(n, name) for s in found for n in run_now(s)) > 1


@per_pass  # asked for each way a name is reached
def chosen_outside(name: str, namespace: Mapping[str, Any], checked_file: str | None) -> bool:
    """Whether statements other than its own `def` (or an import, whose
    module's statements count where it is read) bind `name`, reading the
    environment, the command line or a file."""
    found = [s for s in binding_statements(name, namespace, checked_file) or () if not isinstance(s, _OWN_DEFS)]
    return bool(found) and reads_outside(found, namespace, checked_file, name)


_OWN_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def _binds_here(node: ast.AST, name: str) -> int:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return sum((a.asname or a.name.partition(".")[0]) == name for a in node.names)
    if isinstance(node, ast.Name):
        return isinstance(node.ctx, ast.Store) and node.id == name
    return isinstance(node, _OWN_DEFS[:3]) and node.name == name


def _unpacks(stmt: ast.AST, name: str) -> bool:
    """Whether the statement binds `name` by unpacking (`CFG, PAIR = a, b`)."""
    todo: list[ast.expr] = [t for t in getattr(stmt, "targets", None) or () if isinstance(t, (ast.Tuple, ast.List))]
    while todo:
        t = todo.pop()
        if isinstance(t, (ast.Tuple, ast.List)):
            todo += t.elts
        elif isinstance(t, ast.Starred):
            todo.append(t.value)
        elif isinstance(t, ast.Name) and t.id == name:
            return True
    return False


def _names(stmt: ast.AST, name: str) -> bool:
    """Whether the statement's own target is `name` (not a statement that
    may bind any name, `CASES = {... globals() ...}`)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.partition(".")[0]) == name for a in stmt.names)
    targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
    return getattr(stmt, "name", None) == name or any(getattr(t, "id", None) == name for t in targets)


def _binds_whole(stmt: ast.AST, name: str) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name == name
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]  # `f: T = ...` too
    return bool(targets) and all(isinstance(t, ast.Name) for t in targets)



def path_tokens(value: object) -> list[str] | None:
    """A global path a step reads (`DATA = Path(os.environ["DATA"])`) by its
    text (`str`, not `repr`: see `scalar_token`); None for anything else.
    Not inside plain data, a default or a closure: there a path is mostly
    where a file lies (`root=HERE / "data"`), never part of a fingerprint
    (a global made from `__file__` counts by its statement: `made_from_own_path`)."""
    if type(value) not in PATH_TYPES:  # by value only as a global a step reads
        return None
    text = str(value)
    return [f"p{type(value).__name__}:{len(text)}:{text}"]


def class_made_by(cls: type, name: str, namespace: Mapping[str, Any], checked_file: str | None) -> list[str]:
    """Which of several `class` statements binding `name` made `cls` (`class
    C` ... `class C` again, between two calls): its place among them, told by
    the lines of its functions; [] when one statement binds it. Counted by the
    statements alone, all in the file, a call made after the second was
    served the output of the first's methods. A class without functions
    whose maker cannot be told counts by its plain attributes."""
    try:
        if not bound_again(name, namespace, checked_file):
            return []
        found = binding_statements(name, namespace, checked_file) or []
    except ConfigurationError:
        return []
    codes = [getattr(_function(v), "__code__", None) for v in vars(cls).values()]
    file = namespace.get("__file__")  # not a dataclass's `__init__`, made from a string
    lines = {c.co_firstlineno for c in codes if c is not None and c.co_filename in (file, checked_file)}
    for i, stmt in enumerate(found):
        end = getattr(stmt, "end_lineno", None) or stmt.lineno  # type: ignore[attr-defined]
        if isinstance(stmt, ast.ClassDef) and any(stmt.lineno <= n <= end for n in lines):
            return [f"class-statement:{i}"]
    members = sorted((k, v) for k, v in vars(cls).items() if isinstance(k, str) and not k.startswith("__"))
    plain = {k: v for k, v in members if plain_tokens(v, mutable=False) is not None}
    return ["class-attributes", *(plain_tokens(plain) or ())]


def _function(member: object) -> object:
    """The function a class member runs: a static or class method's, a property's getter."""
    if isinstance(member, (staticmethod, classmethod)):
        return member.__func__
    return member.fget if isinstance(member, property) else member
