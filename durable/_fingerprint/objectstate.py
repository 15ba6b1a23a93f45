"""The globals holding an object of the user's class that a step changes by
calling its methods (`MEMORY.remember(x)` doing `self.items.append(x)`,
`ACC.push(x)` doing `self.count += x`): the attributes its methods change
through `self`, told by their code, and whether another step reads one of
them (`MEMORY.total()` reading `self.items`, `MEMORY.items`). What a
method only fills when it is not there yet (a client made on first use,
`self._client = self._client or make()`; a memo, `if k not in self._memo:
self._memo[k] = ...`) a fresh object fills again alike: no change. A method
whose code cannot be read, or handing `self` on whole, may change any. Pure
standard library."""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Mapping
from typing import Any

from .heldobjects import bound_in, definitions, member_of, mine, only_called
from .localbound import bound_locals
from .methoduses import FUNCS, called, method_uses
from .nodes import walk
from .selfchanges import printed_names
from .userclasses import users_class


def object_writes(defs: list[ast.AST], globs: Mapping[str, Any], seen: set[tuple[int, str]] | None = None) -> dict[str, frozenset[str] | None]:
    """The globals of `globs` holding an object of the user's class whose
    methods `defs` call (`G.m(...)`, `G(x)`, `G << x`, `with G:`,
    `G.part.m(...)`) that change one of its attributes: with those
    attributes (None: any)."""
    found: dict[str, frozenset[str] | None] = {}
    parents = {id(c): p for d in defs for p in walk(d) for c in ast.iter_child_nodes(p)}
    held: dict[str, list[tuple[object, str]]] = {}  # a table of data named often: looked through once
    alias = _aliases(defs, globs)
    for node in (n for d in defs for n in walk(d) if isinstance(n, ast.Name)):
        # A local bound to the object (`s = STORE`, then `s.remember(x)`): as the global.
        name = alias[node.id] if node.id in alias and isinstance(node.ctx, ast.Load) else node.id
        value = globs.get(name)
        if name not in held:
            held[name] = list(bound_in(value, 0))
        above = parents.get(id(node))
        if not held[name] and isinstance(above, ast.Attribute) and isinstance(value, (type, types.ModuleType)):
            # Held by a class or another module (`Ops.add = STORE.remember`, `otherstore.ADD`).
            member = inspect.getattr_static(value, above.attr, None)
            bound = list(bound_in(member, 1)) if users_class(value) or isinstance(value, types.ModuleType) else []
        else:
            bound = held[name]
        if bound:
            # A method held bound (`ADD = STORE.remember`, `OPS = {"add": STORE.remember}`,
            # `partial(Store.remember, STORE)`), then called: as `STORE.remember(x)`.
            for obj, attr in bound:
                uses = method_uses(type(obj), attr, set(), obj)
                holders = [k for k, v in list(globs.items()) if v is obj]
                for each in holders:
                    _add(found, each, None if uses is None else uses[0])
                    _parted(found, each, obj, attr, globs)
                if not holders:  # held only there: any of what holds it
                    _add(found, name, None if uses is None or uses[0] else frozenset())
                    _parted(found, name, obj, attr, globs)
            continue
        if isinstance(value, types.ModuleType) and isinstance(above, ast.Attribute):
            # An object of yours another module holds (`otherstore.STORE.remember(x)`): that
            # module is written, where the object is read (`otherstore.STORE.items`).
            if mine(obj := inspect.getattr_static(value, above.attr, None)):
                uses = called(above, parents, obj)
                if uses is None or uses[0]:
                    _add(found, name, frozenset({above.attr}))
            continue
        if not mine(globs.get(name)):
            continue
        uses = called(node, parents, value)
        _add(found, name, None if uses is None else uses[0])
        if isinstance(above, ast.Attribute) and isinstance(call := parents.get(id(above)), ast.Call) and call.func is above:
            _parted(found, name, value, above.attr, globs)
        # What its method changes of another object of the module (`SVC.go(x)` doing `STORE.remember(x)`).
        for other, attrs in _beyond(node, parents, globs, set() if seen is None else seen, value).items():
            _add(found, other, attrs)
        for other, attrs in _through(node, parents, globs, value).items():  # `SVC.store.remember(x)`: STORE
            _add(found, other, attrs)
    return found


def calls_change_nothing(name: str, defs: list[ast.AST], globs: Mapping[str, Any]) -> bool:
    """Whether every use of the global `name` in `defs` calls a method its
    class of yours defines (`STORE.insert(batch, rows)` of a helper class
    writing to sqlite3) that changes nothing of the object, told by its
    code: a write by the method's name alone (`insert` as a list's) is
    none. Not a name its class does not define (`__getattr__` handing
    it on to a list it holds), nor a method that may change anything."""
    obj = globs.get(name)
    if not mine(obj) or not only_called(name, defs):
        return False
    nodes = [n for d in defs for n in walk(d) if isinstance(n, ast.Attribute)]
    if any(n.attr == name for n in nodes):
        return False  # `flow.STORE` of a module importing itself: not told here
    attrs = {n.attr for n in nodes if isinstance(n.value, ast.Name) and n.value.id == name}
    if not attrs or not all(isinstance(inspect.getattr_static(type(obj), a, None), types.FunctionType) for a in attrs):
        return False
    return name not in object_writes(defs, globs)


def _aliases(defs: list[ast.AST], globs: Mapping[str, Any]) -> dict[str, str]:
    """The locals bound to a global object of your class by name alone
    (`s = STORE`), and bound to nothing else: each with the global."""
    nodes = [n for d in defs for n in walk(d)]
    named = {t.id: a.value.id for a in nodes if isinstance(a, ast.Assign) and isinstance(a.value, ast.Name)
             for t in a.targets if isinstance(t, ast.Name)}  # fmt: skip
    return {k: g for k, gs in bound_locals(nodes).items() if gs == {g := named.get(k, "")} and k not in globs and mine(globs.get(g))}


def _parted(found: dict[str, frozenset[str] | None], name: str, obj: object, attr: str, globs: Mapping[str, Any]) -> None:
    """Add what method `attr` of `obj` (the global `name` holds) changes of
    the objects of the user's class its attributes hold (`_parts`)."""
    attrs, more = _parts(obj, attr, globs, set(), 0)
    _add(found, name, attrs)
    for other, changed in more.items():
        _add(found, other, changed)


def _parts(obj: object, attr: str, globs: Mapping[str, Any], seen: set[tuple[int, str]],
           depth: int) -> tuple[frozenset[str], dict[str, frozenset[str] | None]]:  # fmt: skip
    """What method `attr` of `obj` changes through `self` of the objects of
    the user's class its attributes hold (`self.store.remember(x)`, with
    `SVC = Service(STORE)`): the attributes holding them, and the globals of
    `globs` holding them too, with what it changes of each (through the
    methods it calls through `self`, and theirs, in turn)."""
    member = inspect.getattr_static(type(obj), attr, None)
    fn = getattr(member, "__func__", member)
    defs = definitions(fn) if isinstance(fn, types.FunctionType) and (id(obj), attr) not in seen and depth < 8 else []
    seen.add((id(obj), attr))
    params = [*defs[0].args.posonlyargs, *defs[0].args.args] if len(defs) == 1 and isinstance(defs[0], FUNCS) else []
    held: set[str] = set()
    found: dict[str, frozenset[str] | None] = {}
    own = getattr(obj, "__dict__", None) or {}
    for call in (n for n in walk(defs[0]) if isinstance(n, ast.Call)) if params else ():
        func, me = call.func, params[0].arg
        if not isinstance(func, ast.Attribute):
            continue
        if isinstance(func.value, ast.Name) and func.value.id == me:  # `self.add(x)`: its parts too
            attrs, more = _parts(obj, func.attr, globs, seen, depth + 1)
            held |= attrs
            for name, changed in more.items():
                _add(found, name, changed)
            continue
        if not (isinstance(func.value, ast.Attribute) and isinstance(func.value.value, ast.Name) and func.value.value.id == me):
            continue
        part = own.get(func.value.attr)
        if not mine(part):
            continue
        uses = method_uses(type(part), func.attr, set(), part)
        inner, more = _parts(part, func.attr, globs, seen, depth + 1)
        if uses is not None and not uses[0] and not inner:
            continue
        held.add(func.value.attr)
        for name in [k for k, v in list(globs.items()) if v is part]:
            _add(found, name, None if uses is None else uses[0] | inner)
        for name, changed in more.items():
            _add(found, name, changed)
    return frozenset(held), found


def _add(found: dict[str, frozenset[str] | None], name: str, attrs: frozenset[str] | None) -> None:
    if attrs is None or found.get(name, frozenset()) is None:
        found[name] = None
    elif attrs:
        found[name] = found.get(name, frozenset()) | attrs  # type: ignore[operator]


def _beyond(node: ast.Name, parents: Mapping[int, ast.AST], globs: Mapping[str, Any],
            seen: set[tuple[int, str]], obj: object) -> dict[str, frozenset[str] | None]:  # fmt: skip
    above = parents.get(id(node))
    if not isinstance(above, ast.Attribute) or (key := (id(type(obj)), above.attr)) in seen:
        return {}
    seen.add(key)
    member = inspect.getattr_static(type(obj), above.attr, None)
    fn = getattr(member, "__func__", member)
    if not isinstance(fn, types.FunctionType) or fn.__globals__ is not globs:
        return {}
    return object_writes(definitions(fn), globs, seen)


def _through(node: ast.Name, parents: Mapping[int, ast.AST], globs: Mapping[str, Any],
             obj: object) -> dict[str, frozenset[str] | None]:  # fmt: skip
    """The other globals holding the object of yours that `G.part.m(...)` calls
    `m` of (`SVC.store.remember(x)`, `STORE` of `SVC = Service(STORE)`): with
    what `m` changes of it."""
    above = parents.get(id(node))
    up = parents.get(id(above))
    call = parents.get(id(up))
    if not (isinstance(above, ast.Attribute) and isinstance(up, ast.Attribute) and isinstance(call, ast.Call) and call.func is up):
        return {}
    part = member_of(obj, above.attr)
    if not mine(part):
        return {}
    uses = method_uses(type(part), up.attr, set(), part)
    return {k: None if uses is None else uses[0] for k, v in list(globs.items()) if v is part}


def reads_object(d: ast.AST, name: str, obj: Any, attrs: frozenset[str] | None) -> bool:
    """Whether `d` may read one of `attrs` of `obj`, the global `name` holds."""
    parts = {id(a.value): a for a in walk(d) if isinstance(a, ast.Attribute)}
    shown = printed_names(d)
    for n in walk(d):
        if not (isinstance(n, ast.Name) and n.id == name) or id(n) in shown:
            continue
        part = parts.get(id(n))
        if part is None or attrs is None:
            return True  # the object whole: handed on, aliased
        uses = method_uses(type(obj), part.attr, set(), obj)
        if part.attr in attrs or uses is None or uses[1] & (attrs | {"*"}):
            return True
    return False


