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
import importlib.machinery
import linecache
import threading
import types
import warnings
import zipimport
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..errors import ConfigurationError
from .nodes import walk
from .passes import per_pass
from .patched import compiled_alone, may_be_patched
from .samecode import nested_code, same_code
from .witness import file_state, witnessed

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
_LAZY = ("__name__", "__loader__", "__spec__")
_JOINED: dict[str, tuple[list[str], int, str]] = {}  # file -> (its lines in linecache, how many, text)
# file -> (its stat, linecache's entry, its Source) as `source_of` last read it: a memo
# check asks for a file's text several times a call, each a `stat` and a linecache check.
_READ: dict[str, tuple[bytes, object, Source]] = {}
# File names that any string compiled by `exec`, `compile` or a console gets.
# Python 3.13 keeps the `python -c` program in linecache as "<string>", and
# every `exec(text)` of that process is "<string>" too: the text found under
# such a name may belong to other code, so it is never taken as a source.
_SHARED_NAMES = frozenset({"<string>", "<stdin>", "<console>"})


@per_pass  # asked for each name a statement reads: each file statted and looked up once a pass
def source_of(filename: str, module_globals: Mapping[str, Any] | None) -> Source:
    """The current text of `filename` ("" when there is none: exec, `python -c`)."""
    if filename in _SHARED_NAMES:
        return _NONE
    state = witnessed(file_state, filename)  # before reading: an edit meanwhile is a change
    entry = linecache.cache.get(filename)
    kept = _READ.get(filename)
    if kept is not None and kept[1] is entry is not None and kept[0] == state:
        return kept[2]  # the same stat, the same lines held: what reading again gives
    src = parse(text) if (text := current_text(filename, module_globals)) else _NONE
    if type(state) is bytes:  # a file's stat (not a cell's lines)
        if len(_READ) >= 1024:
            _READ.clear()
        _READ[filename] = (state, linecache.cache.get(filename), src)
    return src


def current_text(filename: str, module_globals: Mapping[str, Any] | None) -> str:
    # `source_of`'s text, not witnessed, not parsed.
    linecache.checkcache(filename)  # drops entries whose file changed; cells stay
    # What linecache needs to ask a loader (zip imports), not a whole namespace.
    lazy = {k: module_globals[k] for k in _LAZY if module_globals and k in module_globals}
    lines = linecache.getlines(filename, lazy or None)
    # Asked once per name a fingerprint follows (~400 for a step of a large module):
    # linecache makes a new list whenever it reads a file: the same list, the same text.
    kept = _JOINED.get(filename)
    if kept is None or kept[0] is not lines or kept[1] != len(lines):
        if len(_JOINED) >= 1024:  # cells of a long notebook session
            _JOINED.clear()
        kept = _JOINED[filename] = (lines, len(lines), "".join(lines))
    return kept[2]


# One parse or compile of source at a time in this process: CPython 3.11
# (3.11.7 here) counts the recursion depth of its AST conversion in state
# that threads share, so two threads parsing at once (runs of workflows
# started together in a thread pool, each fingerprinted on first use) can
# fail with "SystemError: AST constructor recursion depth mismatch"; and
# `warnings.catch_warnings` swaps the process's filters, which threads
# share too. Parses are memoised, so the lock is taken once per text.
_PARSING = threading.Lock()


@lru_cache(maxsize=256)
def parse(text: str) -> Source:
    try:
        with _PARSING, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are not ours to report
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return Source(text, None)
    index: dict[int, list[ast.AST]] = {}
    rebound: set[str] = set()
    for node in walk(tree):
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
    line = (home_line(code, src) if may_be_patched(code) else None) or code.co_firstlineno
    return list(_definitions_at(src, line, code.co_name))


def home_line(code: types.CodeType, src: Source) -> int | None:
    """The line of `src` where the one `def` starts that `%autoreload`
    compiled on its own into `code` (`patched`), else None: not its code,
    or two definitions of that name with its code (fail closed)."""
    if src.tree is None:
        return None
    with _PARSING:  # see `_PARSING`
        alone = compiled_alone(src.tree, code.co_filename, code.co_name, code.co_firstlineno)
    lines = {line for line, candidate in alone if same_code(code, candidate)}
    return lines.pop() if len(lines) == 1 else None


@lru_cache(maxsize=1024)
def _definitions_at(src: Source, line: int, name: str) -> tuple[ast.AST, ...]:
    found = [n for n in src.defs.get(line, []) if _def_name(n) == name]
    # `lambda x: lambda y: ...`: keep the outermost, it contains the others.
    inner = {id(sub) for n in found for sub in walk(n) if sub is not n}
    return tuple(n for n in found if id(n) not in inner)


def _def_name(node: ast.AST) -> str:
    return "<lambda>" if isinstance(node, ast.Lambda) else str(getattr(node, "name", ""))


def runs_this_source(
    code: types.CodeType, src: Source, module_globals: Mapping[str, Any] | None = None
) -> bool:
    """Whether compiling `src` now gives, at `code`'s first line, a code
    object of the same shape as `code`: same instructions, names, constants
    and nested code. Both come from this interpreter, so this holds on every
    Python version; line positions inside the body are not compared (a
    blank line there changes nothing that runs), the first line is."""
    how = _compiler_of(module_globals)
    key = (id(code), id(src))
    known = _CHECKED.get(key)
    if known is None:
        if how is _FOREIGN:  # cannot be compiled again: the cheap check only
            nodes = find_definitions(code, src)
            same = bool(nodes) and all(_parameters_match(n, code) for n in nodes)
        else:
            same = any(same_code(code, c) for c in _candidates(code, src, how))
            same = same or (may_be_patched(code) and home_line(code, src) is not None)
        if len(_CHECKED) > 4096:
            _CHECKED.clear()
        # The entry holds both objects, so neither id can be reused meanwhile.
        known = _CHECKED[key] = (code, src, same)
    return known[2]


def rank_on_line(
    code: types.CodeType, src: Source, module_globals: Mapping[str, Any] | None = None
) -> int | None:
    """Which of the definitions named like `code` that start on its first
    line `code` is, in the order the compiler makes them (the first of
    those with its code); None when that cannot be told (an import hook
    durable cannot redo)."""
    how = _compiler_of(module_globals)
    if how is _FOREIGN:
        return None
    for index in _indexes(code, src, how):
        for rank, candidate in enumerate(index.get((code.co_firstlineno, code.co_name), ())):
            if same_code(code, candidate):
                return rank
    return None


def _candidates(code: types.CodeType, src: Source, how: object) -> Iterator[types.CodeType]:
    for index in _indexes(code, src, how):
        yield from index.get((code.co_firstlineno, code.co_name), ())


def _indexes(
    code: types.CodeType, src: Source, how: object
) -> Iterator[dict[tuple[int, str], list[types.CodeType]]]:
    """The code objects `src` compiles to, as one module, then (only when
    asked for: it is the rarer case) each top-level statement on its own, as
    IPython compiles a cell (3.11+ compiles `json.dumps(x)` in a function
    differently when `import json` is in the same unit). A test module's
    plain compile comes first too: pytest rewrites `assert`s only (code
    without one is the same), at ~20 times a compile (not for cells)."""
    flags = code.co_flags & _FUTURE
    yield _compiled(src.text, flags, None, code.co_filename)
    yield _compiled(src.text, flags, _APART if how is None else how, code.co_filename)


_CHECKED: dict[tuple[int, int], tuple[types.CodeType, Source, bool]] = {}
_FOREIGN = object()
_APART = object()  # `_compiled`: each top-level statement on its own
_PLAIN_LOADERS = tuple(
    t
    for t in (
        getattr(importlib.machinery, "SourceFileLoader", None),
        getattr(importlib.machinery, "SourcelessFileLoader", None),
        getattr(zipimport, "zipimporter", None),
    )
    if t is not None
)


def _compiler_of(module_globals: Mapping[str, Any] | None) -> object:
    """How the module's code was made from its source: None for plain
    compilation (files, scripts, notebook cells, exec); pytest's assertion
    rewriter for test modules, whose asserts are rewritten (it is redone
    here); `_FOREIGN` for another import hook that transforms code
    (typeguard, beartype...), which durable cannot redo."""
    loader = (module_globals or {}).get("__loader__")
    if loader is None or type(loader) in _PLAIN_LOADERS:
        return None
    if type(loader).__module__ == "_pytest.assertion.rewrite" and hasattr(loader, "config"):
        return loader
    return None if isinstance(loader, type) else _FOREIGN  # BuiltinImporter: `python -c`


def rewritten_by_pytest(module_globals: Mapping[str, Any]) -> bool:  # a test module
    return _compiler_of(module_globals) not in (None, _FOREIGN)


def _parameters_match(node: ast.AST, code: types.CodeType) -> bool:
    args = getattr(node, "args", None)
    if not isinstance(args, ast.arguments):
        return False
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return tuple(names) == code.co_varnames[: len(names)]


@lru_cache(maxsize=512)  # a test module's plain and rewritten compiles: two entries
def _compiled(
    text: str, flags: int, how: object, filename: str
) -> dict[tuple[int, str], list[types.CodeType]]:
    try:
        with _PARSING, warnings.catch_warnings():  # see `_PARSING`
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
            if how is not None and how is not _APART:
                _rewrite_asserts(tree, text, filename, how)
            units = [ast.Module([s], []) for s in tree.body] if how is _APART else [tree]
            modules = [
                compile(u, filename, "exec", flags | _TOP_AWAIT, dont_inherit=True) for u in units
            ]
    except (SyntaxError, ValueError):
        return {}
    index: dict[tuple[int, str], list[types.CodeType]] = {}
    for co in (c for module in modules for c in nested_code(module)):
        index.setdefault((co.co_firstlineno, co.co_name), []).append(co)
    return index


def _rewrite_asserts(tree: ast.Module, text: str, filename: str, hook: Any) -> None:
    # Only reached when pytest loaded the module, so pytest is importable.
    from _pytest.assertion.rewrite import rewrite_asserts

    rewrite_asserts(tree, text.encode("utf-8", "surrogateescape"), filename, hook.config)


def stale_source(who: str, filename: str, module: str) -> ConfigurationError:
    # After a reload the module is new but a name taken from it with `from
    # module import name` still holds the old object: reloading again cannot
    # help, re-running the import that bound it does.
    return ConfigurationError(
        f"the source of {who} in {filename} no longer matches the running code (edited after "
        "import?); re-import the module (importlib.reload, %autoreload) or restart the process. "
        f"After a reload, also re-run the cell or statement that did `from {module} import "
        "...`: a name imported that way still holds the code from before the reload. "
        "Nothing was run or recorded."
    )
