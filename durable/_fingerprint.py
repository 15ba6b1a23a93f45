"""Normalised-source hashing (pure: no I/O beyond reading source).

A fingerprint is 12 hex digits of SHA-256 over a function's identity and a
canonical walk of its AST, so that formatting never matters and semantics
always do."""

from __future__ import annotations

import ast
import hashlib
import inspect
import linecache
import textwrap
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import ConfigurationError

OUR_DECORATORS = frozenset({"step", "workflow"})


@dataclass(frozen=True)
class Fingerprint:
    value: str
    identity: str
    parts: Mapping[str, str] = field(default_factory=dict)


def identity_of(fn: Callable[..., Any], name: str | None = None) -> str:
    if name:
        return name
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def digest(*chunks: str) -> str:
    h = hashlib.sha256()
    for c in chunks:
        h.update(c.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def fingerprint_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    version: str | None = None,
    deep: bool = True,
) -> Fingerprint:
    identity = identity_of(fn, name)
    if version is not None:
        return Fingerprint(digest(identity, "version", version), identity, {"version": version})
    code = source_hash(fn)
    return Fingerprint(digest(identity, "code", code), identity, {"code": code})


def combine(identity: str, own: str, children: Mapping[str, str]) -> str:
    chunks = [identity, own]
    for k in sorted(children):
        chunks += [k, children[k]]
    return digest(*chunks)


def source_hash(fn: Callable[..., Any]) -> str:
    node = _function_node(fn)
    h = hashlib.sha256()
    for token in _walk(node, top=True):
        h.update(token.encode())
        h.update(b"\x1f")
    return h.hexdigest()[:16]


def _function_node(fn: Callable[..., Any]) -> ast.AST:
    target = inspect.unwrap(fn)
    try:
        lines, _ = inspect.getsourcelines(target)
    except (OSError, TypeError) as e:
        raise ConfigurationError(
            f"cannot read the source of {identity_of(fn)} ({e}); "
            "pass version='...' to the decorator to fingerprint it by hand"
        ) from None
    src = textwrap.dedent("".join(lines))
    linecache.checkcache()
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return node
    raise ConfigurationError(f"no function definition found for {identity_of(fn)}")


def _walk(node: Any, top: bool = False) -> Iterator[str]:
    if isinstance(node, ast.AST):
        yield type(node).__name__
        for fname, value in ast.iter_fields(node):
            if fname in ("type_comment", "kind", "ctx"):
                continue
            if top and fname == "decorator_list":
                value = [d for d in value if not _is_ours(d)]
            if fname == "body" and isinstance(value, list):
                value = _strip_docstring(value)
            yield fname
            yield from _walk(value)
    elif isinstance(node, list):
        yield "["
        for item in node:
            yield from _walk(item)
        yield "]"
    else:
        yield f"{type(node).__name__}:{node!r}"


def _strip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            return body[1:]
    return body


def _is_ours(dec: ast.expr) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    if isinstance(target, ast.Attribute):
        return target.attr in OUR_DECORATORS
    return isinstance(target, ast.Name) and target.id in OUR_DECORATORS


def referenced_objects(fn: Callable[..., Any]) -> list[object]:
    """Objects the function's body can reach by name: globals, closure cells,
    and those of nested functions and lambdas, in first-seen order."""
    target = inspect.unwrap(fn)
    code = getattr(target, "__code__", None)
    if code is None:
        return []
    found: dict[int, object] = {}
    globs = getattr(target, "__globals__", {})
    for cell in getattr(target, "__closure__", None) or ():
        try:
            found.setdefault(id(cell.cell_contents), cell.cell_contents)
        except ValueError:
            continue
    for co in _codes(code):
        for n in co.co_names:
            if n in globs:
                found.setdefault(id(globs[n]), globs[n])
    return list(found.values())


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def describe_change(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    """Say what kind of change turned the old parts into the new ones."""
    kinds = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    labels = {
        "code": "code changed",
        "version": "version changed",
        "constants": "constant changed",
        "helpers": "helper changed",
    }
    return ", ".join(labels.get(k, f"{k} changed") for k in kinds) or "changed"
