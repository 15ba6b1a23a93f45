"""Module-level statements whose value comes from outside the source: the
environment, the command line or a file (`ALPHA = float(os.environ["ALPHA"])`,
`ARGS = parser.parse_args()`, `CFG = json.load(f)`), directly, through a name they read that such a statement
binds, or through a function of the module they call that reads one.

Pure standard library. A global made so counts by its contents (`contents`):
its statements' text is the same whatever they read, so counted by it alone
a cached step was served the output of another value."""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Mapping
from typing import Any

from .bindings import binding_statements
from .canon import from_imports
from .imports import absolute, user_module
from .nodes import walk

# Names and attributes that read the environment or the command line
# (`sys.argv`, `sys.stdin`); calls that read a file, a folder's listing, a
# database's rows, standard input, the command line (argparse reads
# `sys.argv` unseen: `parser.parse_args()`) or a tool's output. Erring
# towards more only adds the contents to what counts.
_ENV = frozenset({"environ", "getenv", "getenvb", "argv", "orig_argv", "stdin"})
_READS = frozenset(
    "open read read_file read_text read_bytes load safe_load full_load read_csv read_json read_parquet "
    "read_excel read_pickle read_table loadtxt genfromtxt fromfile input parse_args parse_known_args "
    "parse_intermixed_args parse_known_intermixed_args listdir scandir walk glob iglob rglob iterdir "
    "fetchall fetchone fetchmany dotenv_values "
    # packaged data, a cursor iterated, a tool's output, parsed or mapped files, a model's folder
    "get_data execute check_output getoutput getstatusoutput communicate popen Popen parse iterparse "
    "memmap mmap fromregex File ZipFile from_pretrained Dynaconf".split()
)
# Attributes read off a call's result that are a tool's output:
# `subprocess.run(cmd, capture_output=True).stdout`.
_OUTPUT = frozenset({"stdout", "stderr"})
# Library classes whose instances read the environment (and `.env` files)
# as they are made: pydantic-settings' `Settings()` of a `BaseSettings`.
_SETTINGS = frozenset({"BaseSettings"})
_DEPTH = 4  # statements followed through the names they read
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def reads_outside(
    found: list[ast.AST], namespace: Mapping[str, Any], checked_file: str | None, name: str | None = None
) -> bool:
    """Whether one of `found` (a global's statements, binding `name` when
    given), or a statement of the module binding a name they read, in turn,
    or the body of a function they call (of the module, or of another
    module of the user's), reads the environment, the command line or a
    file. Not a function
    among `found` (one that changes the global when a run calls it: what a
    step appends to is the program's state)."""
    seen: set[tuple[int, str | None]] = set()
    todo = [(s, 0, namespace, name) for s in found]
    while todo:
        stmt, depth, names, bound = todo.pop()
        if (id(stmt), bound) in seen or isinstance(stmt, _DEFS):
            continue
        seen.add((id(stmt), bound))
        checked = checked_file if names is namespace else None
        marked, read, called = _scan(stmt)
        if marked or any(_calls_outside(n, names, checked) for n in called):
            return True
        if depth < _DEPTH:
            for r in read:
                todo += [(s, depth + 1, names, r) for s in binding_statements(r, names, checked) or []]
            for home, attr in _imported(stmt, names, bound):  # `from settings import CFG`: settings' statements
                todo += [(s, depth + 1, vars(home), attr) for s in binding_statements(attr, vars(home)) or []]
    return False


def _imported(
    stmt: ast.AST, namespace: Mapping[str, Any], name: str | None
) -> list[tuple[types.ModuleType, str]]:
    """The user's modules and names that the `from c import X` (or `*`)
    statement binds `name` from (any name it binds when None), loaded
    already (the statement ran): X's value was made by c's statements,
    which count as this module's own would (`settings.CFG`)."""
    package = str(namespace.get("__package__") or "")
    found = []
    for node in from_imports(stmt):  # also one inside `try:` or `if`
        home = sys.modules.get(absolute(node.module or "", node.level, package))
        if home is None or not user_module(home):
            continue
        for alias in node.names:
            if alias.name == "*" and name is not None:
                found.append((home, name))
            elif alias.name != "*" and name in (None, alias.asname or alias.name):
                found.append((home, alias.name))
    return found


def _calls_outside(
    chain: tuple[str, ...],
    namespace: Mapping[str, Any],
    checked_file: str | None,
    depth: int = 0,
    seen: set[int] | None = None,
) -> bool:
    """Whether the function the call `chain` names reads the environment or
    a file in its own body (`load_config(path)` opening it), or in the body
    of a function of the user's it calls in turn, to `_DEPTH` calls
    (`load_config()` calling a `_read(path)` that opens it): one of the
    module's, or one of another module of the user's that it imported
    (`from loader import load_config`, `loader.load_config(path)`). Not a
    step or workflow (a run reads files as it runs)."""
    fn = _member(namespace, chain)
    if isinstance(fn, type) and any(c.__name__ in _SETTINGS for c in fn.__mro__):
        return True
    seen = set() if seen is None else seen
    for stmt, names, checked in _defs(chain, fn, namespace, checked_file):
        if id(stmt) in seen:
            continue
        seen.add(id(stmt))
        marked, _, called = _scan(stmt)
        if marked or (depth < _DEPTH and any(_calls_outside(c, names, checked, depth + 1, seen) for c in called)):
            return True
    return False


def _defs(
    chain: tuple[str, ...], fn: object, namespace: Mapping[str, Any], checked_file: str | None
) -> list[tuple[ast.AST, Mapping[str, Any], str | None]]:
    """The `def` (or `class`) statements the call `chain` runs, none of a
    step or workflow, each with the namespace its names are read in."""
    found = binding_statements(chain[0], namespace, checked_file) or [] if len(chain) <= 2 else []
    # `Rate.from_env()`: a method of a class of the module, whose body reads it.
    found = found if len(chain) == 1 else [d for c in found if isinstance(c, ast.ClassDef) for d in c.body
                                           if isinstance(d, _DEFS[:2]) and d.name == chain[1]]  # fmt: skip
    defs: list[tuple[ast.AST, Mapping[str, Any], str | None]] = [
        (s, namespace, checked_file) for s in found if isinstance(s, _DEFS) and not _durable(s)
    ]
    if isinstance(fn, types.FunctionType) and fn.__globals__ is not namespace and _users(fn):
        theirs = binding_statements(fn.__name__, fn.__globals__) or []
        defs += [
            (s, fn.__globals__, None)
            for s in theirs
            if isinstance(s, _DEFS) and s.name == fn.__name__ and not _durable(s)
        ]
    return defs


def _users(fn: types.FunctionType) -> bool:
    module = sys.modules.get(fn.__module__ or "")
    return module is not None and vars(module) is fn.__globals__ and user_module(module)


def _member(namespace: Mapping[str, Any], chain: tuple[str, ...]) -> object:
    """What `a.b.c` names, read as stored: modules' dicts only, no
    attribute lookup run (a module `__getattr__`, a property)."""
    value = namespace.get(chain[0])
    for name in chain[1:]:
        if not isinstance(value, types.ModuleType):
            return None
        value = vars(value).get(name)
    return value


def _durable(stmt: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    """A step or workflow (`@durable.step`, `@workflow(...)`): what it reads
    as a run calls it is its own input, not how a global was made."""
    for deco in stmt.decorator_list:
        deco = deco.func if isinstance(deco, ast.Call) else deco
        if (deco.attr if isinstance(deco, ast.Attribute) else getattr(deco, "id", None)) in ("step", "workflow"):
            return True
    return False


# id(statement) -> (the statement, whether it reads outside, the names it
# reads, the names it calls)
_scanned: dict[int, tuple[ast.AST, bool, frozenset[str], frozenset[tuple[str, ...]]]] = {}


def _scan(stmt: ast.AST) -> tuple[bool, frozenset[str], frozenset[tuple[str, ...]]]:
    seen = _scanned.get(id(stmt))
    if seen is not None and seen[0] is stmt:
        return seen[1:]
    if len(_scanned) >= 4096:
        _scanned.clear()
    marked, read, called = False, set[str](), set[tuple[str, ...]]()
    for node in walk(stmt):
        if isinstance(node, ast.Name):
            marked |= node.id in _ENV
            if isinstance(node.ctx, ast.Load):
                read.add(node.id)
        elif isinstance(node, ast.Attribute):
            marked |= node.attr in _ENV or (node.attr in _OUTPUT and isinstance(node.value, ast.Call))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            marked |= name in _READS or name.startswith(("read_", "open_"))  # `read_sql`, `open_dataset`
            if (chain := _chain(func)) is not None:
                called.add(chain)
    found = (marked, frozenset(read), frozenset(called))
    _scanned[id(stmt)] = (stmt, *found)
    return found


def _chain(node: ast.AST) -> tuple[str, ...] | None:
    """`f` as ("f",), `loader.load_config` as ("loader", "load_config")."""
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute) and (head := _chain(node.value)) is not None:
        return (*head, node.attr)
    return None
