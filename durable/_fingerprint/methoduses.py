"""What calling a method of the user's class changes and reads of its
object (`self`), told by the method's code and those it calls through
`self` (`objectstate`): `MEMORY.remember(x)` doing `self.items.append(x)`
changes `items`; `MEMORY.total()` reading `self.items` reads it. A use of
an object calls methods too: `G(x)`, `G << x`, `with G:`, `getattr(G, m)()`.
Pure standard library."""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Mapping
from typing import Any

from .heldobjects import UNTOLD, definitions, member_of, only_functions, own_attributes
from .kept import shown_only
from .nodes import walk
from .selfchanges import SHOWS, blind, changes, name_of
from .selffills import fills as _fills
from .userclasses import users_class

FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
# What reads an object whole without changing it, handed `self`: `asdict(self)`.
_WHOLE = SHOWS | frozenset({"asdict", "astuple", "replace", "copy", "deepcopy"})
Uses = tuple[frozenset[str], frozenset[str]] | None  # (changed, read) attributes; None: any
_MISSING = object()
_SLOTS = (types.MemberDescriptorType, types.GetSetDescriptorType)


def called(node: ast.expr, parents: Mapping[int, ast.AST], obj: Any) -> Uses:
    """What the methods of `obj` that the use `node` of it calls change and
    read: `G.m(...)`; its dunders, `G(x)`, `G << x`, `with G:`; a method of
    an object it holds, `G.part.m(...)`, changing `part`; `getattr(G, m)`."""
    above = parents.get(id(node))
    if isinstance(above, ast.Attribute):
        up = parents.get(id(above))
        if isinstance(up, ast.Call) and up.func is above:
            return method_uses(type(obj), above.attr, set(), obj)
        part = member_of(obj, above.attr)  # `SVC.store` of a property returning `self._store`
        call = parents.get(id(up))
        if isinstance(up, ast.Attribute) and isinstance(call, ast.Call) and call.func is up and (part is UNTOLD or users_class(type(part))):
            inner = None if part is UNTOLD else method_uses(type(part), up.attr, set(), part)
            return None if inner is None else (frozenset({above.attr} if inner[0] else ()), frozenset())
        return frozenset(), frozenset()
    names: list[str] = []
    if isinstance(above, ast.Call) and above.func is node:
        names = ["__call__"]
    elif isinstance(above, (ast.BinOp, ast.AugAssign)):
        op = _OPS.get(type(above.op).__name__, "")
        names = [f"__{op}__", f"__r{op}__", f"__i{op}__"] if op else []
    elif isinstance(above, ast.withitem) and above.context_expr is node:
        names = ["__enter__", "__exit__", "__aenter__", "__aexit__"]
    elif isinstance(above, ast.Call) and name_of(above.func) == "getattr" and above.args[:1] == [node]:
        call = parents.get(id(above))
        if not (isinstance(call, ast.Call) and call.func is above):
            return frozenset(), frozenset()  # `getattr(G, "a", None)`: a read
        named = above.args[1] if len(above.args) > 1 else None
        return method_uses(type(obj), named.value, set(), obj) if isinstance(named, ast.Constant) and isinstance(named.value, str) else None
    changed: frozenset[str] = frozenset()
    for each in names:
        uses = method_uses(type(obj), each, set(), obj)
        if uses is None:
            return None
        changed |= uses[0]
    return changed, frozenset()


_OPS = dict(Add="add", Sub="sub", Mult="mul", MatMult="matmul", Div="truediv", FloorDiv="floordiv", Mod="mod",
            Pow="pow", LShift="lshift", RShift="rshift", BitOr="or", BitXor="xor", BitAnd="and")  # fmt: skip


def method_uses(cls: type, attr: str, seen: set[str], obj: object = _MISSING) -> Uses:
    """What calling method `attr` of `cls` (of `obj`, when known) changes and reads of
    `self`, with the methods it calls through `self`; ((), ()) for plain data; None: not told."""
    if attr in seen:
        return frozenset(), frozenset()
    seen.add(attr)
    try:
        member = inspect.getattr_static(cls, attr)
    except AttributeError:
        return frozenset(), frozenset()  # an instance's own attribute: data
    if isinstance(member, staticmethod):
        return frozenset(), frozenset()  # given no `self`
    fn = getattr(member, "__func__", member)
    if not isinstance(fn, types.FunctionType):
        plain = not callable(member) and not hasattr(type(member), "__get__")
        return (frozenset(), frozenset()) if plain else None
    defs = definitions(fn)
    if len(defs) != 1 or not isinstance(defs[0], FUNCS) or isinstance(member, classmethod):
        return None
    params = [*defs[0].args.posonlyargs, *defs[0].args.args]
    if not params:
        return None
    changed, read, called = _self_uses(defs[0], params[0].arg, fn.__globals__, obj)
    if changed is None:
        return None
    for other in called:
        if inspect.getattr_static(cls, other, _MISSING) is _MISSING:
            if not only_functions(own_attributes(obj).get(other), fn.__globals__):  # `self.tools[k](x)` of `def`s: no `self`
                return None  # what the object holds (`self.ops["add"](x)`): its own bound method, maybe
            continue
        more = method_uses(cls, other, seen, obj)
        if more is None:
            return None
        changed, read = changed | more[0], read | more[1]
    return frozenset(changed), frozenset(read)


def _self_uses(fn: ast.AST, me: str, globs: Mapping[str, Any], obj: object = _MISSING) -> tuple[set[str] | None, set[str], set[str]]:
    """The attributes of `me` that `fn` changes (None: any), reads, and the
    methods it calls through it. An object of yours `obj` holds whose method
    it calls (`self.limiter.wait()`) is read where that method reads it."""
    changed: set[str] = set()
    read: set[str] = set()
    called: set[str] = set()
    parents = {id(c): p for p in walk(fn) for c in ast.iter_child_nodes(p)}
    quiet = shown_only(fn)  # `print(f"{self.n}/{self.total}")`: shown, no read
    for n in walk(fn):
        if not (isinstance(n, ast.Name) and n.id == me and isinstance(n.ctx, ast.Load)):
            continue
        part = parents.get(id(n))
        if isinstance(part, ast.Call) and n in part.args and name_of(part.func) in _WHOLE - {"type"}:
            read.add("*")  # `asdict(self)`, `repr(self)`: reads all of it, changes nothing
            continue
        if not (isinstance(part, ast.Attribute) and part.value is n):
            return None, read, called  # `self` handed on or aliased (`type(self).a.append(x)`): any of it
        above = parents.get(id(part))
        held = isinstance(above, ast.Subscript) and isinstance(call := parents.get(id(above)), ast.Call) and call.func is above
        if (isinstance(above, ast.Call) and above.func is part) or held:  # `self.ops["add"](x)` too
            called.add(part.attr)
        elif changes(part, parents, globs) and not _fills(part, parents, me):
            if part.attr.startswith("__"):
                return None, read, called  # `self.__dict__[k] = v`, `self.__class__.a = v`: any attribute
            changed.add(part.attr)
            if not blind(part, parents):
                read.add(part.attr)  # `self.a.pop()`, `fill(self.a)`: what it had may come out
        elif id(n) not in quiet and not _reads_nothing(part, above, parents, obj):
            read.add(part.attr)
    return changed, read, called


def _reads_nothing(part: ast.Attribute, above: ast.AST | None, parents: Mapping[int, ast.AST], obj: object) -> bool:
    """Whether `self.part.m(...)` (`self.limiter.wait()`) calls a method of
    an object of yours `obj` holds that reads nothing of it (`effects`: a
    rate limiter's `self.last` only paces), or only its set-up, which no
    method of its class changes (`self.gap`), in a call that is a statement
    of its own given constants: what changes there is the part's
    (`objectstate._parts`), and the caller gets nothing of it."""
    if obj is _MISSING or not (isinstance(above, ast.Attribute) and isinstance(call := parents.get(id(above)), ast.Call) and call.func is above):
        return False
    held = own_attributes(obj).get(part.attr, _MISSING)
    if held is _MISSING or not users_class(type(held)):
        return False
    uses = method_uses(type(held), above.attr, set(), held)
    if uses is None or not uses[1]:
        return uses is not None
    given = [*call.args, *(k.value for k in call.keywords)]
    up = parents.get(id(call))
    up = parents.get(id(up)) if isinstance(up, ast.Await) else up  # `await self.limiter.acquire()`
    alone = isinstance(up, ast.Expr) and all(isinstance(a, ast.Constant) for a in given)
    changed = _any_changes(type(held), held) if alone else None
    return changed is not None and not uses[1] & (changed | {"*"})


def _any_changes(cls: type, obj: object) -> frozenset[str] | None:
    """What any method of `cls` (a class of yours, its bases too) changes of
    `self`, `__init__` aside (it ran as `obj` was made); None: not told."""
    changed: set[str] = set()
    for klass in cls.__mro__[:-1]:
        if not users_class(klass):
            return None
        for name, member in vars(klass).items():
            if name in ("__init__", "__new__", "__init_subclass__") or isinstance(member, _SLOTS):
                continue  # a slot or `__dict__` itself: data, changed where it is written
            if not (callable(member) or hasattr(type(member), "__get__")):
                continue
            uses = method_uses(cls, name, set(), obj)
            if uses is None:
                return None
            changed |= uses[0]
    return frozenset(changed)
