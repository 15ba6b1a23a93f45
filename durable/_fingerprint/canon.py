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
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from .nodes import children, walk
from .values import hash_tokens, scalar_token

#: Decorator names that belong to durable and never count as code.
OUR_DECORATORS = frozenset({"step", "workflow"})

# Fields that carry no meaning (`ctx`, `kind` is the `u""` prefix) or only
# exist in some versions (`type_comment`, `type_ignores`).
_SKIP_FIELDS = frozenset({"ctx", "kind", "type_comment", "type_ignores"})
_DOC_OWNERS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

# ---------------------------------------------------------------- AST walk


@lru_cache(maxsize=4096)
def node_hash(node: ast.AST) -> str:
    """Hash of a node's canonical tokens. Parsed trees are cached by their
    text (`_source.parse`), so the same node comes back for the same text;
    the cache holds it, so its identity cannot be reused by another node."""
    return hash_tokens(definition_tokens(node))


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
    if name == "body" and isinstance(node, _DOC_OWNERS) and not _decorated(node):
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


def _decorated(node: ast.AST) -> bool:
    """Whether a decorator besides ours is applied: it may read the docstring
    (`@tool` makes it the description an LLM is given), so that counts."""
    return any(not is_our_decorator(d) for d in getattr(node, "decorator_list", ()))


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
    for sub in walk(node):
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


def default_expressions(nodes: list[ast.AST]) -> Iterator[ast.expr]:
    """Default values: evaluated where the function is defined, so the names
    they read are globals even when the body never names them."""
    for node in nodes:
        args = getattr(node, "args", None)
        if isinstance(args, ast.arguments):
            yield from args.defaults
            yield from (d for d in args.kw_defaults if d is not None)


def foreign_decorators(nodes: list[ast.AST]) -> Iterator[ast.expr]:
    """Decorators that are not ours: they change what the function does."""
    for node in nodes:
        for dec in getattr(node, "decorator_list", ()):
            if not is_our_decorator(dec):
                yield dec


@lru_cache(maxsize=4096)  # nodes come from trees cached by their text
def uses_itself(nodes: tuple[ast.AST, ...], name: str) -> bool:
    """Whether a function uses its own name other than to call itself
    (`helper.k`, `getattr(helper, "k")`, `helper.__defaults__`): it reads
    what the module's statements set on it (`helper.k = 2`)."""
    found = [n for node in nodes for n in walk(node)]
    calls = {id(n.func) for n in found if isinstance(n, ast.Call)}
    return any(isinstance(n, ast.Name) and n.id == name and id(n) not in calls for n in found)


@lru_cache(maxsize=4096)
def chains_of(nodes: tuple[ast.AST, ...]) -> list[tuple[str, ...]]:
    # Nodes come from trees cached by their text, and are held here.
    return sorted({c for n in nodes for c in name_chains(n)})


@lru_cache(maxsize=4096)
def from_imports(stmt: ast.AST) -> tuple[ast.ImportFrom, ...]:
    return tuple(n for n in walk(stmt) if isinstance(n, ast.ImportFrom))


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPES = (*_FUNCTIONS, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@lru_cache(maxsize=4096)
def statement_chains(stmt: ast.AST) -> tuple[tuple[str, ...], ...]:
    """`name_chains` of a module-level statement, without the names a
    function inside it binds for itself (its parameters and what its own
    body assigns or imports, unless declared `global`): `def predict(self,
    X)` in a `class` statement reads its own X, never the module's, whose
    edit must not change what reads the class. A name bound in a way not
    told here stays a read (fail closed)."""
    return tuple(sorted(set(_free_chains(stmt, frozenset()))))


@lru_cache(maxsize=4096)
def called_chains(stmt: ast.AST) -> frozenset[tuple[str, ...]]:
    """Those of `statement_chains` read by the body of a function the
    statement defines (a method, a property, a lambda): when it is called,
    as a helper's are, not when the statement runs."""
    return frozenset(_called_chains(stmt))


def _called_chains(node: ast.AST) -> Iterator[tuple[str, ...]]:
    body: list[ast.AST] = []
    if isinstance(node, _FUNCTIONS):
        body = list(node.body) if isinstance(node.body, list) else [node.body]
        inner = _own_locals(node)
        for sub in body:
            yield from _free_chains(sub, inner)
    for sub in children(node):  # a lambda in a default or a decorator
        if all(sub is not b for b in body):
            yield from _called_chains(sub)


def _free_chains(node: ast.AST, local: frozenset[str]) -> Iterator[tuple[str, ...]]:
    if isinstance(node, _FUNCTIONS):
        args = node.args
        # Evaluated where the function is defined: in the enclosing scope.
        around: list[ast.AST | None] = [*getattr(node, "decorator_list", ()), *args.defaults]
        around += [*args.kw_defaults, _annotation(getattr(node, "returns", None))]
        every = [*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg]
        around += [_annotation(a.annotation) for a in every if a is not None]
        for sub in around:
            if sub is not None:
                yield from _free_chains(sub, local)
        inner = local | _own_locals(node)
        for sub in node.body if isinstance(node.body, list) else [node.body]:
            yield from _free_chains(sub, inner)
        return
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load) and node.id not in local:
            yield (node.id,)
        return
    held = _annotation(node.annotation) if isinstance(node, ast.AnnAssign) else None
    if held is not None and isinstance(node, ast.AnnAssign) and held is not node.annotation:
        yield from _free_chains(held, local)  # `k: "money.Money"`
    if isinstance(node, ast.Attribute):
        chain = next(name_chains(node), None)  # the whole chain comes first
        if chain is not None and chain[0] not in local:
            yield chain
    for sub in children(node):
        yield from _free_chains(sub, local)


def _annotation(node: ast.expr | None) -> ast.expr | None:
    """An annotation written as a string (`k: "money.Money"`), as the
    expression it holds: `typing.get_type_hints` evaluates it, and code
    reading the hints calls what it names (a validator converting a field
    with `Money(v)`). Else the node itself."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return node
    try:
        return ast.parse(node.value.strip(), mode="eval").body
    except SyntaxError:  # no expression: nothing it names
        return node


def _own_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> frozenset[str]:
    """The names a function binds in its own scope: parameters, assignment
    targets, imports and nested definitions in its body (not inside its
    nested functions, classes or comprehensions), minus its `global`s."""
    args = fn.args
    every = [*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg]
    names = {a.arg for a in every if a is not None}
    declared: set[str] = set()
    todo: list[ast.AST] = [*fn.body] if isinstance(fn.body, list) else [fn.body]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Global):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        if not isinstance(node, _SCOPES):
            todo.extend(children(node))
    return frozenset(names - declared)
