"""Modules a function is given by name in its arguments (`_core.named`):
`import_module(module)`, `pkgutil.resolve_name(entrypoint)`,
`locate(cfg["_target_"])`, `import_module(f"{package}.{node}")`, a loader
of the user's called with a parameter (`loader.load(kind)`). The code
names no module there, nor does the data it reads (`lookups`): the
strings of the call's arguments do. A lookup by a constant
(`import_module("json")`) is no such function: `lookups` counts what the
constant names, and a step taking many strings to work on (texts to
embed) is left alone.

Pure standard library."""

from __future__ import annotations

import ast
import hashlib
import os
import types
from collections.abc import Mapping
from types import SimpleNamespace

from .entrypoints import ENTRIES
from .entrypoints import ENTRY as _ENTRY
from .entrypoints import entry_values as _entry_values
from .imports import user_class
from .lookups import (
    _FINDERS,
    _data_texts,
    _finds_modules,
    _helper_finds,
    attribute_modules,
    data_strings,
)
from .modfiles import UNTOLD
from .nodes import walk
from .reach import code_objects
from .source import find_definitions, source_of

_Named = tuple[tuple[types.ModuleType | None, str, object], ...]


def finds_by_name(fn: types.FunctionType) -> bool:
    """Whether `fn` looks modules up by a name (or loads one from a path,
    `_BY_PATH`) that is no constant of its code, itself or through a
    function of the user's it names; a function
    whose source cannot be read, and that names a finder, may (fail closed)."""
    code, globs = fn.__code__, fn.__globals__
    finders = _finders(code, globs)
    if _ENTRY in finders:  # the name it selects, among a constant group's, is data (fail closed)
        return True
    if not finders:
        return False
    nodes = find_definitions(code, source_of(code.co_filename, globs))
    return not nodes or any(_given(node, finders) for top in nodes for node in walk(top))


def _finders(code: types.CodeType, globs: Mapping[str, object]) -> set[str]:
    """The names by which `code` may look modules up (`_ENTRY` among them when it does so by entry point)."""
    names = {n for co in code_objects(code) for n in co.co_names}
    finders = {n for n in names if n in _FINDERS or n in _BY_PATH or _finds_modules((n,), globs) or _helper_finds(globs.get(n))}
    if "modules" in names and "sys" in names:
        finders.add("modules")
    return finders | ({_ENTRY} if not ENTRIES.isdisjoint(names) else set())


def given_parameters(fn: types.FunctionType) -> frozenset[str] | None:
    """The parameters of `fn` (a function looking modules up by name) whose
    values may reach a name it looks up: named in a finder's arguments
    (`import_module("handlers_" + kind)`: `kind`), or in what binds or
    changes a name that does, on and on (`mod = f"{pkg}.{kind}"`,
    `parts.append(label)`, `for m in mods`); None, all of them, where that
    is not told: its source unread, a finder not called where it is named
    (`map(import_module, mods)`), an entry point, a read of its variables
    unnamed (`locals()`). A string among the others (`out="report"`, a
    label) names no module it runs."""
    code, globs = fn.__code__, fn.__globals__
    finders = _finders(code, globs)
    nodes = find_definitions(code, source_of(code.co_filename, globs))
    if _ENTRY in finders or len(nodes) != 1 or not isinstance(nodes[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    top, flows = nodes[0], set()
    parents = {id(c): p for p in walk(top) for c in ast.iter_child_nodes(p)}
    for each in walk(top):
        node: ast.AST | None = each
        name = each.id if isinstance(each, ast.Name) else each.attr if isinstance(each, ast.Attribute) else ""
        if name in _UNNAMED:
            return None
        if name not in finders:
            continue
        above = parents.get(id(node))
        if name == "modules" and isinstance(above, ast.Attribute) and above.attr == "get":  # `sys.modules.get(name)`
            above, node = parents.get(id(above)), above
        if isinstance(above, ast.Subscript) and name == "modules":  # `sys.modules[name]`
            flows |= _names_in(above.slice)
        elif isinstance(above, ast.Call) and above.func is node:
            flows |= {n for a in (*above.args, *(k.value for k in above.keywords)) for n in _names_in(a)}
        elif not (isinstance(above, ast.Attribute) and above.value is node and name != "modules"):
            return None  # handed on, iterated over (`sys.modules.items()`): not told; `importlib.import_module`: its parent says
    while True:
        more = set(flows)
        for node in walk(top):
            for targets, values in _bindings(node):
                if any(_names_in(t) & flows for t in targets):
                    more |= {n for v in values for n in _names_in(v)}
        if more == flows:
            break
        flows = more
    args = top.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a is not None}
    return frozenset(flows & params)


_UNNAMED = frozenset({"locals", "vars", "eval", "exec", "currentframe", "_getframe", "f_locals"})


def _names_in(node: ast.AST | None) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, ast.Name)} if node is not None else set()


def _bindings(node: ast.AST) -> list[tuple[list[ast.AST], list[ast.AST]]]:
    """What `node` binds or changes, with what it does so from: an
    assignment's targets and value, a loop's or comprehension's target and
    iterable, a `with`'s names and context, and a call changing what it is
    called on or handed (`parts.append(label)`: all of its names both ways)."""
    if isinstance(node, ast.Assign):
        return [(list(node.targets), [node.value])]
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
        return [([node.target], [node.value] if node.value is not None else [])]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [([node.target], [node.iter])]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [([node.optional_vars], [node.context_expr])]
    if isinstance(node, ast.Call):
        return [([node], [node])]
    return []


def _given(node: ast.AST, finders: set[str]) -> bool:
    """A call of a finder (or `sys.modules[...]`) with a name not spelled as a constant."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
        return node.value.attr in finders and not _constant(node.slice)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if called == "get" and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute):
        called = func.value.attr  # `sys.modules.get(name)`
    if called not in finders:
        return False
    return not all(_constant(a) for a in [*node.args, *(k.value for k in node.keywords)])


def _constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant)


def argument_modules(values: object, entries: bool | frozenset[str] = False) -> _Named:
    """The modules of the user's that the strings in `values` (a call's
    arguments, as plain data) name, as `lookups.attribute_modules` finds
    them for a function that looks modules up: `"tools"`,
    `"tools:search"`, `"plugins.search"`, and with `entries` (`finds_entries`)
    an entry point's name (`"search"`, declared `search = tools:search`),
    of the groups `entries` names when it names them (`entry_groups`);
    (None, "", UNTOLD) among them when there were too many strings to look
    through (fail closed)."""
    data = _strings(values)
    dists: tuple[tuple[None, str, object], ...] = ()
    if entries:
        loads, dists = _entry_values(data, entries if isinstance(entries, frozenset) else None)
        data = (*data, *loads)
    found = (*attribute_modules(_data_texts(data, True)), *_source_files(data), *dists)
    return (*found, (None, "", UNTOLD)) if UNTOLD in data else found


# Loaders of a module from a file's path (`spec_from_file_location(name, path)` then
# `exec_module`, `runpy.run_path(path)`): the code that runs is the file's text.
_BY_PATH = frozenset({"spec_from_file_location", "run_path", "SourceFileLoader"})


def _source_files(data: tuple[str, ...]) -> tuple[tuple[None, str, object], ...]:
    """(None, path, its text's digest) for each string naming a Python
    source file (`"plugins/p.py"`), as for a module whose file does work at
    import: the plugin edited, the call is another."""
    found = []
    for text in dict.fromkeys(t for t in data if t.endswith((".py", ".pyw")) and len(t) < 4096):
        try:
            with open(text, "rb") as f:
                found.append((None, os.path.abspath(text), hashlib.sha256(f.read()).hexdigest()))
        except OSError:  # none there: what it would load is not that file's (none, or another path)
            continue
    return tuple(found)


def _strings(values: object, budget: int = 4096) -> tuple[str, ...]:
    """`lookups.data_strings`, through the attributes of the objects of the
    user's classes too (`self.module` of an agent whose method is the step,
    a configuration object's fields, slots included), of a namespace
    (`args.tool`) and the items of any mapping; past `budget` items, or a
    mapping that cannot give its items, `UNTOLD`."""
    seen: set[int] = set()

    def held(item: object) -> list[object] | None:
        if isinstance(item, os.PathLike):  # `Path("plugins/p.py")`
            return [str(os.fspath(item))]
        if id(item) in seen:
            return None  # an object holding itself, or held twice, is read once
        if isinstance(item, Mapping):  # a ChainMap, a read-only proxy, Hydra's DictConfig
            seen.add(id(item))
            try:
                return [*item.keys(), *item.values()]
            except Exception:  # a value it cannot give (an interpolation): unread, changed
                raise LookupError from None
        if user_class(type(item)) or _namespace(type(item)):
            seen.add(id(item))
            return _attributes(item)
        return None

    return data_strings(values, budget, held)


def _namespace(cls: type) -> bool:
    """A command line's `args` (argparse's, not imported for it) or a
    `SimpleNamespace` of settings: no class of the user's, but what it
    holds is theirs (`args.tool` names the module)."""
    return cls is SimpleNamespace or (cls.__name__ == "Namespace" and cls.__module__ == "argparse")


def _attributes(item: object) -> list[object]:
    """What an object holds in its `__dict__` and in the slots of its
    classes (a dataclass made with `slots=True` has no `__dict__`)."""
    held = getattr(item, "__dict__", None)
    found = list(held.values()) if isinstance(held, dict) else []
    for cls in type(item).__mro__:
        slots = vars(cls).get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots if isinstance(slots, (tuple, list)) else ():
            if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
                found.append(getattr(item, slot, None))
    return found
