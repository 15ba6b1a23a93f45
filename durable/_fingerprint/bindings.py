"""Where a global is bound: the module-level statements whose source counts
for a name that is not counted by value (see `reads`). Pure standard library.
In IPython the cells run so far (`_ih`) are read; otherwise the module's file,
checked to be the source of the running code, as a function's is (`source`)."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from ..errors import ConfigurationError
from .anybind import may_bind_any
from .callsonly import calls_any, only_calling
from .changers import MUTATORS
from .inplace import (
    BLOCKS,
    READERS,
    aliases_in,
    called,
    callers,
    changed_in,
    held_by,
    in_place,
    roots,
    units,
    with_callers,
    with_holders,
)
from .methodcalls import CALLS, with_method_calls
from .nodes import walk
from .passes import per_pass
from .running import module_runs_this_source
from .source import Source, parse, source_of, stale_source
from .witness import witnessed


@per_pass  # asked for each name each statement a function follows reads
def binding_statements(
    name: str, namespace: Mapping[str, Any], checked_file: str | None = None
) -> list[ast.AST] | None:
    """The module-level statements that bind or change `name` in the module
    whose namespace is `namespace` (`X = ...`, `import x as X`, `class X`,
    `X[k] = ...`, `X.update(...)`), or None when none can be read. In
    IPython, the cells run so far (`_ih`), the latest that binds it;
    otherwise the module's file, checked against the running code unless
    it is `checked_file` (that of the function reading the name, whose
    check has just passed)."""
    cells = witnessed(_cells_of, namespace)
    if cells[0] is not None:
        calls_only = _cell_readers(tuple(cells[0]))  # `def call(f)` in one cell, `call(s)` in another
        found = _in_cells(name, cells[0], calls_only)
        # Bound to its object in one cell, changed in place in another.
        for held in sorted(held_by(name, *_cell_aliases(tuple(cells[0]), calls_only))):
            more = [s for s in _in_cells(held, cells[0], calls_only) or [] if all(s is not f for f in found or [])]
            found = [*(found or []), *more] if more else found
        # Filled by a call in one cell of a function another cell defines.
        more = [s for s in _cell_callers(name, tuple(cells[0]), calls_only) if all(s is not f for f in found or [])]
        found = [*(found or []), *more] if more else found
        if found is not None:
            return found
    files = [cells[1], checked_file]
    for filename in dict.fromkeys(f for f in files if isinstance(f, str)):
        src = source_of(filename, namespace)
        index = _binders(src.text)
        found = index.get(name)
        if found:
            if filename != checked_file and not _module_matches(filename, namespace, src):
                module = str(namespace.get("__name__", "?"))
                raise stale_source(module, filename, module)
            return [*found, *index.get(ANY, [])]
    return None


def bound_later(name: str, namespace: Mapping[str, Any]) -> bool:
    """Whether `name`, not bound now, is bound by a module-level statement not run yet
    (`first = wf(1)`, while its call runs): a statement reading it (`print(first, wf(1),
    json.dumps(COUNTS))`) counts it by those, as once they ran (skipped, the second call
    found a name the first did not: changed). Not a builtin nor a comprehension's variable."""
    if name in _BUILTINS:
        return False
    try:
        return bool(binding_statements(name, namespace))
    except ConfigurationError:
        return False


def made_here_alone(
    stmt: ast.AST, name: str, namespace: Mapping[str, Any], checked_file: str | None
) -> bool:
    """Whether `name` is bound by `stmt` and by no other statement of its
    module: what it holds comes from the statement (a module-level loop's
    `out = flow(3)`), whose text and reads count already. Unbound until
    the statement first ran, it must not make a second call look changed;
    bound by another statement too (`out = 3` before the loop), it counts."""
    if name not in _stored(stmt):
        return False
    found = binding_statements(name, namespace, checked_file)
    return found is not None and len(found) == 1 and found[0] is stmt


@lru_cache(maxsize=4096)  # asked for each name a counted statement reads
def _stored(stmt: ast.AST) -> frozenset[str]:
    return frozenset(
        n.id for n in walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    )


def _in_cells(name: str, cells: list[Any], calls_only: frozenset[str]) -> list[ast.AST] | None:
    """The latest cell's statements that bind `name`, and those run after it
    that may bind anything, or change it in place (`CFG["k"] = 5`,
    `REGISTRY.register("f", 2)`): those add to the cell that binds it, each
    text once (a cell run again as it was changes nothing)."""
    later: list[ast.AST] = []
    seen: set[str] = set()
    for text in reversed(cells):
        index = _binders(text, calls_only) if isinstance(text, str) else {}
        found = index.get(name) or []
        calls = index.get(CALLS + name, [])
        adds = [s for s in found if in_place(s) or any(s is c for c in calls)]
        if len(adds) < len(found):
            return [*found, *later]
        later += index.get(ANY, [])
        if adds and text not in seen:
            seen.add(text)
            later += adds
    return None


@lru_cache(maxsize=64)
def _cell_aliases(cells: tuple[Any, ...], calls_only: frozenset[str]) -> tuple[dict[str, set[str]], set[str]]:
    """`inplace.aliases_in` over every cell run so far, and which of those
    names any cell changes in place: bound in one, changed in another."""
    bodies = [tree.body for text in cells if isinstance(text, str) for tree in [parse(text).tree] if tree]
    holders: dict[str, set[str]] = {}
    for body in bodies:
        for source, names in aliases_in(body).items():
            holders.setdefault(source, set()).update(names)
    targets = {n for names in holders.values() for n in names}
    return holders, {n for body in bodies for n in changed_in(body, READERS | calls_only, targets)}


@lru_cache(maxsize=256)
def _cell_callers(name: str, cells: tuple[Any, ...], calls_only: frozenset[str]) -> list[ast.AST]:
    """`inplace.callers` over every cell run so far, each text once (a cell
    run again as it was is no change), the latest run last."""
    texts = list(dict.fromkeys(t for t in reversed(cells) if isinstance(t, str)))[::-1]
    body = [s for text in texts for tree in [parse(text).tree] if tree for s in tree.body]
    stmts = [s for text in texts for s in _binders(text, calls_only).get(name, [])]
    return callers(name, stmts, body, {})


def module_statements(namespace: Mapping[str, Any]) -> list[ast.AST] | None:
    """Every module-level statement of the module whose namespace is
    `namespace` (a module used as a whole), checked against the running
    code as `binding_statements` are; None when there is no text to read."""
    filename = namespace.get("__file__")
    if not isinstance(filename, str):
        return None
    src = source_of(filename, namespace)
    if src.tree is None:
        return None
    if not _module_matches(filename, namespace, src):
        module = str(namespace.get("__name__", "?"))
        raise stale_source(module, filename, module)
    return list(src.tree.body)


_BUILTINS = frozenset(dir(builtins))
_FUNCS, _IMPORTS = (ast.FunctionDef, ast.AsyncFunctionDef), (ast.Import, ast.ImportFrom)
# The key of statements that may bind any name (`globals()[k] = ...`,
# `exec(...)`, `vars()`): they count for every name bound elsewhere too.
ANY = "?"


def _cells_of(namespace: Mapping[str, Any]) -> tuple[Any, Any]:
    # IPython appends each cell run to `_ih`; its `__file__` names the module's file.
    cells = namespace.get("_ih")
    return (list(cells) if isinstance(cells, list) else None), namespace.get("__file__")


def _module_matches(filename: str, namespace: Mapping[str, Any], src: Source) -> bool:
    key = (filename, id(namespace), id(src))
    known = _MODULES.get(key)
    if known is None:
        if len(_MODULES) > 1024:
            _MODULES.clear()
        known = _MODULES[key] = (src, module_runs_this_source(filename, namespace, src))
    return known[1]


_MODULES: dict[tuple[str, int, int], tuple[Source, bool]] = {}


@lru_cache(maxsize=64)
def _cell_readers(cells: tuple[Any, ...]) -> frozenset[str]:
    """`callsonly.only_calling` over every cell run so far, each text once."""
    body = [s for text in dict.fromkeys(t for t in cells if isinstance(t, str)) for s in _body(text)]
    return only_calling(body, _index(body, READERS))


@lru_cache(maxsize=256)
def _binders(text: str, calls_only: frozenset[str] | None = None) -> dict[str, list[ast.AST]]:
    """`calls_only`: of the cells run so far; None for a module: of its text."""
    body = _body(text)
    index = _index(body, READERS)
    calls_only = only_calling(body, index) if calls_only is None else calls_only
    if READERS.isdisjoint(_own_names(tuple(body))):
        return _index(body, READERS | calls_only) if calls_any(body, calls_only) else index
    return _index(body, calls_only)  # its own `print`: it may change


@lru_cache(maxsize=256)
def _own_names(body: tuple[Any, ...]) -> frozenset[str]:
    """The names the module's code binds (`print = log`, `def print`,
    `import x as print`): not one it only hands on (`type=int` given to
    `add_argument`), which left every `print(X)` of the script changing X."""
    defined = {s.name for n in body for s in walk(n) if isinstance(s, (*_FUNCS, ast.ClassDef))}
    imported = {_import_binds(a) for n in body for s in walk(n) if isinstance(s, _IMPORTS) for a in s.names}
    return frozenset({v for n in body for v in _stored(n)} | defined | imported)


def _body(text: str) -> list[Any]:
    tree = parse(text).tree
    return tree.body if tree else []


def _index(body: list[Any], readers: frozenset[str]) -> dict[str, list[ast.AST]]:
    index: dict[str, list[ast.AST]] = {}
    for node, names in _module_level(body, readers):
        for n in dict.fromkeys(names):
            index.setdefault(n, []).append(node)
    with_method_calls(index, body)  # before `with_callers`: `setup(2)` of a `setup` calling one
    with_callers(index, body)
    with_holders(index, body, readers)
    return index


def _module_level(
    body: list[Any], readers: frozenset[str]
) -> Iterator[tuple[ast.AST, list[str]]]:
    """(statement, names it binds or changes) for every module-level statement. A statement
    inside `if`, `try`, `with` or `for` counts as the whole outer statement: its test, iterable
    or handlers decide the value as much as the assignment does; not an `if __name__ ==
    "__main__":` block, whose lines count each alone (`units`): as one statement of a counter
    it prints, its `main()` was followed for every step reading the counter, and counted it by
    its contents. A `def` or `class` also binds the names it declares `global` (a function
    that rebinds a global is part of how it gets its value)."""
    for stmt in units(body):
        names = list(dict.fromkeys(_binds(stmt, readers)))
        if names:
            yield stmt, names


def _binds(stmt: Any, readers: frozenset[str]) -> Iterator[str]:
    if may_bind_any(stmt):
        yield ANY
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield stmt.name
        yield from (n for sub in walk(stmt) if isinstance(sub, ast.Global) for n in sub.names)
        yield from _changed_in_place(stmt)
        return
    yield from _bound_by(stmt, readers)
    yield from (s.target.id for s in walk(stmt) if isinstance(s, ast.NamedExpr))  # `:=`
    for block in BLOCKS:
        inner = getattr(stmt, block, None)
        if isinstance(inner, list):
            for sub in inner:
                yield from _binds(sub, readers)


def _changed_in_place(node: ast.AST) -> Iterator[str]:
    """Globals a function (or a class's methods) changes in place:
    `CFG["k"] = 5`, `VALUES.append(5)` on a name that is not its own."""
    own = {n.id for n in walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    own |= {a.arg for a in walk(node) if isinstance(a, ast.arg)}
    parts = _local_parts(node, own)
    for sub in walk(node):
        if isinstance(sub, (ast.Assign, ast.Delete)):
            targets = sub.targets
        elif isinstance(sub, (ast.AugAssign, ast.AnnAssign)):
            targets = [sub.target]
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
            targets = [sub.func] if sub.func.attr in MUTATORS else []
        else:
            continue
        for target in targets:
            if isinstance(target, (ast.Subscript, ast.Attribute)):
                yield from (g for n in roots(target) for g in ([n] if n not in own else parts.get(n, ())))


def _local_parts(node: ast.AST, own: set[str]) -> dict[str, set[str]]:
    """A function's local name -> the globals whose object (or a part of
    it) it is bound to, in turn (`p = CFG["m"]`, `for p in CFG.values()`):
    `p.append(x)` changes `CFG` as much as `CFG["m"].append(x)` does."""
    holders = aliases_in([s for s in walk(node) if isinstance(s, (ast.Assign, ast.For, ast.With))])
    parts: dict[str, set[str]] = {}
    for source in holders:
        if source not in own:
            for local in held_by(source, holders, set(holders.get(source, ())) | own):
                parts.setdefault(local, set()).add(source)
    return parts


def _bound_by(stmt: Any, readers: frozenset[str]) -> list[str]:
    """The names one simple statement binds or changes; `from m import *`
    is indexed under "*" (the names it binds are the other module's)."""
    if isinstance(stmt, ast.Delete):
        return [n for t in stmt.targets for n in roots(t)]
    if isinstance(stmt, ast.Assign):
        return [n for t in stmt.targets for n in roots(t)] + called(stmt.value, readers)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return roots(stmt.target) + called(stmt.value, readers)
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return roots(stmt.target) + called(stmt.iter, readers)
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [_import_binds(a) for a in stmt.names]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        names = [n for i in stmt.items if i.optional_vars for n in roots(i.optional_vars)]
        return names + [n for i in stmt.items for n in called(i.context_expr, readers)]
    if isinstance(stmt, ast.Expr):
        return called(stmt.value, readers)
    return []


def _import_binds(alias: ast.alias) -> str:
    return alias.asname or alias.name.partition(".")[0]  # "*" stays "*"
