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
from typing import Any, TypeAlias

from .bindings import binding_statements
from .canon import from_imports
from .imports import absolute, head_module, import_head, untold_import, user_module
from .nodes import walk
from .passes import per_pass
from .reach import _MISSING

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
    "memmap mmap fromregex File ZipFile from_pretrained Dynaconf imread loadmat from_file from_pyfile "
    "from_envvar from_prefixed_env get_template".split()
)
# `read_sql`, `open_dataset`, `load_dataset`, `load_workbook`, `load_model`.
_READ_PREFIXES = ("read_", "open_", "load_")
# Attributes read off a call's result that are a tool's output:
# `subprocess.run(cmd, capture_output=True).stdout`.
_OUTPUT = frozenset({"stdout", "stderr"})
# Library classes whose instances read the environment (and `.env` files)
# as they are made: pydantic-settings' `Settings()` of a `BaseSettings`.
_SETTINGS = frozenset({"BaseSettings"})
_DEPTH = 4  # statements followed through the names they read
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def reads_outside(
    found: list[ast.AST],
    namespace: Mapping[str, Any],
    checked_file: str | None,
    name: str | None = None,
    imported: Mapping[str, Any] | None = None,
) -> bool:
    """Whether one of `found` (a global's statements, binding `name` when
    given), or a statement of the module binding a name they read, in turn,
    or the body of a function they call (of the module, or of another
    module of the user's), reads the environment, the command line or a
    file. Not a function
    among `found` (one that changes the global when a run calls it: what a
    step appends to is the program's state). `imported`: what the import
    statements of the function `found` are in bind (`import setup;
    setup.configure()` in a workflow's body), for the calls they name."""
    seen: set[tuple[int, str | None]] = set()
    todo = [(s, 0, namespace, name) for s in found]
    while todo:
        stmt, depth, names, bound = todo.pop()
        if (id(stmt), bound) in seen or isinstance(stmt, _DEFS):
            continue
        seen.add((id(stmt), bound))
        checked = checked_file if names is namespace else None
        marked, read, called = _scan(stmt)
        if marked or any(_called_reads_outside(".".join(n), names, checked) for n in called):
            return True
        if imported and names is namespace and any(
            n[0] in imported and _called_reads_outside(".".join(n), imported, None) for n in called
        ):
            return True
        if depth < _DEPTH:
            for r in read:
                todo += [(s, depth + 1, names, r) for s in binding_statements(r, names, checked) or []]
            for home, attr in imported_from(stmt, names, bound):  # `from settings import CFG`: settings' statements
                todo += [(s, depth + 1, vars(home), attr) for s in binding_statements(attr, vars(home)) or []]
    return False


def imported_from(
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


@per_pass  # the same calls recur in statement after statement a pass follows
def _called_reads_outside(dotted: str, namespace: Mapping[str, Any], checked_file: str | None) -> bool:
    """`_calls_outside` of the call `dotted` names (its chain joined by dots)."""
    return _calls_outside(tuple(dotted.split(".")), namespace, checked_file)


def _calls_outside(
    chain: tuple[str, ...],
    namespace: Mapping[str, Any],
    checked_file: str | None,
    depth: int = 0,
    seen: set[int] | None = None,
    owner: ast.ClassDef | None = None,
) -> bool:
    """Whether the function the call `chain` names reads the environment or
    a file in its own body (`load_config(path)` opening it), or in the body
    of a function of the user's it calls in turn, to `_DEPTH` calls
    (`load_config()` calling a `_read(path)` that opens it, a class method
    `from_file` calling `cls._read(path)`): one of the module's, or one of
    another module of the user's that it imported (`from loader import
    load_config`, `loader.load_config(path)`). Not a step or workflow (a
    run reads files as it runs)."""
    fn = _member(namespace, chain)
    if isinstance(fn, type) and any(c.__name__ in _SETTINGS for c in fn.__mro__):
        return True
    seen = set() if seen is None else seen
    for stmt, names, checked, home in _defs(chain, fn, namespace, checked_file, owner):
        if id(stmt) in seen:
            continue
        seen.add(id(stmt))
        marked, _, called = _scan(stmt)
        if marked or (
            depth < _DEPTH and any(_calls_outside(c, names, checked, depth + 1, seen, home) for c in called)
        ):
            return True
    inherited = _inherited(chain, fn, namespace, checked_file) if depth < _DEPTH else []
    return any(_calls_outside(c, names, checked, depth + 1, seen) for c, names, checked in inherited)


def _inherited(
    chain: tuple[str, ...], fn: object, namespace: Mapping[str, Any], checked_file: str | None
) -> list[tuple[tuple[str, ...], Mapping[str, Any], str | None]]:
    """What the call `chain` runs that a base class of the user's defines,
    as calls of that base in its own module: `App()` runs the `__init__`
    of `class App(Settings)`'s base, `App.from_env()` a class method of it;
    their statements are not in `App`'s (a hand-rolled settings base
    reading `os.environ` made `W = App()` count by its text alone)."""
    cls: object = fn
    member: tuple[str, ...] = ()
    if not isinstance(fn, type):  # `App.from_env`, `settings.App.from_env`
        cls, member = (_member(namespace, chain[:-1]) if len(chain) > 1 else None), chain[-1:]
    if not isinstance(cls, type):
        return []
    found: list[tuple[tuple[str, ...], Mapping[str, Any], str | None]] = []
    for base in cls.__mro__[1:]:
        home = sys.modules.get(base.__module__)
        if home is not None and user_module(home) and vars(home).get(base.__name__) is base:
            names = vars(home)
            found.append(((base.__name__, *member), names, checked_file if names is namespace else None))
    return found


# A `def` or `class` statement a call runs, the namespace its names are
# read in, the file checked for it, and the class it is in (or is).
_Def: TypeAlias = "tuple[ast.AST, Mapping[str, Any], str | None, ast.ClassDef | None]"


def _defs(
    chain: tuple[str, ...],
    fn: object,
    namespace: Mapping[str, Any],
    checked_file: str | None,
    owner: ast.ClassDef | None,
) -> list[_Def]:
    """The `def` (or `class`) statements the call `chain` runs, none of a
    step or workflow: the module's (`load()`, `Model()`, `Model.load()`),
    another of the user's modules' (imported), or, inside a class, its own
    (`cls._read()`, `self._read()`, `cls()`)."""
    if owner is not None and chain[0] in ("self", "cls"):
        found: list[ast.AST] = [owner] if len(chain) == 1 else _methods([owner], chain)
        return [(s, namespace, checked_file, owner) for s in found]
    bound = binding_statements(chain[0], namespace, checked_file) or [] if len(chain) <= 2 else []
    defs: list[_Def] = [(s, namespace, checked_file, c) for s, c in _runs(bound, chain)]
    # One of another module of the user's: `load_config()` or `Model.load()` imported, or
    # named through its module (`loader.load_config()`, `loader.Model.load()`: past `loader`).
    at = 0
    while at < len(chain) - 1 and isinstance(_member(namespace, chain[: at + 1]), types.ModuleType):
        at += 1
    first, rest = _member(namespace, chain[: at + 1]), chain[at:]
    head = first if len(rest) == 2 and isinstance(first, type) else fn
    module = sys.modules.get(getattr(head, "__module__", None) or "")
    if not isinstance(head, (types.FunctionType, type)) or module is None or vars(module) is namespace:
        return defs
    if user_module(module) and getattr(head, "__globals__", vars(module)) is vars(module):
        theirs = [s for s in binding_statements(head.__name__, vars(module)) or [] if _named(s, head.__name__)]
        defs += [(s, vars(module), None, c) for s, c in _runs(theirs, (head.__name__, *rest[1:]))]
    return defs


def _named(stmt: ast.AST, name: str) -> bool:
    return isinstance(stmt, _DEFS) and stmt.name == name


def _runs(bound: list[ast.AST], chain: tuple[str, ...]) -> list[tuple[ast.AST, ast.ClassDef | None]]:
    """Of a name's binding statements, what the call `chain` runs, with the
    class it is in: the `def` or `class` itself (`load()`, `Model()`), or,
    for `Model.load()`, the class's method of that name."""
    if len(chain) == 1:
        return [(s, s if isinstance(s, ast.ClassDef) else None) for s in bound
                if isinstance(s, _DEFS) and not _durable(s)]  # fmt: skip
    classes = [c for c in bound if isinstance(c, ast.ClassDef)]
    return [(d, c) for c in classes for d in _methods([c], chain)]


def _methods(classes: list[ast.ClassDef], chain: tuple[str, ...]) -> list[ast.AST]:
    """The methods named `chain[1]` of `classes` (not steps), when `chain` is `X.name`."""
    if len(chain) != 2:
        return []
    return [d for c in classes for d in c.body
            if isinstance(d, _DEFS[:2]) and d.name == chain[1] and not _durable(d)]  # fmt: skip


def _member(namespace: Mapping[str, Any], chain: tuple[str, ...]) -> object:
    """What `a.b.c` names, read as stored: modules' dicts only, no
    attribute lookup run (a module `__getattr__`, a property)."""
    value = head_module(chain[0])  # `importlib.import_module("p.setup").setup`
    value = namespace.get(chain[0]) if value is _MISSING else value
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
            # `import_module(name).setup()`: any function of the user's, one reading the environment too
            marked |= name in _READS or name.startswith(_READ_PREFIXES) or untold_import(func)
            # A function handed to the call runs too: `field(default_factory=env_k)`,
            # `partial(env_int, "K")`, `sorted(xs, key=score)` (a value named so follows nothing).
            for part in (func, *node.args, *(k.value for k in node.keywords)):
                if (chain := _chain(part)) is not None:
                    called.add(chain)
    found = (marked, frozenset(read), frozenset(called))
    _scanned[id(stmt)] = (stmt, *found)
    return found


def _chain(node: ast.AST) -> tuple[str, ...] | None:
    """`f` as ("f",), `loader.load_config` as ("loader", "load_config"),
    `import_module("loader").load_config` as (`import_head`, "load_config")."""
    if isinstance(node, ast.Name):
        return (node.id,)
    if (imported := import_head(node)) is not None:
        return (imported,)
    if isinstance(node, ast.Attribute) and (head := _chain(node.value)) is not None:
        return (*head, node.attr)
    return None
