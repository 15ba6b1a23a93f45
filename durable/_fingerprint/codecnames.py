"""The user's codecs a function's code names by a string (`"a".encode(
"seven")`, `codecs.lookup("seven")`, `str(data, "seven")`, `open(p,
encoding="seven")`), or by a module-level constant (`"a".encode(ENC)`), and
the error handlers they name (`"é".encode("ascii", "sevens")` of
`codecs.register_error`): a search function registered with `codecs.register`
answers for that name, and the functions it gives run as the call does, yet
only a string reaches them. Followed as helpers: counted by the call's text
alone, an edit of the codec replayed the output of its old code.

Pure standard library."""

from __future__ import annotations

import ast
import codecs
from collections.abc import Iterator, Mapping
from functools import lru_cache

from .reach import _followable

# The calls that take a codec's name: where in their arguments (the index of
# the first positional one that may be; keyword `encoding` too). A method's
# (`text.encode("seven")`) or a builtin's; the rest only as `codecs.` ones
# (`table.lookup("users")` names no codec).
_FIRST = {"encode": 0, "decode": 0, "str": 1, "bytes": 1, "bytearray": 1, "open": 99, "TextIOWrapper": 99}
_CODECS_FIRST = {"encode": 1, "decode": 1, "lookup": 0, "iterencode": 1, "iterdecode": 1, "getencoder": 0,
                 "getdecoder": 0, "getincrementalencoder": 0, "getincrementaldecoder": 0, "getreader": 0,
                 "getwriter": 0, "open": 99, "EncodedFile": 1}  # fmt: skip
# The parts of a `CodecInfo` that run: `CodecInfo` is a tuple of the first four.
_PARTS = ("encode", "decode", "streamreader", "streamwriter", "incrementalencoder", "incrementaldecoder")


def named_codecs(nodes: tuple[ast.AST, ...], globs: Mapping[str, object]) -> list[object]:
    """The functions of the user's that the codecs and error handlers `nodes`
    name by a constant (or a global of `globs` holding a string) give."""
    found: list[object] = []
    strings, names = _names(nodes)
    for name in (*strings, *(v for v in map(globs.get, names) if isinstance(v, str))):
        try:
            info = codecs.lookup(name)
        except (LookupError, TypeError, ValueError):  # no such codec: the call raises
            info = None
        found += [f for f in (getattr(info, p, None) for p in _PARTS) if f is not None and _followable(f)]
        try:
            handler: object = codecs.lookup_error(name)  # `errors="sevens"`
        except (LookupError, TypeError, ValueError):
            continue
        found += [handler] if _followable(handler) else []
    return found


@lru_cache(maxsize=4096)  # a function's nodes, asked at each fingerprint of it
def _names(nodes: tuple[ast.AST, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The strings written in the calls that name a codec, and the names read there (`ENC`)."""
    given = [a for node in nodes for a in _named(node)]
    strings = (a.value for a in given if isinstance(a, ast.Constant) and isinstance(a.value, str))
    names = (a.id for a in given if isinstance(a, ast.Name))
    return tuple(dict.fromkeys(strings)), tuple(dict.fromkeys(names))


def _named(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        on_codecs = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "codecs"
        first = (_CODECS_FIRST if on_codecs else _FIRST).get(name)
        if first is None:
            continue
        yield from [*node.args[first:], *(k.value for k in node.keywords if k.arg in ("encoding", "errors"))]
