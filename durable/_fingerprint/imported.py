"""A name bound by `from c import X` (or `T = c.X`), counted by the
statements of the user's module `c` that bind X (`reads._follow_import`,
`reads._statement_reads`), is described by them only while it holds the
object `c.X` holds. After `c` is reloaded (`importlib.reload`,
`%autoreload`: its statements ran again, `c.X` is a new object), the name
still holds the old one: counted by c's new text, a step computing from
the old table was stored under the new text's key, and served to a fresh
process whose table is the new one. Such a name is refused, as a function
imported that way is (`source.stale_source`), until the import runs again."""

from __future__ import annotations

import ast
import types
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError
from .bindings import binding_statements
from .imports import user_module
from .reach import _MISSING
from .source import source_of
from .values import plain_tokens
from .witness import witnessed

_CODE = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType)


def refuse_stale_import(
    stmt: ast.ImportFrom,
    alias: ast.alias,
    scope: Mapping[str, Any],
    checked_file: str | None,
    home: types.ModuleType,
    obj: object,
) -> None:
    """Raise when `alias` of `stmt` binds a name that no longer holds what
    `home` holds (`obj`). Not for `*` (another star import may have bound
    the name)."""
    if alias.name != "*":
        how = f"`from {home.__name__} import {alias.name}`"
        _refuse(alias.asname or alias.name, stmt, scope, checked_file, (home, alias.name, obj), how)


def refuse_stale_alias(
    stmt: ast.AST, name: str, path: tuple[str, ...], obj: object, scope: Mapping[str, Any],
    checked_file: str | None,
) -> None:  # fmt: skip
    """The same for `T = c.X` (or `T = pkg.c.X`), a plain assignment of an
    attribute of the user's module `c` (`path`) to the name, and for a
    value made from it (`T = dict(c.X)`: `_refuse_made`)."""
    targets = getattr(stmt, "targets", None)
    if not isinstance(stmt, ast.Assign) or len(path) < 2:
        return
    home = witnessed(scope.get, path[0], _MISSING)
    for part in path[1:-1]:  # through the packages to `c`
        home = witnessed(getattr, home, part, _MISSING) if _is_module(home) else _MISSING
    if targets and getattr(targets[0], "id", None) == name and len(targets) == 1:
        if _is_module(home) and witnessed(user_module, home):
            source = (home, path[-1], obj)
            if _dotted(stmt.value) == path:
                _refuse(name, stmt, scope, checked_file, source, f"`{name} = {'.'.join(path)}`")
            else:
                _refuse_made(name, stmt, scope, checked_file, source)


# (namespace id, name, module, attribute) -> (namespace, what the name held,
# what the attribute held) when last counted: the namespace is kept, so that
# its id is not reused meanwhile.
_MADE: dict[tuple[int, str, str, str], tuple[Mapping[str, Any], object, object]] = {}


def _refuse_made(
    name: str, stmt: ast.AST, scope: Mapping[str, Any], checked_file: str | None,
    source: tuple[types.ModuleType, str, object],
) -> None:  # fmt: skip
    """A name made from `c.X` by its statement holds what it made then: its
    value cannot be compared with `c.X`. Refused when `c.X` was rebound
    (`c` reloaded) since it was last counted while the name kept the same
    object: the statement did not run again. (A reload before the first
    count is not seen.)"""
    home, attr, obj = source
    held = witnessed(scope.get, name, _MISSING)
    key = (id(scope), name, home.__name__, attr)
    seen = _MADE.get(key)
    if len(_MADE) > 4096:
        _MADE.clear()
    _MADE[key] = (scope, held, obj)
    if seen is None or seen[1] is not held or seen[2] is obj or _same_plain_data(seen[2], obj):
        return
    if held is _MISSING or isinstance(held, _CODE) or isinstance(obj, _CODE):
        return  # code counts by its code as it runs (`_refuse`)
    if not _alone(name, stmt, scope, checked_file, home, attr):
        return
    _MADE[key] = seen  # refused until the statement runs again
    module = home.__name__
    raise ConfigurationError(
        f"{name} was made from {module}.{attr} before {module} was reloaded (or "
        f"{module}.{attr} was rebound): it counts by the statement of {module} that binds "
        f"{attr}, which no longer makes what {name} was made from. Run the statement that "
        f"binds {name} again (its cell or module). Nothing was run or recorded."
    )


def _dotted(node: ast.AST) -> tuple[str, ...] | None:
    """`a.b.c` as ("a", "b", "c"); None for anything else (a call, a subscript)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id, *reversed(parts)) if isinstance(node, ast.Name) else None


def _is_module(obj: object) -> bool:
    return isinstance(obj, types.ModuleType)


def _refuse(
    name: str, stmt: ast.AST, scope: Mapping[str, Any], checked_file: str | None,
    source: tuple[types.ModuleType, str, object], how: str,
) -> None:  # fmt: skip
    """Not for a name bound by other statements too (`X = X * 2` after the
    import), a name a function of the module rebinds with `global` (its
    statements count, not its value: see fingerprints.md), a class, a
    function or a module (those count by their code as it runs:
    `code.class_stamp`), nor plain data equal to what the module holds
    (a reload of an unchanged table: it holds what the text makes)."""
    home, attr, obj = source
    held = witnessed(scope.get, name, _MISSING)
    if held is obj or held is _MISSING or isinstance(held, _CODE) or _same_plain_data(held, obj):
        return
    if not _alone(name, stmt, scope, checked_file, home, attr):
        return
    module = home.__name__
    raise ConfigurationError(
        f"{name} no longer holds what {module}.{attr} holds ({module} was reloaded since "
        f"{how} ran, or {module}.{attr} was rebound): it counts by the statement of {module} "
        f"that binds {attr}, which did not make what {name} holds. Run {how} again (its cell "
        f"or module), or read it as {module}.{attr}. Nothing was run or recorded."
    )


def _alone(
    name: str, stmt: ast.AST, scope: Mapping[str, Any], checked_file: str | None,
    home: types.ModuleType, attr: str,
) -> bool:  # fmt: skip
    """Whether `stmt` alone binds `name`, and no function of `home` rebinds
    `attr` with `global`."""
    found = binding_statements(name, scope, checked_file)
    if found is None or len(found) != 1 or found[0] is not stmt:
        return False
    filename = getattr(home, "__file__", None)
    return isinstance(filename, str) and attr not in source_of(filename, vars(home)).rebound


def _same_plain_data(held: object, obj: object) -> bool:
    # Type-tagged: {"a": 1} is not {"a": 1.0}, whose str() differs.
    tokens = plain_tokens(held)
    return tokens is not None and tokens == plain_tokens(obj)
