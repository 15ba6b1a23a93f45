"""The module-level statements that set a library's own state for what
they do: `random.seed(1)`, `seed(1)` of a `from random import seed`,
`np.random.seed(0)`, `torch.backends.cudnn.deterministic = True`. A name
the module imports from that library (`from random import randint`, `from
numpy.random import rand`) counts by them too: its value is the library's
(a bound method of random's hidden generator), whose state they set, so
counted by its import statement alone an edit of the seed replayed the
draw made with the old one.

Pure standard library."""

from __future__ import annotations

import ast
import re
import types
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from ..errors import ConfigurationError
from .analysis import WHERE
from .atimport import _named_setter, _outside_scopes, run_at_import
from .bindings import _body, _cells_of, binding_statements, module_statements
from .canon import node_hash
from .imports import body_imports, import_user_module
from .inplace import units
from .loaded import EachModule, Users, loaded_state
from .reach import module_label
from .source import current_text, parse, rewritten_by_pytest, source_of
from .values import hash_tokens
from .witness import witnessed


def library_parts(namespace: Mapping[str, Any], modules: Iterable[str]) -> dict[str, str]:
    """For the libraries `modules` (a function's `from random import randint`,
    `import numpy as np` in its body too), the statements of the module
    whose namespace is `namespace` that set their state, as parts of a
    fingerprint ("global random state changed"). None for the user's own
    modules: their statements count already."""
    parts = {}
    for module in dict.fromkeys(modules):
        if module and not isinstance(witnessed(import_user_module, module), types.ModuleType):
            if changed := _anywhere(namespace, module):
                parts[f"global:{module} state"] = hash_tokens(changed)
                if setters := _setters(namespace, module):
                    parts[f"{WHERE}{module} state"] = setters
    return parts


def _setters(namespace: Mapping[str, Any], module: str) -> str:
    """The other loaded modules whose statements `_loaded` counted, for a
    refusal to name (a script that seeds, resumed by `durable run`)."""
    kept = _LOADED.get((id(loaded_state()), module))
    own = namespace.get("__name__")
    return ", ".join(sorted({module_label(n) for n in kept[2] if n != own})) if kept else ""


def _anywhere(namespace: Mapping[str, Any], module: str) -> list[str]:
    """What `library_state` finds in the module of `namespace` and in every
    module of the user's loaded (the script seeds, a helper module
    draws): the library's state is what every one of them that ran set,
    in no order (modules load in another order in another process). One
    edited after import is refused when its text sets that library now, as
    when it changes a global a step reads (`elsewhere`), and passed over
    when not. The loaded modules' are worked out once per set of them
    (`loaded_state`) and library, not for each function reading it."""
    if module.partition(".")[0] == "durable":  # as `library_state` tells, before a module is read
        return []
    found = _of_module(namespace, module, mine=True)
    others: list[str] = witnessed(_loaded, witnessed(loaded_state), module)
    return found + others


def _loaded(users: Users, module: str) -> list[str]:
    """Not witnessed call by call (a memo check asked each module's file
    and names again): by the set of modules, which a reload changes. From
    one set to the next, a module's own answer is kept while it is shown
    unchanged (`EachModule`): a module imported meanwhile is looked into,
    not every one loaded (collecting a test suite: a third of its time)."""
    kept = _LOADED.get((id(users), module))
    if kept is None or kept[0] is not users:
        if len(_LOADED) >= 256:
            _LOADED.clear()
        found = _OTHERS.answers(users, module)
        hashes = sorted(h for some in found for h in some)
        names = [m.__name__ for m, some in zip(users[1], found, strict=True) if some]
        kept = _LOADED[(id(users), module)] = (users, hashes, names)
    return kept[1]


# (id of a `loaded_state`, a library) -> (that state, the hashes its modules' statements
# setting it give, the names of those modules)
_LOADED: dict[tuple[int, str], tuple[object, list[str], list[str]]] = {}


def _kept_other(module: types.ModuleType, library: str) -> list[str]:
    return _other(vars(module), library)


# What each loaded module sets of a library, kept while the module is unchanged.
_OTHERS: EachModule[list[str]] = EachModule(_kept_other)


def _other(space: Mapping[str, Any], module: str) -> list[str]:
    """Another module's text is looked into before it is checked against its
    running code: that check compiles the whole module (a test module's
    with pytest's assertion rewriting too, ~40 ms) and most modules set no
    library's state. The answer is the same: an edited one whose text now
    sets none is passed over by `_of_module` as well."""
    filename = space.get("__file__")
    if _cell_statements(space) is None and isinstance(filename, str):
        src = source_of(filename, space)
        if module.partition(".")[0] not in src.text or src.tree is None:  # no import of it
            return []
        if not any(_sets_for_all(s, module) for s in _state_in(tuple(src.tree.body), space, module)):
            return []
    return _of_module(space, module, mine=False)


def _of_module(space: Mapping[str, Any], module: str, mine: bool) -> list[str]:
    """The hashes of what the module whose namespace is `space` sets of the
    library: all of it in the step's own module (`mine`); of another, what
    it sets for everyone (`_FOR_ALL`, an attribute it sets), not each call
    of it, which made a fingerprint hang on which modules a process had
    loaded (a test module's `os.environ["K"] = v` or `sys.path.insert(...)`
    at import). A module whose text does not compile to its running code
    (edited after import, or a decorator such as hypothesis's `@given`
    making code of its own there) is refused only when its text sets the
    library now (its other statements are no state of the library's), and
    a test module pytest ran not even then (`elsewhere` trusts it too)."""
    try:
        return [_hash(s, space, mine) for s in library_state(space, module) if mine or _sets_for_all(s, module)]
    except ConfigurationError:
        now = parse(current_text(str(space.get("__file__")), space)).tree
        body = tuple(now.body) if now is not None else ()
        setting = [s for s in _state_in(body, space, module) if mine or _sets_for_all(s, module)]
        if setting and not rewritten_by_pytest(space):  # a test module's text is what pytest ran
            raise
        return [_hash(s, space, mine) for s in setting]


def _hash(stmt: ast.AST, space: Mapping[str, Any], mine: bool) -> str:
    """A statement setting the library's state; in another module with the
    statements binding that module's globals it reads (`random.seed(SEED)`
    in `config.py`, `SEED = 2` now): in the step's own module those count
    as globals its statements read, elsewhere nothing else counted them.
    By their text, as the module's kept answers are (`_OTHERS`)."""
    if mine:
        return node_hash(stmt)
    names = sorted({n.id for n in _outside_scopes(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)})
    bound = [node_hash(b) for n in names if n in space for b in _binding(n, space)]
    return hash_tokens([node_hash(stmt), *bound]) if bound else node_hash(stmt)


def _binding(name: str, space: Mapping[str, Any]) -> list[ast.AST]:
    """The statements binding `name` there; none when its text is not the
    code that ran (`_of_module` tells that case: the statement as it reads now)."""
    try:
        return binding_statements(name, space) or []
    except ConfigurationError:
        return []


def body_library_parts(nodes: tuple[ast.AST, ...], namespace: Mapping[str, Any]) -> dict[str, str]:
    """`library_parts` of the libraries a function imports in its body."""
    package = str(namespace.get("__package__") or "")
    return library_parts(namespace, (module for _, module, _ in body_imports(nodes, package)))


def library_state(namespace: Mapping[str, Any], module: str) -> list[ast.AST]:
    """The statements of the module whose namespace is `namespace` that
    call a function of the package `module` is in, or set an attribute of
    it, for what that does (a statement of their own, in a module-level
    `if`, `for`, `try` or `with` too): none in a function or class, and no
    call whose value the statement keeps (`RNG = np.random.default_rng(0)`
    counts as any global's statement)."""
    if module.partition(".")[0] == "durable":  # `durable.configure()`: how, not what
        return []
    # A notebook's cells (`seed(1)` in one, the step in another), else the module's file.
    found = _cell_statements(namespace)
    found = module_statements(namespace) if found is None else found
    return _state_in(tuple(found or ()), namespace, module)


def _cell_statements(namespace: Mapping[str, Any]) -> list[ast.AST] | None:
    """In IPython, the statements of the cells run so far, each text once (a
    notebook's module has no file to read); None elsewhere."""
    cells = witnessed(_cells_of, namespace)[0]
    if cells is None:
        return None
    return [s for text in dict.fromkeys(t for t in cells if isinstance(t, str)) for s in _body(text)]


def _state_in(body: tuple[ast.AST, ...], namespace: Mapping[str, Any], module: str) -> list[ast.AST]:
    top = module.partition(".")[0]
    names = _imported(body, top)
    modules = frozenset(n for n in names if isinstance(witnessed(namespace.get, n), types.ModuleType))
    return [*_setting(body, names, modules), *_run_at_import(body, top, names, modules)]


@lru_cache(maxsize=4096)
def _run_at_import(
    body: tuple[ast.AST, ...], top: str, names: frozenset[str], modules: frozenset[str]
) -> tuple[ast.AST, ...]:
    """The statements setting the library's state in the module's functions
    that a module-level statement calls (`def main(): random.seed(1)` then
    `main()`, under `if __name__ == "__main__":` too), and in those they
    call in turn: they ran at import as the module's own statements do.
    The library imported in the function (`import random` there) too.
    Only a store into the library or a call whose name says it sets
    something (`_SETTERS`): a script's `main()` calls it for much else
    (`json.dump(out, f)`, `os.makedirs(d)`), and each edit of those would
    refuse every step reading that library."""
    found: list[ast.AST] = []
    for inner in run_at_import(body):
        local = _imported(inner, top)
        bound = frozenset(a.asname or a.name.partition(".")[0] for s in inner for n in _outside_scopes(s)
                          if isinstance(n, ast.Import) for a in n.names)  # fmt: skip
        found += [s for s in _setting(inner, names | local, modules | (local & bound)) if _named_setter(s)]
    return tuple(found)



@lru_cache(maxsize=4096)  # asked for each library each function of the module imports
def _imported(body: tuple[ast.AST, ...], top: str) -> frozenset[str]:
    return frozenset(name for library, name in _imports_in(body) if library == top)


@lru_cache(maxsize=4096)  # the statements walked once, not once for each library
def _imports_in(body: tuple[ast.AST, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((top, name) for stmt in body for top, name in _imported_from(stmt))


@lru_cache(maxsize=4096)
def _setting(body: tuple[ast.AST, ...], names: frozenset[str], modules: frozenset[str]) -> tuple[ast.AST, ...]:
    if not names:
        return ()
    return tuple(s for s in units(list(body)) if any(_sets(node, names, modules) for node in _outside_scopes(s)))


def _imported_from(stmt: ast.AST) -> Iterator[tuple[str, str]]:
    """(package, name) for each name a module-level import binds (`import numpy as np`: ("numpy", "np"))."""
    for node in _outside_scopes(stmt):
        if isinstance(node, ast.Import):
            yield from ((a.name.partition(".")[0], a.asname or a.name.partition(".")[0]) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            top = (node.module or "").partition(".")[0]
            yield from ((top, a.asname or a.name) for a in node.names if a.name != "*")


def _sets(node: ast.AST, names: frozenset[str], modules: frozenset[str]) -> bool:
    """A call of a function of the library (`random.seed(1)`, `seed(1)`), not
    a method of what one returns (`Path("out").mkdir()`), or a store into
    it (`getcontext().prec = 5`)."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return func.id in names if isinstance(func, ast.Name) else _root(func) in modules and _chain(func)
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, (ast.Attribute, ast.Subscript)) and _root(t) in names for t in targets)
    return False


# The functions that set a library's state for every module using it:
# its generator's seed or state, a locale, a context, a default, determinism
# (narrower than `_SETTERS`: another module's `logging.basicConfig()` or
# `sys.setrecursionlimit()` is no state a step draws from).
_FOR_ALL = re.compile(r"seed|setstate|set_state|rng_state|setlocale|setcontext|set_default|deterministic")


def _sets_for_all(stmt: ast.AST, module: str) -> bool:
    """Whether `stmt` (one `library_state` found for `module`) calls a
    setter of `_FOR_ALL` or sets an attribute of the library
    (`torch.backends.cudnn.deterministic = True`, `getcontext().prec = 5`),
    not an item (`os.environ[k] = v`) nor the process's plumbing in `os` or
    `sys` (`sys.dont_write_bytecode = False` in a conftest)."""
    stores = module.partition(".")[0] not in _PLUMBING
    for node in _outside_scopes(stmt):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if _FOR_ALL.search(name):
                return True
        elif stores and isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            return True
    return False


_PLUMBING = frozenset({"os", "sys"})


def _root(node: ast.AST) -> str | None:
    """`np` of `np.random.seed`, `torch` of `torch.backends.cudnn.deterministic`."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _chain(node: ast.AST) -> bool:
    """`np.random.seed`: names through attributes alone, no call on the way."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)
