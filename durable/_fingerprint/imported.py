"""A name bound by `from c import X`, counted by the statements of the
user's module `c` that bind X (`reads._follow_import`), is described by
them only while it holds the object `c.X` holds. After `c` is reloaded
(`importlib.reload`, `%autoreload`: its statements ran again, `c.X` is a
new object), the name still holds the old one: counted by c's new text, a
step computing from the old table was stored under the new text's key,
and served to a fresh process whose table is the new one. Such a name
is refused, as a function imported that way is (`source.stale_source`),
until the import runs again."""

from __future__ import annotations

import ast
import types
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError
from .bindings import binding_statements
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
    """Raise when `alias` of `stmt`, the one statement binding its name in
    `scope`, binds a name that no longer holds what `home` holds (`obj`).
    Not for `*` (another star import may have bound the name), a name bound
    by other statements too (`X = X * 2` after the import), or a name a
    function of `home` rebinds with `global` (its statements count, not
    its value: see fingerprints.md). Nor for a class, a function or a
    module: those count by their code as it runs (`code.class_stamp`)."""
    name = alias.asname or alias.name
    held = witnessed(scope.get, name, _MISSING)
    if alias.name == "*" or held is obj or held is _MISSING or isinstance(held, _CODE):
        return
    if _same_plain_data(held, obj):  # a reload of an unchanged table: it holds what c's text makes
        return
    found = binding_statements(name, scope, checked_file)
    if found is None or len(found) != 1 or found[0] is not stmt:
        return
    filename = getattr(home, "__file__", None)
    if not isinstance(filename, str) or alias.name in source_of(filename, vars(home)).rebound:
        return
    raise _stale_import(name, home.__name__, alias.name)


def _stale_import(name: str, module: str, attr: str) -> ConfigurationError:
    return ConfigurationError(
        f"{name} no longer holds what {module}.{attr} holds ({module} was reloaded since "
        f"`from {module} import {attr}` ran, or {module}.{attr} was rebound): it counts by the "
        f"statement of {module} that binds {attr}, which did not make what {name} holds. "
        f"Re-run the cell or statement that did `from {module} import ...`, or read it as "
        f"{module}.{attr}. Nothing was run or recorded."
    )


def _same_plain_data(held: object, obj: object) -> bool:
    # Type-tagged: {"a": 1} is not {"a": 1.0}, whose str() differs.
    tokens = plain_tokens(held)
    return tokens is not None and tokens == plain_tokens(obj)
