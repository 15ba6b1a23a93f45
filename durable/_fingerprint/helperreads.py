"""The helpers of the user's other modules that a step or workflow calls
(`helpers.describe()`, `describe()` imported from `helpers`), and those
they call in turn, as readers of the globals a step of its module writes
(`stepstate.state_written`): a helper there reading the same object
(`Cfg.mode`, `STATE["mode"]` of a `config` both import, by name or as
`config.STATE`) reads what a replay does not write again. Not followed, a
run resumed in a new process went on with the value the import left. And
as writers (`helper_writes`): such a helper a step calls writes what it
writes of the objects the step's module holds too (`helpers.log(x)`).

Pure standard library."""

from __future__ import annotations

import ast
import functools
import itertools
import sys
import types
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .changers import LOGS, MUTATORS
from .handedwrites import SCALARS as _SCALARS
from .handedwrites import handed_writes, resolved, user_function
from .heldobjects import definitions, mine, own_attributes
from .holds import held_callables
from .imports import user_class, user_module
from .localbound import bound_locals
from .nodes import walk
from .objectstate import object_writes
from .selffills import memo_only
from .source import find_definitions, runs_this_source, source_of
from .stepreach import local_names
from .written import written_in

_Def = tuple[ast.AST, frozenset[str], "str | None"]
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Past this many helpers, the rest is not looked at (a step's module calling
# into a large package; each is parsed once per process): it may read any.
_FOLLOWED = 256
# What a helper not looked at stands for: it reads every name written (fail closed).
_UNTOLD = ast.Module(body=[], type_ignores=[])


def helper_readers(defs: list[ast.AST], globs: Mapping[str, Any], written: frozenset[str]) -> list[_Def]:
    """The definitions of the other modules' helpers `defs` reach, each with
    the names among `written` (globals of `globs`) whose objects it reads."""
    if not written:
        return []
    found: list[_Def] = []
    for node, space in _reached(defs, globs):
        names = written if node is _UNTOLD else frozenset(_reads(node, space, globs, written))
        if names:
            found.append((node, names, None))
    return found


def helper_writes(
    defs: list[ast.AST], globs: Mapping[str, Any], logs: bool, caller: ast.AST | None = None
) -> frozenset[str]:
    """The globals of `globs` whose objects the other modules' helpers `defs`
    reach write (`helpers.log(x)` appending to the `LOG` of a `config` both
    import: `written.written_in`, `logs` as there). One not told (past the
    limit, its text not what runs), or writing a module's attribute
    (`config.LOG.append(x)`), may write any object its module holds. An
    object no global of `globs` holds (`_L` behind `from tally import add`)
    is named as that module's (`qualified`) unless it is a memo there that
    `caller` (the tree of `globs`'s module) changes no entry of."""
    found: set[str] = set()
    spaces: dict[int, Mapping[str, Any]] = {}
    untold = False
    for node, space in _reached(defs, globs):
        spaces.setdefault(id(space), space)
        if node is _UNTOLD:
            untold = True
            continue
        changed = written_in([node], logs, space) | (set() if logs else object_writes([node], space).keys())
        for name in changed - local_names([node]):  # with an object of yours a method changes: `_S.remember(x)`
            value = space.get(name)
            if isinstance(value, types.ModuleType):  # `store.M.append(x)`: the module, where no global shares it
                found |= _shared(globs, [vars(value)])
                found |= {qualified(space, name)} if space is not globs and user_module(value) else set()
            elif name in space:  # a number rebound there is its own: not one `globs` holds a copy of
                held = {k for k, v in globs.items() if v is value} if not isinstance(value, _SCALARS) else set()
                # Held by no name of the step's module (`_L` behind `from tally import add, total`):
                # named as its own module's, so that its value joins the record and readers are found.
                if not held and space is not globs and not _memo(space, name, caller):
                    # and a global holding its module (`import tally`: `tally._L` read there)
                    held = {qualified(space, name), *(k for k, v in globs.items() if _module_of(v, space))}
                found |= held
    if untold:
        found |= _shared(globs, [s for s in spaces.values() if s is not globs])
    for d in defs:  # handed through a local bound to it too (`xs = CFG["a"]`, then `add(xs, x)`)
        handed, bound = handed_writes(d, globs, logs) | _held_mutators(d, globs, logs), bound_locals(list(walk(d)))
        found |= {g for n in handed for g in (n, *bound.get(n, ()))} - local_names([d])
    return frozenset(found)


def _held_mutators(node: ast.AST, globs: Mapping[str, Any], logs: bool) -> set[str]:
    """The globals whose object a builtin method that changes it, held
    bound to it, writes when `node` names the holder (`add(x)` of `add =
    functools.partial(list.append, LOG)` or `add = LOG.append`): as
    `written_in` counts `LOG.append(x)`, a call through such a holder is
    the write, and a replay that skips it leaves the list the import did.
    So is one a dict, list, tuple or namespace holds (`OPS["add"](x)` of
    `OPS = {"add": LOG.append}`)."""
    methods = MUTATORS if logs else MUTATORS - LOGS
    found: set[str] = set()
    for sub in walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            for held in _held(globs.get(sub.id)):
                for target in (_mutated(held, methods), *_cells_written(held, logs)):
                    if target is not None and not isinstance(target, _FIXED):
                        found.update(k for k, v in list(globs.items()) if v is target)
    return found


def _cells_written(fn: object, logs: bool) -> list[object]:
    """What the cells of a closure of the user's hold that its code writes
    (`remember` of `REMEMBER = make(MEM)`, doing `mem.append(x)`): a global
    handed to the factory, which a call of the closure changes; every cell's
    where its code cannot be read."""
    if not (isinstance(fn, types.FunctionType) and fn.__closure__ and user_function(fn)):
        return []
    defs = definitions(fn)
    names = written_in(defs, logs) if defs else frozenset(fn.__code__.co_freevars)
    found = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=False):
        try:
            found += [cell.cell_contents] if name in names else []
        except ValueError:  # an empty cell: nothing there yet
            continue
    return found


def _held(value: object, depth: int = 0) -> Iterator[object]:
    """`value` and what the plain containers it holds hold, and the
    attributes of an object of yours (`AGENT.tools`), three levels down
    (the first 256 items of each: a large table of data holds no methods)."""
    yield value
    if depth < 3 and (type(value) in (dict, list, tuple, types.SimpleNamespace) or mine(value)):
        spaced = isinstance(value, types.SimpleNamespace) or mine(value)
        items: Iterable[object] = value.values() if isinstance(value, dict) else own_attributes(value).values() if spaced else value  # type: ignore[assignment]
        for item in list(itertools.islice(items, 256)):
            yield from _held(item, depth + 1)


def _mutated(value: object, methods: frozenset[str]) -> object:
    """The object `value` changes when called, if it is (a partial of) a
    builtin method among `methods` bound to one, else None."""
    for _ in range(8):  # partials of partials
        if not isinstance(value, functools.partial):
            break
        if isinstance(value.func, (types.MethodDescriptorType, types.WrapperDescriptorType)) and value.args:
            name = value.func.__name__  # `partial(list.append, LOG)`, `partial(dict.__setitem__, CFG)`
            return value.args[0] if name in methods else None
        value = value.func
    if isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)) and not isinstance(value.__self__, types.ModuleType):
        name = value.__name__  # `LOG.append`, `CFG.__setitem__`
        return value.__self__ if name in methods else None
    return None


def _shared(globs: Mapping[str, Any], spaces: list[Mapping[str, Any]]) -> set[str]:
    """The globals of `globs` holding a mutable object one of `spaces` holds too."""
    ids = {id(v) for space in spaces for v in list(space.values()) if not isinstance(v, _FIXED)}
    return {k for k, v in list(globs.items()) if id(v) in ids and not isinstance(v, _FIXED)}


def _reached(defs: list[ast.AST], globs: Mapping[str, Any]) -> Iterator[tuple[ast.AST, Mapping[str, Any]]]:
    """The definitions of the other modules' helpers `defs` reach, with their
    modules' globals; `_UNTOLD` for any not looked at."""
    try:
        todo = [fn for d in defs for fn in _called(d, globs) if fn.__globals__ is not globs]
    except Exception:  # a proxy whose attributes raise: what it holds is not told
        yield _UNTOLD, globs
        return
    seen: set[int] = set()
    while todo and len(seen) < _FOLLOWED:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        code, space = fn.__code__, fn.__globals__
        src = source_of(code.co_filename, space)
        if src.tree is None or not runs_this_source(code, src, space):
            yield _UNTOLD, space  # its text is not what runs: not told
            continue
        for node in find_definitions(code, src):
            yield node, space
            try:
                todo += _called(node, space)
            except Exception:  # as above
                yield _UNTOLD, space
    if todo:
        yield _UNTOLD, globs  # past the limit


def _reads(node: ast.AST, space: Mapping[str, Any], globs: Mapping[str, Any], written: frozenset[str]) -> set[str]:
    """The names among `written` (globals of `globs`) whose objects `node`
    names (`Cfg`) or reads through a module (`config.STATE`, `flow.RATE`).
    A number or a string by its module's name alone: the same small int is
    every module's (`RATE = 1`), and a name importing it holds a copy."""
    # By the object (`L` of `from store import L` here and in the writer's module too).
    held = {w: global_value(globs, w) for w in written}
    targets = {id(v): w for w, v in held.items() if v is not MISSING and not isinstance(v, _SCALARS)}
    found: set[str] = set()
    for sub in walk(node):
        if isinstance(sub, ast.Name) and sub.id in space:
            found.add(targets.get(id(space[sub.id]), ""))
            found.add(q if (q := qualified(space, sub.id)) in written else "")
        elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
            module = space.get(sub.value.id)
            if isinstance(module, types.ModuleType) and sub.attr in vars(module):
                if vars(module) is globs and sub.attr in written:
                    found.add(sub.attr)
                found.add(targets.get(id(vars(module)[sub.attr]), ""))
                found.add(q if (q := qualified(vars(module), sub.attr)) in written else "")
    return found - {""}


def _memo(space: Mapping[str, Any], name: str, caller: ast.AST | None) -> bool:
    """Whether `name` of that module is a memo or a lazy client its
    functions only fill (`selffills.memo_only`), the step's module (its
    tree `caller`) changing no entry they hand out either: a fresh process
    fills it again alike (`clients.client("s3")` of every step)."""
    filename = space.get("__file__")
    tree = source_of(filename, space).tree if isinstance(filename, str) else None
    return tree is not None and caller is not None and memo_only(tree, name, (caller,))


def _module_of(value: object, space: Mapping[str, Any]) -> bool:
    return isinstance(value, types.ModuleType) and vars(value) is space


def qualified(space: Mapping[str, Any], name: str) -> str:
    """`tally._L`: the global `name` of the module whose globals are
    `space`, as a step of another module's written names hold it when no
    global of its own module holds the object (`global_value` reads it)."""
    return f"{space.get('__name__')}.{name}"


MISSING = object()


def global_value(globs: Mapping[str, Any], name: str) -> object:
    """What the written name `name` holds now: a global of `globs`, or one
    of another module (`qualified`); `MISSING` when there is none."""
    if name in globs:
        return globs[name]
    module, _, attr = name.rpartition(".")
    home = sys.modules.get(module) if module else None
    return vars(home).get(attr, MISSING) if isinstance(home, types.ModuleType) else MISSING


# What no helper writes into: scalars, modules, classes and functions (counted by their code).
_FIXED = (*_SCALARS, types.ModuleType, type, types.FunctionType)


def _called(node: ast.AST, space: Mapping[str, Any]) -> Iterator[types.FunctionType]:
    """The functions of the user's `node` may call: named by a name of its
    module or through a module or a class (`describe()`, `helpers.describe()`,
    `helpers.Describer.describe()`), called or not (`run(describe)`, handed
    to what calls it), or held in what it names (`OPS["total"]()` of `OPS =
    {"total": total}`, `T()` of `T = partial(total)`); and every method of a
    class of the user's it calls (`Describer().mode()`: any of them may run
    on the object it makes). Raises what a proxy's attributes raise."""
    made = {id(n.func) for n in walk(node) if isinstance(n, ast.Call)}
    told: set[int] = set()  # `Describer` of `helpers.Describer.describe`, which names one method
    for sub in walk(node):  # breadth first: a dotted name before its parts
        if not isinstance(sub, (ast.Name, ast.Attribute)) or not isinstance(sub.ctx, ast.Load):
            continue
        value = None if id(sub) in told else resolved(sub, space)
        if isinstance(sub, ast.Attribute) and (value is not None or id(sub) in told):
            told.add(id(sub.value))
        if not isinstance(value, type) or id(sub) in made:
            yield from _functions_in(value)


def _functions_in(value: object, depth: int = 0) -> Iterator[types.FunctionType]:
    value = value.__func__ if isinstance(value, (staticmethod, classmethod, types.MethodType)) else value
    if isinstance(value, type) and user_class(value):
        mro = [c for c in value.__mro__ if user_class(c)]
        yield from (f for c in mro for f in map(user_function, vars(c).values()) if f is not None)
    elif (fn := user_function(value)) is not None:
        yield fn
    elif isinstance(value, functools.partial) and depth < 8:
        for held in (value.func, *value.args, *value.keywords.values()):
            yield from _functions_in(held, depth + 1)
    elif not isinstance(value, (type, types.ModuleType)) and depth < 8:
        for held in held_callables(value):  # `OPS = {"total": total}`
            yield from _functions_in(held, depth + 1)
