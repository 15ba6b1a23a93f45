"""What a step writes or reads of its module's state through other names
than the state's own, for `stepstate`: a plain function of the module it
calls (`def mode(): return Cfg.mode`, `def registry(): return REG`), a
module-level name bound to it (`C = Cfg`), and a write no assignment to the
name shows (`setattr(Cfg, "mode", m)`, `globals()["MODE"] = m`,
`vars(settings)["MODE"] = m`, `registry()["k"] = v`). A replay cannot redo
such a write either; one whose name the text does not tell (`setattr(mod,
name, v)`, `globals()[key] = v`) may be of any name (`ANY`): fail closed.

Pure standard library. Found by the text, once per parsed module."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from .canon import is_our_decorator
from .changers import MUTATORS
from .heldobjects import held_methods
from .imports import absolute
from .kept import only_written
from .nodes import walk
from .othermodules import is_modules as _is_modules
from .othermodules import other_modules as _other_modules
from .written import calls_only, unused_calls

# A write of a module's name the text does not spell: any of them.
ANY = "*"
# How code reads a module's names by string (`globals()["MODE"]`): any of them.
UNNAMED = frozenset({"globals", "eval", "exec", "import_module"})
# And through the module's namespace rather than by name (`sys.modules[__name__].LOG`,
# `vars(sys.modules[k])["LOG"]`, a function's `__globals__`, a frame's `f_globals`).
_NAMESPACES = frozenset({"modules", "import_module", "__globals__", "f_globals"})
# The methods that only log into what they are called on (`LOG.append(x)`).
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BLOCKS = (ast.If, ast.Try, ast.With, ast.For, ast.While, *([ast.TryStar] if hasattr(ast, "TryStar") else []))
_SPACES = frozenset({"globals", "vars", "locals"})
_PARTS = frozenset({"get", "setdefault", "values", "items"})  # give a part, not a copy
_MODULES = frozenset({"modules", "import_module"})  # `sys.modules[k]`, `importlib.import_module(k)`
_Links = tuple[dict[str, frozenset[str]], dict[str, ast.AST]]
_LINKS: dict[int, tuple[ast.AST, _Links]] = {}


def links(tree: ast.AST) -> _Links:
    """For each module-level name, the names its binding reads: a plain
    function's body (not a step's or a workflow's, which counts for
    itself), an assignment's value (`C = Cfg`); and the plain functions by
    name."""
    seen = _LINKS.get(id(tree))
    if seen is not None and seen[0] is tree:
        return seen[1]
    found: dict[str, set[str]] = {}
    funcs: dict[str, ast.AST] = {}
    for stmt in _module_level(getattr(tree, "body", [])):
        if isinstance(stmt, _FUNCS) and not any(map(is_our_decorator, stmt.decorator_list)):
            funcs[stmt.name] = stmt
            found.setdefault(stmt.name, set()).update(_names(stmt))
        elif isinstance(stmt, ast.ClassDef):  # `Report.total()`: what its body and methods read
            kept = [n for n in stmt.body if not (isinstance(n, _FUNCS) and any(map(is_our_decorator, n.decorator_list)))]
            found.setdefault(stmt.name, set()).update(n for b in [*kept, *stmt.bases] for n in _names(b))
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in (t for t in targets if isinstance(t, ast.Name)):
                found.setdefault(target.id, set()).update(_names(stmt.value))
                if isinstance(stmt.value, ast.Lambda):  # `ADD = lambda x: LOG.append(x)`: a plain function
                    funcs[target.id] = stmt.value
    if len(_LINKS) > 256:
        _LINKS.clear()
    done = ({k: frozenset(v) for k, v in found.items()}, funcs)
    _LINKS[id(tree)] = (tree, done)
    return done


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements run at module level, in the blocks of an `if`, `try`,
    `with` or loop too (`except ImportError: def total(): ...`)."""
    found: list[ast.stmt] = []
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, _BLOCKS):
            for part in ("body", "orelse", "finalbody"):
                found += _module_level(getattr(stmt, part, []))
            for handler in getattr(stmt, "handlers", []):
                found += _module_level(handler.body)
    return found


def reached(names: frozenset[str], tree: ast.AST) -> frozenset[str]:
    """`names` with every name their module-level bindings read, on and on."""
    table = links(tree)[0]
    found, todo = set(names), list(names)
    while todo:
        for name in table.get(todo.pop(), ()):
            if name not in found:
                found.add(name)
                todo.append(name)
    return frozenset(found)


def helpers(defs: list[ast.AST], tree: ast.AST) -> list[ast.AST]:
    """The plain functions of the module `defs` call, on and on: where a
    step's write may be (`def set_mode(m): Cfg.mode = m`)."""
    funcs = links(tree)[1]
    named = reached(frozenset(n for d in defs for n in _names(d)), tree)
    return [funcs[n] for n in sorted(named & funcs.keys()) if not any(d is funcs[n] for d in defs)]


def methods(defs: list[ast.AST], tree: ast.AST) -> list[tuple[str, ast.AST]]:
    """The methods of the module's classes that are no step which `defs`
    call through the class's name (`Cfg.configure("fast")`): (the class's
    name, the method's `def`)."""
    classes = {c.name: c for c in getattr(tree, "body", ()) if isinstance(c, ast.ClassDef)}
    found: list[tuple[str, ast.AST]] = []
    for node in (n for d in defs for n in walk(d)):
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in classes:
            found += [
                (func.value.id, m) for m in classes[func.value.id].body
                if isinstance(m, _FUNCS) and m.name == func.attr and not any(map(is_our_decorator, m.decorator_list))
                and all(m is not f for _, f in found)
            ]  # fmt: skip
    return found


def local_names(defs: list[ast.AST]) -> frozenset[str]:
    """The names functions bind for themselves (parameters, assigned names
    they declare no `global`): a write into one (`out[k] = v`) is theirs."""
    found: set[str] = set()
    for d in defs:
        nodes = list(walk(d))
        declared = {n for g in nodes if isinstance(g, ast.Global) for n in g.names}
        found |= {a.arg for a in ast.walk(d.args) if isinstance(a, ast.arg)} if isinstance(d, (*_FUNCS, ast.Lambda)) else set()
        found |= {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - declared
    return frozenset(found)


def hidden_writes(
    defs: list[ast.AST], tree: ast.AST, selves: frozenset[str] = frozenset(), module: str = "", package: str = ""
) -> frozenset[str]:
    """The module-level names `defs` may write through a call rather than by
    name: `setattr(Cfg, ...)`, `vars(settings)[k] = v`, `globals()["MODE"] =
    v` (`ANY` for a key the text does not spell), `registry()[k] = v` (what
    `registry` reads); or through the module itself, taken out of
    `sys.modules` or imported by its name `module` (`sys.modules[__name__]
    .LOG.append(x)`, `me.LOG.append(x)` of `import flow as me`, at module
    level, whose names are `selves`, or in the function; `from . import flow
    as me` resolved from `package`)."""
    found: set[str] = set()
    selves |= _imported_as(defs, module, package)
    for node in (n for d in defs for n in walk(d)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
        ):
            if node.args:
                found |= _through(node.args[0], node.args[1:2], tree, whole=True)
            continue
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
        ):
            targets = [node.func]
        else:
            continue
        for target in targets:
            key: list[ast.expr] = []
            attr = ""  # the attribute of the last object passed: `LOG` of `me.LOG.append`
            while isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)):
                if isinstance(target, ast.Subscript) and _is_modules(target.value):
                    break  # `sys.modules[__name__].LOG`
                key = [target.slice] if isinstance(target, ast.Subscript) else []
                attr = target.attr if isinstance(target, ast.Attribute) else attr
                target = target.value
            if isinstance(target, ast.Call):
                found |= _through(target, key, tree, whole=False)
            elif isinstance(target, ast.Subscript) or (isinstance(target, ast.Name) and target.id in selves):
                found.add(attr or ANY)
    return frozenset(found)


def _imported_as(defs: list[ast.AST], module: str, package: str) -> frozenset[str]:
    """The names `defs` import the module `module` as (`import flow as me`,
    `from . import flow as me` in `package`)."""
    found: set[str] = set()
    for node in (n for d in defs for n in walk(d)) if module else ():
        if isinstance(node, ast.Import):
            found.update(a.asname or a.name.partition(".")[0] for a in node.names if a.name == module)
        elif isinstance(node, ast.ImportFrom) and (base := absolute(node.module or "", node.level, package)):
            found.update(a.asname or a.name for a in node.names if f"{base}.{a.name}" == module)
    return frozenset(found)


def _through(obj: ast.AST, key: list[ast.expr], tree: ast.AST, whole: bool) -> frozenset[str]:
    """The names a write into `obj` (at `key`, when it is a mapping of
    names) may change: a namespace (`globals()`, `vars(x)`, a module taken
    out of `sys.modules`), or what a call of a function of the module
    returns. `whole`: `obj` itself is written (`setattr(obj, ...)`)."""
    name = _spelled(key)
    if isinstance(obj, ast.Call):
        func = obj.func
        callee = (
            func.id
            if isinstance(func, ast.Name)
            else func.attr
            if isinstance(func, ast.Attribute)
            else ""
        )
        if callee in _SPACES:
            if obj.args and not whole:
                return _roots(obj.args[0])  # `vars(settings)[k]`: `settings`
            return frozenset({name or ANY}) if not whole else frozenset({ANY})
        if callee in _MODULES:
            return frozenset({name or ANY})
        if isinstance(func, ast.Name):
            return reached(frozenset({func.id}), tree)  # `registry()[k]`: what `registry` reads
        if isinstance(func, ast.Attribute) and callee in _PARTS:
            return _roots(func.value)  # `STATE.get(k)[j] = v`: a part of `STATE`
        return frozenset({ANY})
    if isinstance(obj, ast.Subscript) and _is_modules(obj.value):
        return frozenset({name or ANY})  # `setattr(sys.modules[__name__], "MODE", v)`
    return _roots(obj)


def _roots(node: ast.AST) -> frozenset[str]:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return frozenset({node.id}) if isinstance(node, ast.Name) else frozenset({ANY})


def _spelled(key: list[ast.expr]) -> str:
    first = key[0] if key else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""


def _names(node: ast.AST) -> set[str]:
    """The names `node` uses; "globals" for a read through a module's namespace."""
    found: set[str] = set()
    others = _other_modules(node)
    for n in walk(node):
        if id(n) in others:
            continue
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute) and n.attr in _NAMESPACES:
            found.add("globals")
    return found


def names_used(node: ast.AST) -> frozenset[str]:
    return frozenset(_names(node))


def aliases(names: frozenset[str], globs: Any) -> frozenset[str]:
    """The module-level names bound to the very object one of `names` is
    (`C = Cfg`: a write through either is a write of both)."""
    values = dict(globs or {})
    held = [
        values[n]
        for n in names
        if n in values and not isinstance(values[n], (str, int, float, bool))
    ]
    return frozenset(k for k, v in values.items() if any(v is h for h in held)) - names


def written_only(d: ast.AST, tree: ast.AST, written: frozenset[str], elsewhere: bool = False,
                 globs: Mapping[str, Any] | None = None) -> frozenset[str]:  # fmt: skip
    """The names among `written` that `d` and the plain functions of its module
    it reaches only write where they use them (`_count` appending to a list a
    step calls it to log in): no read. One reached otherwise (`C = Cfg`, a
    lambda bound at module level `TOTAL = lambda: sum(LOG)`) is read; with a
    read by string (`globals()["LOG"]`), every one is."""
    if elsewhere:  # another module's helper: told by its own text, not by `tree`'s functions
        # by the name it uses there: `_WARNED` of `helpers._WARNED` (`helperreads.qualified`)
        bare = {n: n.rpartition(".")[2] for n in written}
        only = only_written([d], frozenset(bare.values()), shown=True)
        return frozenset(n for n, b in bare.items() if b in only)
    reads: set[str] = set()
    writes: set[str] = set()
    funcs, plain = links(tree)[1], helpers([d], tree)
    called = methods([d, *plain], tree) + held_methods([d, *plain], globs or {})  # `Cfg.set(x)`, `SVC.go(x)`
    for node in [d, *plain, *(m for _, m in called)]:
        names = _names(node)
        if names & UNNAMED:
            return frozenset()
        used = names & written
        kept = only_written([node], written, shown=True)  # `print(sum(LOG))` reads none
        kept |= unused_calls(list(walk(node)), frozenset(used - kept), globs or {})  # `BAR.set_postfix(loss=x)`: none either
        kept |= calls_only(node, frozenset(used - kept), written, globs or {})  # `utils.warn_once(m)`: told there
        writes |= used & kept
        reads |= used - kept
        # What the other names it uses reach through no function looked at here
        # (a lambda, an assignment's value, a class used but by `Report.note(x)`) is read.
        seeds = names - written - _one_definition(names & funcs.keys(), tree) - _receivers(node, called)
        reads |= reached(frozenset(seeds), tree) & written
    return frozenset(writes - reads)


def _receivers(node: ast.AST, called: list[tuple[str, ast.AST]]) -> frozenset[str]:
    """The classes `node` names only to call a method looked at (`Report.note(x)`)."""
    looked = {(c, getattr(m, "name", "")) for c, m in called}
    named: dict[str, int] = {}
    for n in walk(node):
        if isinstance(n, ast.Name) and n.id in {c for c, _ in looked}:
            named[n.id] = named.get(n.id, 0) + 1
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name):
            if (n.func.value.id, n.func.attr) in looked:
                named[n.func.value.id] = named.get(n.func.value.id, 0) - 1
    return frozenset(c for c, count in named.items() if count == 0)


def _one_definition(names: set[str], tree: ast.AST) -> frozenset[str]:
    """Those of `names` whose one `def` (the last) is what their binding reads:
    one defined twice (`if`/`else`) reads what either reads."""
    table, funcs = links(tree)
    return frozenset(n for n in names if table.get(n, frozenset()) <= _names(funcs[n]))

