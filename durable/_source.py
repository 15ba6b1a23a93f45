"""Where a function's source is, and whether it is the code that runs.

Pure standard library. Source comes from `linecache` (files, and notebook
cells, which IPython registers there). A file may have been edited since it
was imported, so text read from it is only trusted after compiling it again
and finding, at the running code's first line, a code object of the same
shape as the running one: otherwise a fingerprint would describe code that
is not the code that runs.
"""

from __future__ import annotations
import __future__

import ast
import linecache
import types
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ._errors import ConfigurationError

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# The flags a `from __future__ import ...` leaves on every code object
# compiled under it (IPython carries them from one cell to the next).
_FUTURE = 0
for _feature in __future__.all_feature_names:
    _FUTURE |= getattr(__future__, _feature).compiler_flag
# Notebook cells may await at top level; it changes no function's code.
_TOP_AWAIT = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)


@dataclass(frozen=True, eq=False)  # hashed by identity: one object per text (see `parse`)
class Source:
    """One file's or cell's text, parsed."""

    text: str
    tree: ast.Module | None
    defs: dict[int, list[ast.AST]] = field(default_factory=dict)  # first line -> nodes
    rebound: frozenset[str] = frozenset()  # names some function declares `global`


_NONE = Source("", None)


def source_of(filename: str, module_globals: Mapping[str, Any] | None) -> Source:
    """The current text of `filename` ("" when there is none: exec, `python -c`)."""
    linecache.checkcache(filename)  # drops entries whose file changed; cells stay
    lines = linecache.getlines(filename, dict(module_globals) if module_globals else None)
    return parse("".join(lines)) if lines else _NONE


@lru_cache(maxsize=256)
def parse(text: str) -> Source:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are not ours to report
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return Source(text, None)
    index: dict[int, list[ast.AST]] = {}
    rebound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, _DEFS):
            index.setdefault(_first_line(node), []).append(node)
        elif isinstance(node, ast.Global):
            rebound.update(node.names)
    for nodes in index.values():
        nodes.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    return Source(text, tree, index, frozenset(rebound))


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> int:
    # co_firstlineno of a decorated function is its first decorator's line.
    if isinstance(node, ast.Lambda):
        return node.lineno
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def find_definitions(code: types.CodeType, src: Source) -> list[ast.AST]:
    """The `def`/`lambda` nodes that start where `code` starts, outermost
    first. The file name only selects the text: it never enters a
    fingerprint, because notebook cells get a new one on every kernel restart."""
    return list(_definitions_at(src, code.co_firstlineno, code.co_name))


@lru_cache(maxsize=1024)
def _definitions_at(src: Source, line: int, name: str) -> tuple[ast.AST, ...]:
    found = [n for n in src.defs.get(line, []) if _def_name(n) == name]
    # `lambda x: lambda y: ...`: keep the outermost, it contains the others.
    inner = {id(sub) for n in found for sub in ast.walk(n) if sub is not n}
    return tuple(n for n in found if id(n) not in inner)


def _def_name(node: ast.AST) -> str:
    return "<lambda>" if isinstance(node, ast.Lambda) else str(getattr(node, "name", ""))


# ---------------------------------------------------------------- is it the running code?


def runs_this_source(code: types.CodeType, src: Source) -> bool:
    """Whether compiling `src` now gives, at `code`'s first line, a code
    object of the same shape as `code`: same instructions, names, constants
    and nested code. Both come from this interpreter, so this holds on every
    Python version; line positions inside the body are not compared (a
    blank line there changes nothing that runs), the first line is."""
    key = (id(code), id(src))
    known = _CHECKED.get(key)
    if known is None:
        compiled = _compiled(src.text, code.co_flags & _FUTURE)
        candidates = compiled.get((code.co_firstlineno, code.co_name), ())
        if len(_CHECKED) > 4096:
            _CHECKED.clear()
        # The entry holds both objects, so neither id can be reused meanwhile.
        known = _CHECKED[key] = (code, src, any(same_code(code, c) for c in candidates))
    return known[2]


_CHECKED: dict[tuple[int, int], tuple[types.CodeType, Source, bool]] = {}


@lru_cache(maxsize=256)
def _compiled(text: str, flags: int) -> dict[tuple[int, str], list[types.CodeType]]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = compile(text, "<durable>", "exec", flags | _TOP_AWAIT, dont_inherit=True)
    except (SyntaxError, ValueError):
        return {}
    index: dict[tuple[int, str], list[types.CodeType]] = {}
    for co in _nested(module):
        index.setdefault((co.co_firstlineno, co.co_name), []).append(co)
    return index


def _nested(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _nested(const)


_SHAPE = (
    "co_code",
    "co_names",
    "co_varnames",
    "co_freevars",
    "co_cellvars",
    "co_argcount",
    "co_posonlyargcount",
    "co_kwonlyargcount",
    "co_flags",
    "co_name",
)


def same_code(a: types.CodeType, b: types.CodeType) -> bool:
    if any(getattr(a, k) != getattr(b, k) for k in _SHAPE):
        return False
    return _same_items(a.co_consts, b.co_consts)


def _same_items(xs: tuple[Any, ...], ys: tuple[Any, ...]) -> bool:
    return len(xs) == len(ys) and all(_same_const(x, y) for x, y in zip(xs, ys, strict=True))


def _same_const(x: object, y: object) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
        return same_code(x, y)
    if isinstance(x, tuple) and isinstance(y, tuple):
        return _same_items(x, y)
    if isinstance(x, (float, complex)):
        return repr(x) == repr(y)  # -0.0 is not 0.0, nan is nan
    return x == y


def module_runs_this_source(filename: str, namespace: Mapping[str, Any], src: Source) -> bool:
    """Whether every function of `filename` bound in `namespace` (and the
    methods of its classes) still matches `src`: text read around them (a
    module-level assignment) is then the text that ran."""
    for code in _codes_from(filename, namespace):
        if not runs_this_source(code, src):
            return False
    return True


def _codes_from(filename: str, namespace: Mapping[str, Any]) -> Iterator[types.CodeType]:
    module = namespace.get("__name__")
    for value in list(namespace.values()):
        members = list(vars(value).values()) if _class_of(value, module) else [value]
        for member in members:
            code = getattr(getattr(member, "__func__", member), "__code__", None)
            if isinstance(code, types.CodeType) and code.co_filename == filename:
                yield code


def _class_of(value: object, module: object) -> bool:
    return isinstance(value, type) and getattr(value, "__module__", None) == module


def stale_source(who: str, filename: str) -> ConfigurationError:
    return ConfigurationError(
        f"the source of {who} in {filename} no longer matches the running code (edited after "
        "import?); re-import the module (importlib.reload, %autoreload) or restart the process. "
        "Nothing was run or recorded."
    )


# ---------------------------------------------------------------- where a name is bound


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
    cells = namespace.get("_ih")
    if isinstance(cells, list):
        for text in reversed(cells):
            found = _binders(text).get(name) if isinstance(text, str) else None
            if found:
                return found
    files = [namespace.get("__file__"), checked_file]
    for filename in dict.fromkeys(f for f in files if isinstance(f, str)):
        src = source_of(filename, namespace)
        found = _binders(src.text).get(name)
        if found:
            if filename != checked_file and not _module_matches(filename, namespace, src):
                raise stale_source(str(namespace.get("__name__", "?")), filename)
            return found
    return None


def _module_matches(filename: str, namespace: Mapping[str, Any], src: Source) -> bool:
    key = (filename, id(namespace), id(src))
    known = _MODULES.get(key)
    if known is None:
        if len(_MODULES) > 1024:
            _MODULES.clear()
        known = _MODULES[key] = (src, module_runs_this_source(filename, namespace, src))
    return known[1]


_MODULES: dict[tuple[str, int, int], tuple[Source, bool]] = {}


@lru_cache(maxsize=256)
def _binders(text: str) -> dict[str, list[ast.AST]]:
    tree = parse(text).tree
    index: dict[str, list[ast.AST]] = {}
    for node, names in _module_level(tree.body if tree else []):
        for n in dict.fromkeys(names):
            index.setdefault(n, []).append(node)
    return index


# Methods that change a list, dict or set in place (not `logging.basicConfig`).
_MUTATORS = frozenset(
    "append extend insert update add setdefault remove discard clear pop popitem sort reverse".split()
)
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _module_level(body: list[Any]) -> Iterator[tuple[ast.AST, list[str]]]:
    """(node, names it binds or changes) for every statement that runs at
    module level: inside `if`, `try`, `with`, `for`, not inside a def or class."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield stmt, [stmt.name]
            continue
        yield from _bound_by(stmt)
        for block in _BLOCKS:
            inner = getattr(stmt, block, None)
            if isinstance(inner, list):
                yield from _module_level(inner)


def _bound_by(stmt: Any) -> Iterator[tuple[ast.AST, list[str]]]:
    if isinstance(stmt, ast.Assign):
        yield stmt, [n for t in stmt.targets for n in _roots(t)]
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        yield stmt, _roots(stmt.target)
    elif isinstance(stmt, ast.Delete):
        yield stmt, [n for t in stmt.targets for n in _roots(t)]
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        yield stmt, [_import_binds(a) for a in stmt.names if a.name != "*"]
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        yield ast.Tuple(elts=[stmt.target, stmt.iter], ctx=ast.Load()), _roots(stmt.target)
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        for item in stmt.items:
            if item.optional_vars is not None:
                yield item, _roots(item.optional_vars)
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func  # `SEEN.append(1)`, `CFG.update(...)` at module level
        if isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
            yield stmt, _roots(func.value)


def _import_binds(alias: ast.alias) -> str:
    return alias.asname or alias.name.partition(".")[0]


def _roots(target: ast.AST) -> list[str]:
    """`X`, `X[k]`, `X.a.b`, `(X, Y)`, `*X`: the names whose value changes."""
    while isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)):
        target = target.value
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _roots(e)]
    return []
