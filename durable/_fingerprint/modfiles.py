"""A module of the user's read by its file, without importing it: the file
it would be imported from, the names it binds at top level, whether it
does work at import (`train.py` training at top level), and the digest of
its text and of the user's modules it imports (`lookups`: a string naming
`train.run` never imports such a file, which would run that work).

Pure standard library."""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import os
import sys

from .userfiles import is_user_file
from .values import fresh_token, hash_tokens


def file_of(parts: list[str]) -> str:
    """The file module `parts` would be imported from, found without
    importing anything; "" for none (a library's is not looked at)."""
    try:
        spec = importlib.util.find_spec(parts[0])  # a top-level name: nothing is imported
    except (ImportError, ValueError):
        return ""
    origin = getattr(spec, "origin", None)
    places = list(getattr(spec, "submodule_search_locations", None) or ())
    for part in parts[1:]:
        origin = next((f for d in places for f in (os.path.join(d, part, "__init__.py"), os.path.join(d, part + ".py"))
                       if os.path.isfile(f)), None)  # fmt: skip
        places = [os.path.dirname(origin)] if origin and origin.endswith("__init__.py") else []
    found = os.path.abspath(origin) if isinstance(origin, str) and os.path.isfile(origin) else ""
    return found if found and is_user_file(found, parts[0]) else ""


def top_names(path: str) -> frozenset[str]:
    """The names a module's file binds at top level (by its text, cached by
    its state: asked again at each check of a memo)."""
    return _parsed(path)[0]


def works_at_import(name: str) -> str | None:
    """When the file of the user's module `name` does work at import (loaded
    or not), the digest of its text and of the user's modules it imports,
    and theirs (a helper `train.run` calls): never imported by a fingerprint,
    it counts by those texts. None for any other module."""
    if not _parsed(_loaded_file(name) or file_of(name.split(".")))[1]:
        return None
    seen: dict[str, str] = {}
    todo = [name]
    while todo:
        module = todo.pop()
        path = "" if module in seen or not module else file_of(module.split("."))
        if path:
            if len(seen) == _WALKED:  # the rest would go uncounted: changed (`UNTOLD`)
                return UNTOLD
            _, _, seen[module], imported = _parsed(path)
            package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
            todo += [_resolved("." * level + n, package) if level else n for level, n in imported]
    return hash_tokens(f"{m}:{d}" for m, d in sorted(seen.items()))


# Past this many modules of the user's imported from one that does work at
# import, the walk stops, and what it counts is a token of this process
# alone (`UNTOLD`), as for data too large to look through (`lookups`): a
# resume in another process is refused as changed (fail closed), where
# counting the first ones only let an edit of the others replay.
_WALKED = 1024
UNTOLD = fresh_token()


def _loaded_file(name: str) -> str:
    """A loaded module's file, without `find_spec` (asked at each check of a memo)."""
    path = getattr(sys.modules.get(name), "__file__", None)
    return path if isinstance(path, str) and os.path.isabs(path) and is_user_file(path, name.partition(".")[0]) else ""


def _parsed(path: str) -> tuple[frozenset[str], bool, str, tuple[tuple[int, str], ...]]:
    """What `_parsed_names` gives for the file at `path`, cached by its state."""
    try:
        state = os.stat(path) if path else None
    except OSError:
        state = None
    if state is None:
        return frozenset(), False, "", ()
    # Whatever its size: a generated module of a megabyte cut off unread
    # counted by nothing, and an edit of it replayed (parsed once a state).
    return _parsed_names(path, state.st_mtime_ns, state.st_size)


# Top-level statements that run work at import (`train()`, `for epoch in ...:`,
# `with open(...)`), besides an assignment of what a function of the file gives
# (`model = fit()`); `if __name__ == "__main__":` does not run at import.
_WORK = (ast.Expr, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)
_MAIN = ('__name__ == "__main__"', '"__main__" == __name__')


# Decorators that change nothing outside what they make (of the standard
# library and durable's own): any other may register the function in another
# module's registry (`@render.register(int)` of a singledispatch function
# elsewhere, `@app.route("/")`), work a fingerprint must not run.
_QUIET_DECORATORS = frozenset(
    "staticmethod classmethod property dataclass cache lru_cache cached_property wraps total_ordering"
    " singledispatch singledispatchmethod contextmanager asynccontextmanager abstractmethod overload final"
    " override runtime_checkable unique step workflow".split()
)
_QUIET_MODULES = frozenset({"functools", "dataclasses", "abc", "typing", "typing_extensions", "contextlib", "enum", "durable"})
_OWN_PARTS = frozenset({"setter", "getter", "deleter", "register"})  # of a property or dispatcher made here


def _quiet(decorator: ast.expr, defined: set[str]) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Name):
        return target.id in _QUIET_DECORATORS or target.id in defined
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        base = target.value.id
        return base in _QUIET_MODULES or (base in defined and target.attr in _OWN_PARTS)
    return False


def _works(stmt: ast.stmt, defined: set[str]) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        inner = stmt.body if isinstance(stmt, ast.ClassDef) else []  # a class's body runs at import
        own = defined | {s.name for s in inner if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        return not all(_quiet(d, defined) for d in stmt.decorator_list) or any(_works(s, own) for s in inner)
    if isinstance(stmt, ast.Expr):
        return not isinstance(stmt.value, ast.Constant)  # a docstring is no work
    if isinstance(stmt, _WORK):
        return True
    if isinstance(stmt, ast.If) and ast.unparse(stmt.test).replace("'", '"') in _MAIN:
        return False
    if isinstance(stmt, (ast.If, ast.Try)):  # `if TYPE_CHECKING:`, `try: import x`: by what they hold
        inner = [*stmt.body, *stmt.orelse, *getattr(stmt, "finalbody", ())]
        inner += [s for h in getattr(stmt, "handlers", ()) for s in h.body]
        return any(_works(s, defined) for s in inner)
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
        calls = [n.func for n in ast.walk(stmt.value) if isinstance(n, ast.Call)]
        return any(isinstance(f, ast.Name) and f.id in defined for f in calls)
    return False


@functools.lru_cache(maxsize=256)
def _parsed_names(path: str, mtime: int, size: int) -> tuple[frozenset[str], bool, str, tuple[tuple[int, str], ...]]:
    """The names the file binds at top level, whether it does work at import,
    its text's digest, and the modules it imports ((level, name): `from .
    import h` as (1, "h"), `from a import b` as (0, "a") and (0, "a.b"))."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError:
        return frozenset(), False, "", ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):  # by its text still: fixed, it is a change
        return frozenset(), False, hash_tokens([text.decode("utf-8", "replace")]), ()
    defined = {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    works = any(_works(s, defined) for s in tree.body)
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in stmt.names)
        else:  # `run = make()`, `if X: def run(...)`, `try: ... except`: every name stored
            names.update(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
            names.update(d.name for d in ast.walk(stmt) if isinstance(d, (ast.FunctionDef, ast.ClassDef)))
    imported: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported += [(0, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            head = node.module or ""
            imported += [(node.level, h) for h in [head] if h]
            imported += [(node.level, f"{head}.{a.name}".lstrip(".")) for a in node.names if a.name != "*"]
    digest = hash_tokens([text.decode("utf-8", "replace")])
    return frozenset(names), works, digest, tuple(dict.fromkeys(imported))


def _resolved(name: str, package: str) -> str:
    try:
        return importlib.util.resolve_name(name, package)
    except (ImportError, ValueError):  # beyond the top-level package
        return ""
