"""A canonical, Python-version-independent encoding of source.

Pure standard library. Everything here produces *tokens* (strings) that are
hashed by the caller; literals in the tree are encoded by `scalar_token`,
as plain values are. The same source must give the same tokens on CPython
3.10 through 3.13, so this walks the AST itself instead of using
`ast.dump` (whose output changed in 3.12 and 3.13), `tokenize` (f-strings
are split into tokens since 3.12) or bytecode (changes every release).
"""

from __future__ import annotations

import ast
import linecache
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ._fpvalues import scalar_token

#: Decorator names that belong to durable and never count as code.
OUR_DECORATORS = frozenset({"step", "workflow"})

# Fields that carry no meaning (`ctx`, `kind` is the `u""` prefix) or only
# exist in some versions (`type_comment`, `type_ignores`).
_SKIP_FIELDS = frozenset({"ctx", "kind", "type_comment", "type_ignores"})
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_DOC_OWNERS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# File names that any string compiled by `exec`, `compile` or a console gets.
# Python 3.13 keeps the `python -c` program in linecache as "<string>", and
# every `exec(text)` of that process is "<string>" too: the text found under
# such a name may belong to other code, so it is never taken as a source.
_SHARED_NAMES = frozenset({"<string>", "<stdin>", "<console>"})

# ---------------------------------------------------------------- locating


def find_definitions(code: types.CodeType, module_globals: dict[str, Any] | None) -> list[ast.AST]:
    """The `def`/`lambda` nodes that start where `code` starts, outermost
    first. Empty when the source cannot be had (exec, `python -c`).

    The file name only selects the text: it never enters a fingerprint,
    because notebook cells get a new one on every kernel restart."""
    nodes = _module_of(code, module_globals).defs.get(code.co_firstlineno, [])
    found = [n for n in nodes if _def_name(n) == code.co_name]
    # `lambda x: lambda y: ...`: keep the outermost, it contains the others.
    inner = {id(sub) for n in found for sub in ast.walk(n) if sub is not n}
    return [n for n in found if id(n) not in inner]


def rebound_names(code: types.CodeType, module_globals: dict[str, Any] | None) -> frozenset[str]:
    """Names some function of the same file declares `global`: variables the
    program rebinds while it runs, so their value is state, not a constant."""
    return _module_of(code, module_globals).rebound


def parameters_match(node: ast.AST, code: types.CodeType) -> bool:
    """Whether the node's parameter names are those of the running code: a
    cheap guard against a source file edited after it was imported."""
    args = getattr(node, "args", None)
    if not isinstance(args, ast.arguments):
        return False
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return tuple(names) == code.co_varnames[: len(names)]


@dataclass(frozen=True)
class _Module:
    defs: dict[int, list[ast.AST]]  # first line -> def/lambda nodes starting there
    rebound: frozenset[str]


_NO_SOURCE = _Module({}, frozenset())


def _module_of(code: types.CodeType, module_globals: dict[str, Any] | None) -> _Module:
    filename = code.co_filename
    if filename in _SHARED_NAMES:
        return _NO_SOURCE
    # Drops entries whose file changed on disk; IPython cells (no mtime) stay.
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, module_globals)
    return _parse_module("".join(lines)) if lines else _NO_SOURCE


@lru_cache(maxsize=64)
def _parse_module(source: str) -> _Module:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are not ours to report
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _NO_SOURCE
    index: dict[int, list[ast.AST]] = {}
    rebound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, _DEFS):
            index.setdefault(_first_line(node), []).append(node)
        elif isinstance(node, ast.Global):
            rebound.update(node.names)
    for nodes in index.values():
        nodes.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    return _Module(index, frozenset(rebound))


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> int:
    # co_firstlineno of a decorated function is its first decorator's line.
    if isinstance(node, ast.Lambda):
        return node.lineno
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _def_name(node: ast.AST) -> str:
    return "<lambda>" if isinstance(node, ast.Lambda) else str(getattr(node, "name", ""))


# ---------------------------------------------------------------- AST walk


def definition_tokens(node: ast.AST) -> Iterator[str]:
    """Tokens of a `def` or `lambda` without its own name: the identity
    (qualname or `name=`) already says who it is, and renaming a function
    pinned by `name=` changes nothing it computes."""
    return ast_tokens(node, skip=("name",))


def ast_tokens(node: ast.AST, skip: tuple[str, ...] = ()) -> Iterator[str]:
    """Canonical tokens of a node: type names and fields sorted by name, with
    empty fields dropped so that a field a newer Python adds (`type_params`)
    or omits does not matter; string parts of f-strings merged."""
    if isinstance(node, ast.JoinedStr):
        yield from _joined_tokens(node)
        return
    yield "(" + type(node).__name__
    for name in sorted(node._fields):
        value = None if name in skip else _field(node, name)
        if value is None or (isinstance(value, list) and not value):
            continue
        yield "." + name
        yield from _value_tokens(value)
    yield ")"


def _field(node: ast.AST, name: str) -> Any:
    if name in _SKIP_FIELDS:
        return None
    value = getattr(node, name, None)
    if name == "decorator_list" and isinstance(value, list):
        return [d for d in value if not is_our_decorator(d)]
    if name == "body" and isinstance(node, _DOC_OWNERS):
        return _without_docstring(node.body)
    if name == "format_spec" and isinstance(value, ast.JoinedStr):
        return value if _fstring_parts(value) else None  # `f"{x:}"` is `f"{x}"`
    if name == "level" and not value:
        return None  # `from m import x`: 0 or None depending on the version
    return value


def _value_tokens(value: Any) -> Iterator[str]:
    if isinstance(value, ast.AST):
        yield from ast_tokens(value)
    elif isinstance(value, list):
        yield "["
        for item in value:
            yield from _value_tokens(item) if item is not None else iter(("~",))
        yield "]"
    else:
        yield scalar_token(value)


def _joined_tokens(node: ast.JoinedStr) -> Iterator[str]:
    parts = _fstring_parts(node)
    if all(isinstance(p, str) for p in parts):
        # An f-string without fields is the plain string it spells.
        yield from ast_tokens(ast.Constant(value="".join(str(p) for p in parts)))
        return
    yield "(JoinedStr"
    yield ".values"
    yield "["
    for part in parts:
        yield from ast_tokens(ast.Constant(value=part) if isinstance(part, str) else part)
    yield "]"
    yield ")"


def _fstring_parts(node: ast.JoinedStr) -> list[str | ast.AST]:
    """Literal text merged and empty pieces dropped: 3.12 adds empty
    `Constant('')` after nested fields and splits text differently."""
    parts: list[str | ast.AST] = []
    for value in node.values:
        pieces = _fstring_parts(value) if isinstance(value, ast.JoinedStr) else [value]
        for piece in pieces:
            if isinstance(piece, ast.Constant) and isinstance(piece.value, str):
                piece = piece.value
            if isinstance(piece, str) and parts and isinstance(parts[-1], str):
                parts[-1] += piece
            elif piece != "":
                parts.append(piece)
    return parts


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        if isinstance(first.value.value, str):
            body = body[1:]
    return body or [ast.Pass()]  # a docstring-only body does what `pass` does


def is_our_decorator(dec: ast.expr) -> bool:
    """`@step`, `@workflow`, `@durable.step(...)`, `@d.workflow(...)`: how the
    engine runs the function, not what it computes (retries, names)."""
    target = dec.func if isinstance(dec, ast.Call) else dec
    if isinstance(target, ast.Name):
        return target.id in OUR_DECORATORS
    if not (isinstance(target, ast.Attribute) and target.attr in OUR_DECORATORS):
        return False
    root: ast.expr = target.value
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name)


# ---------------------------------------------------------------- names


def name_chains(node: ast.AST) -> Iterator[tuple[str, ...]]:
    """Dotted names read in `node`: `a`, `a.b`, `a.b.c` (every prefix)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            yield (sub.id,)
        elif isinstance(sub, ast.Attribute):
            chain: list[str] = []
            cur: ast.expr = sub
            while isinstance(cur, ast.Attribute):
                chain.insert(0, cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name):
                yield (cur.id, *chain)


def foreign_decorators(nodes: list[ast.AST]) -> Iterator[ast.expr]:
    """Decorators that are not ours: they change what the function does."""
    for node in nodes:
        for dec in getattr(node, "decorator_list", ()):
            if not is_our_decorator(dec):
                yield dec
