"""The user's code that a module of the user's hands to a library, which the
library runs where no name of the user's shows it: a class a decorator
registers (`@pd.api.extensions.register_series_accessor("geo")`, run as
`series.geo.scaled()`), a function set on a library's class or module
(`fractions.Fraction.scale = scale`, run as `Fraction(x).scale()`), a
function a setter of the library's is given (`np.set_printoptions(formatter=
{"float": money})`, run as `str(array)`). A step
reading that library (`pd`, `Fraction`) follows them as helpers: counted by
the statement's text alone (`libstate`), an edit of `scaled` replayed the
output of the old code.

Pure standard library."""

from __future__ import annotations

import ast
import re
import types
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from ..errors import ConfigurationError
from .atimport import _SETTERS, run_at_import
from .canon import name_chains
from .imports import import_user_module
from .inplace import units
from .loaded import EachModule, Users, loaded_state
from .reach import _followable
from .source import current_text, parse, source_of
from .witness import Witness, recording, witnessed


def library_code(modules: Iterable[str]) -> list[object]:
    """The functions of the user's that the loaded modules of the user's
    hand to the libraries `modules` (`pandas`, `fractions`): the methods of
    a class registered, a function set on the library."""
    found: list[object] = []
    for module in dict.fromkeys(m.partition(".")[0] for m in modules if m):
        if module != "durable" and not isinstance(witnessed(import_user_module, module), types.ModuleType):
            found += witnessed(_handed, witnessed(loaded_state), module)
    return found


def _handed(users: Users, top: str) -> list[object]:
    """Once per set of loaded modules and library: not witnessed call by
    call, as `libstate._loaded` is not. Each module's name chains are kept
    while it is unchanged (`EachModule`); what they name is looked up each time."""
    kept = _KEPT.get((id(users), top))
    if kept is None or kept[0] is not users:
        if len(_KEPT) >= 256:
            _KEPT.clear()
        chains = _CHAINS.answers(users, top)
        with recording(Witness()):
            found = [f for m, some in zip(users[1], chains, strict=True) for c in some
                     for f in _members(_walk(vars(m), c)) if _followable(f)]  # fmt: skip
        kept = _KEPT[(id(users), top)] = (users, found)
    return kept[1]


# (id of a `loaded_state`, a library) -> (that state, what its modules hand to the library)
_KEPT: dict[tuple[int, str], tuple[object, list[object]]] = {}


def _kept_chains(module: types.ModuleType, top: str) -> tuple[tuple[str, ...], ...]:
    return _of_module(vars(module), top)  # its file's stat is `EachModule`'s, taken before


# The name chains `_of_module` finds in each loaded module's text, kept while the
# module is unchanged: a module imported meanwhile made a new `loaded_state`, and
# every loaded module's text was looked into again.
_CHAINS: EachModule[tuple[tuple[str, ...], ...]] = EachModule(_kept_chains)


def _of_module(space: Mapping[str, Any], top: str) -> tuple[tuple[str, ...], ...]:
    filename = space.get("__file__")
    if not isinstance(filename, str) or top not in current_text(filename, space):  # no import of it
        return ()
    try:
        tree = source_of(filename, space).tree
    except ConfigurationError:  # edited since import: where its statements are now
        tree = parse(current_text(filename, space)).tree
    return () if tree is None else _handing(tuple(tree.body), top)


@lru_cache(maxsize=4096)  # a module's statements, asked for each library a step reads
def _handing(body: tuple[ast.stmt, ...], top: str) -> tuple[tuple[str, ...], ...]:
    """The name chains of what the statements hand to the library `top`, and
    the statements of the module's functions a module-level statement calls
    (`def setup(): np.set_printoptions(...)` then `setup()`), and of those
    they call in turn: they ran at import as the module's own do (the
    library imported in the function too). Not followed, an edit of the
    formatter such a function hands over replayed the old output."""
    names = _bound_to(body, top)
    found = _handed_in(body, names)
    for inner in run_at_import(body):
        found += _handed_in(inner, names | _bound_to(inner, top), named=True)
    return tuple(dict.fromkeys(found))


def _handed_in(body: tuple[ast.stmt, ...], names: frozenset[str], named: bool = False) -> list[tuple[str, ...]]:
    """The name chains of what `body` hands to the library bound to `names`;
    `named` (a function's body): through calls whose name says they set or
    register something (`atimport._SETTERS`), as `libstate._run_at_import`
    follows: a script's `main()` hands its functions to much else
    (`np.vectorize(f)`, `pool.map(work, items)`)."""
    found: list[tuple[str, ...]] = []
    for stmt in units(list(body)) if names else ():
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(_registers(d, names) for d in stmt.decorator_list):
                found.append((stmt.name,))
        elif isinstance(stmt, ast.Expr) and isinstance(call := stmt.value, ast.Call) and _hands(call, names, named):
            # `register_series_accessor("geo")(Geo)`, `setattr(pd.Series, "scaled", scaled)`,
            # `np.set_printoptions(formatter={"float": money})`: the library calls them later
            given = [*call.args, *(k.value for k in call.keywords)]
            found += [c for a in given for c in name_chains(a) if c[0] not in names]
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Attribute) and _root(t) in names for t in targets):
                found += [c for c in name_chains(stmt.value) if c[0] not in names]
    return found


def _bound_to(body: tuple[ast.stmt, ...], top: str) -> frozenset[str]:
    """The names module-level imports bind to the library `top` or a part of it."""
    names: set[str] = set()
    for stmt in units(list(body)):
        if isinstance(stmt, ast.Import):
            names.update(a.asname or a.name.partition(".")[0] for a in stmt.names if a.name.partition(".")[0] == top)
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level and (stmt.module or "").partition(".")[0] == top:
            names.update(a.asname or a.name for a in stmt.names if a.name != "*")
    return frozenset(names)


# `register_series_accessor`, `register_dataframe_accessor`, `register_pytree_node_class`.
_REGISTERS = re.compile(r"register", re.IGNORECASE)


def _registers(decorator: ast.expr, names: frozenset[str]) -> bool:
    func = decorator
    while isinstance(func, ast.Call):
        func = func.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return _root(func) in names and bool(_REGISTERS.search(name))


def _hands(call: ast.Call, names: frozenset[str], named: bool = False) -> bool:
    """A call of the library's (a setter, a registration; `named`: one whose
    name says so), or `setattr` on a part of it."""
    if isinstance(call.func, ast.Name) and call.func.id == "setattr":
        return bool(call.args) and _root(call.args[0]) in names
    said = not named or bool(_SETTERS.search(getattr(call.func, "attr", "")))
    return _registers(call, names) or (_root(call.func) in names and _plain(call.func) and said)


def _plain(func: ast.expr) -> bool:
    """`np.set_printoptions`: a function of the library, named through
    attributes alone; not a method of what one returns
    (`logging.getLogger().addHandler(...)`, `threading.Thread(...).start()`)."""
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name)


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _walk(space: Mapping[str, Any], chain: tuple[str, ...]) -> object:
    """What `a.b` names through modules and classes, as stored; None when it cannot be told."""
    obj = space.get(chain[0])
    for attr in chain[1:]:
        if not isinstance(obj, (types.ModuleType, type)):
            return None
        obj = vars(obj).get(attr)
    return obj


def _members(obj: object) -> list[object]:
    """A function, or the functions a class defines (its properties' too)."""
    if not isinstance(obj, type):
        return [obj] if isinstance(obj, types.FunctionType) else []
    found: list[object] = []
    for member in vars(obj).values():
        if isinstance(member, property):
            found += [f for f in (member.fget, member.fset, member.fdel) if f is not None]
        else:
            found.append(getattr(member, "__func__", member))  # a static or class method's
    return [f for f in found if isinstance(f, types.FunctionType)]
