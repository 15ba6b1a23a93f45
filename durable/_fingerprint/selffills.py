"""What a method of an object only fills when it is not there yet: a
client made on first use (`self._client = self._client or make()`), a memo
(`if k not in self._memo: self._memo[k] = ...`). A fresh object, in a
resumed run's new process, fills it again alike: no change of its state
(`objectstate`). Pure standard library."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from .entrychanges import FUNCS, ancestors, changed_result, named
from .nodes import walk


def fills(part: ast.Attribute, parents: Mapping[int, ast.AST], me: str) -> bool:
    """Whether the change of `self.a` only fills what is not there yet: a
    binding of `self.a` or `self.a[k]` to `self.a or make()` (`self.a.get(k)
    or ...`), or under a test that it is missing (`if self.a is None:`, `if
    not self.a:`, `if k not in self.a:`), or `self.a.setdefault(k, v)`; not
    `self.a = self.a + [x]` nor `if self.n < 9: self.n = self.n + 1`."""
    above = parents.get(id(part))
    if isinstance(above, ast.Attribute) and above.attr == "setdefault":
        return True
    target: ast.AST = above if isinstance(above, ast.Subscript) and above.value is part else part
    stmt = parents.get(id(target))
    if not (isinstance(stmt, ast.Assign) and stmt.targets == [target]) or _container(stmt.value):
        return False  # `C[k] = []`: a list to append to, no memo
    value = stmt.value
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and _mentions(value.values[0], me, part.attr):
        return True
    node: ast.AST | None = parents.get(id(stmt))
    child: ast.AST = stmt
    while node is not None:
        if isinstance(node, (ast.If, ast.While)) and child in node.body and _missing(node.test, me, part.attr):
            return True
        child = node
        node = parents.get(id(node))
    return False


def _missing(test: ast.expr, me: str, attr: str) -> bool:
    """`self.a is None`, `not self.a`, `k not in self.a`, or one of them
    `and` another test."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_missing(t, me, attr) for t in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _mentions(test.operand, me, attr) and isinstance(test.operand, ast.Attribute)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if isinstance(test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        return isinstance(test.left, ast.Attribute) and _mentions(test.left, me, attr)
    return isinstance(test.ops[0], ast.NotIn) and isinstance(test.comparators[0], ast.Attribute) and _mentions(test.comparators[0], me, attr)


def filled_from_module(part: ast.Attribute, parents: Mapping[int, ast.AST], me: str) -> bool:
    """`fills`, with what it stores made from module-level names and `me`
    alone (`cls._conn = connect()`, `connect(cls.URL)`): state kept on a
    class, shared by every caller, which a fresh process fills again alike;
    not `cls._conn = connect(url)` of a parameter (the first caller's)."""
    if not fills(part, parents, me):
        return False
    stmt = parents.get(id(part))
    fn = next((p for p in ancestors(part, parents) if isinstance(p, FUNCS)), None)
    if not isinstance(stmt, ast.Assign) or fn is None:
        return False  # `setdefault`: what it is handed, maybe a parameter
    own = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs, fn.args.vararg, fn.args.kwarg) if a is not None}
    own |= {n.id for n in walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return all(n.id == me or n.id not in own for n in walk(stmt.value) if isinstance(n, ast.Name))


def _mentions(expr: ast.AST, me: str, attr: str) -> bool:
    return any(
        isinstance(a, ast.Attribute) and a.attr == attr and isinstance(a.value, ast.Name) and a.value.id == me
        for a in walk(expr)
    )


def memo_only(tree: ast.AST, name: str, callers: tuple[ast.AST, ...] = ()) -> bool:
    """Whether the module-level `name` of the module whose tree is `tree`
    is a memo or a lazy client its functions only fill: each use in a
    function fills what is missing (`if k not in CACHE: CACHE[k] = ...`,
    `CACHE.setdefault(k, v)`, `global client; if client is None: client =
    make()`, `client = client or make()`) or looks at it (`CACHE[k]`,
    `CACHE.get(k)`, `k in CACHE`, `return client`), and no module-level
    statement but one binding it to an empty dict or None names it; each
    function using it fills it. A fresh process fills it again alike: a step that filled it, replayed,
    leaves nothing another step computes from. Anything else (`c = CACHE`,
    `f(CACHE)`, `CACHE.clear()`, `len(CACHE)`) counts as a use; so does
    an entry a function returns (`return CACHE[k]`) that a caller of it
    changes (`lookup(k).append(x)`): the fresh process's entry lacks it,
    there or in `callers` (the trees of modules importing the function)."""
    trees = (tree, *callers)
    parents = {id(c): p for t in trees for p in walk(t) for c in ast.iter_child_nodes(p)}
    filled: dict[int, bool] = {}  # id of a function using it -> whether it fills it
    handing: set[str] = set()  # the functions returning an entry
    for node in walk(tree):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        inside = next((p for p in ancestors(node, parents) if isinstance(p, FUNCS)), None)
        if inside is None:
            stmt = parents.get(id(node))
            if isinstance(stmt, ast.Assign) and stmt.targets == [node] and _empty(stmt.value):
                continue
            return False
        use = _use(node, parents, name)
        if use is None:
            return False
        filled[id(inside)] = filled.get(id(inside), False) or use
        if isinstance(inside, ast.FunctionDef) and any(isinstance(p, ast.Return) for p in ancestors(node, parents)):
            handing.add(inside.name)
        if isinstance(inside, ast.FunctionDef) and _aliases(node, parents, name):  # `return v` of `v = C.get(k)`
            handing.add(inside.name)
    if handing and any(
        changed_result(c, parents) for t in trees for c in walk(t) if isinstance(c, ast.Call) and named(c.func) in handing
    ):
        return False
    # Each function looking at it fills it too: `"hit" if k in CACHE else "miss"` alone is a read.
    return bool(filled) and all(filled.values())


_LOOKS = frozenset({"get", "keys", "values", "items"})


def _empty(value: ast.expr) -> bool:
    return (isinstance(value, ast.Dict) and not value.keys) or (isinstance(value, ast.Constant) and value.value is None)


def _use(node: ast.Name, parents: Mapping[int, ast.AST], name: str) -> bool | None:
    """A fill (True), a look (False), or another use (None) of the global
    `name`. What a look gives is returned or tested, never bound to a name
    or changed (`CACHE[k].append(x)`, `v = CACHE.get(k)`: other uses); the
    whole object only when it is a lazy client's (`return client`)."""
    above = parents.get(id(node))
    if isinstance(node.ctx, ast.Store):
        return _filled(node, parents, name) or None
    if isinstance(above, ast.Subscript) and above.value is node:
        if isinstance(above.ctx, ast.Store):
            return _filled(above, parents, name) or None
        return False if _looked(above, parents) or _text_of(above, parents) else None
    if isinstance(above, ast.Attribute) and above.value is node:
        call = parents.get(id(above))
        if not (isinstance(call, ast.Call) and call.func is above):
            return None
        if above.attr == "setdefault":  # `return CACHE.setdefault(k, make(k))`, not `(k, [])`
            fills = len(call.args) == 2 and not _container(call.args[1]) and _from_key(call.args[1], call.args[0], parents)
            return True if fills and isinstance(parents.get(id(call)), (ast.Return, ast.Expr)) else None
        if above.attr == "update" and _updated(call, parents, name):
            return True  # `if not C: C.update(load())`: filled whole
        if above.attr == "get" and _got(call, parents) in _aliases(node, parents, name):
            return False  # `v = CACHE.get(k)`, `v` then only tested, filled or returned
        return False if above.attr in _LOOKS and _looked(call, parents) else None
    if isinstance(above, ast.Compare) and len(above.ops) == 1:
        looks = isinstance(above.ops[0], (ast.In, ast.NotIn)) and above.comparators[0] is node
        return False if looks or (isinstance(above.ops[0], (ast.Is, ast.IsNot)) and above.left is node) else None
    if isinstance(above, ast.UnaryOp) and isinstance(above.op, ast.Not):
        return False
    if isinstance(above, ast.BoolOp) and above.values[0] is node:  # `client = client or make()`
        stmt = parents.get(id(above))
        return False if isinstance(stmt, ast.Assign) and _filled(stmt.targets[0], parents, name) else None
    return False if isinstance(above, ast.Return) and _lazy(node, parents) else None


def _looked(expr: ast.AST, parents: Mapping[int, ast.AST]) -> bool:
    """Whether what `expr` gives is only returned or tested."""
    above = parents.get(id(expr))
    return isinstance(above, (ast.Return, ast.Compare)) or (isinstance(above, (ast.If, ast.While)) and above.test is expr)


def _text_of(entry: ast.AST, parents: Mapping[int, ast.AST]) -> bool:
    """Whether the entry is handed only to one of text's methods (`ROBOTS[host].splitlines()`,
    a cached robots.txt), which makes a new object of it: what a caller does with that changes no
    entry. Not where a class of the module defines that method (`Page.strip` may change the page)."""
    above = parents.get(id(entry))
    call = parents.get(id(above))
    if not (isinstance(above, ast.Attribute) and above.attr in _TEXT and isinstance(call, ast.Call) and call.func is above):
        return False
    return not any(isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == above.attr for f in walk(ancestors(entry, parents)[-1]))  # not a class's own


_TEXT = frozenset("splitlines split rsplit strip lstrip rstrip lower upper casefold startswith endswith find encode decode".split())


def _lazy(node: ast.AST, parents: Mapping[int, ast.AST]) -> bool:
    """Whether the module binds the global `node` names to None (a lazy
    client's), or to an empty dict its functions fill only whole (`C =
    C or {...}`, `C.update(load())`, never `C[k] = v`): what is handed
    out is the same whole in a fresh process, not the keys filled so far."""
    tree = ancestors(node, parents)[-1]
    name = getattr(node, "id", "")
    bound = [s.value for s in getattr(tree, "body", []) if isinstance(s, ast.Assign) and [getattr(t, "id", None) for t in s.targets] == [name]]
    if any(isinstance(v, ast.Constant) and v.value is None for v in bound):
        return True
    keyed = any(
        (isinstance(n, ast.Subscript) and not isinstance(n.ctx, ast.Load))
        or (isinstance(n, ast.Attribute) and n.attr == "setdefault")
        for n in walk(tree) if getattr(getattr(n, "value", None), "id", None) == name
    )  # fmt: skip
    return bool(bound) and all(map(_empty, bound)) and not keyed


def _updated(call: ast.Call, parents: Mapping[int, ast.AST], name: str) -> bool:
    """`name.update(made)` as a statement under a test that `name` is empty
    (`if not C:`), `made` of module-level names alone (`load()`): filled
    whole, alike in a fresh process."""
    stmt = parents.get(id(call))
    if not isinstance(stmt, ast.Expr) or len(call.args) != 1 or call.keywords or not _from_key(call.args[0], None, parents):
        return False
    child: ast.AST = stmt
    for node in ancestors(stmt, parents):
        if isinstance(node, (ast.If, ast.While)) and child in node.body and _missing_global(node.test, name):
            return True
        child = node
    return False


def _filled(target: ast.AST, parents: Mapping[int, ast.AST], name: str) -> bool:
    """Whether `target` (`name` or `name[k]`) is bound to `name or make()` or
    under a test that it is missing."""
    stmt = parents.get(id(target))
    if not (isinstance(stmt, ast.Assign) and any(t is target for t in stmt.targets)):
        return False
    aliases = _aliases(target, parents, name)
    if any(getattr(t, "id", None) not in aliases for t in stmt.targets if t is not target):
        return False  # `v = C[k] = make(k)` only of a `v = C.get(k)`
    if _container(stmt.value):
        return False  # `C[k] = []`: a list to append to, no memo
    value = stmt.value
    if not _from_key(value, getattr(target, "slice", None), parents):
        return False  # `C[k] = v`: what the first caller handed, not the key's
    if isinstance(target, ast.Name) and isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        first = value.values[0]
        return isinstance(first, ast.Name) and first.id == name
    child: ast.AST = stmt
    for node in ancestors(stmt, parents):
        if isinstance(node, (ast.If, ast.While)) and child in node.body and _missing_global(node.test, name, aliases):
            return True
        child = node
    return False


def _from_key(value: ast.AST, key: ast.AST | None, parents: Mapping[int, ast.AST]) -> bool:
    """Whether what a fill stores is made from its key and module-level
    names alone (`C[k] = make(k)`, `client = connect()`): a fresh process
    then fills in what the first run's filler did. A parameter or local of
    the filling function beyond the key's (`C[k] = v`, `client =
    connect(url)`) is what its first caller handed: another step's call
    would fill in its own."""
    fn = next((p for p in ancestors(value, parents) if isinstance(p, FUNCS)), None)
    if fn is None:
        return True
    args = fn.args
    own = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a is not None}
    own |= {n.id for n in walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    own -= {g for n in walk(fn) if isinstance(n, ast.Global) for g in n.names}  # `global client`
    keys = {n.id for n in walk(key) if isinstance(n, ast.Name)} if key is not None else set()
    return all(n.id in keys or n.id not in own for n in walk(value) if isinstance(n, ast.Name))


_CONTAINERS = frozenset({"list", "dict", "set", "defaultdict", "deque", "Counter", "OrderedDict", "bytearray"})


def _container(value: ast.expr) -> bool:
    """A new container, which the code that gets it may fill (`[]`, `dict()`, `collections.deque()`)."""
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    func = value.func if isinstance(value, ast.Call) else None
    return (getattr(func, "id", None) or getattr(func, "attr", None)) in _CONTAINERS


def _missing_global(test: ast.expr, name: str, aliases: frozenset[str] = frozenset()) -> bool:
    """`name is None`, `not name`, `k not in name`, or one of them `and`
    another test; `v is None`, `not v` of a local `v = name.get(k)` (`aliases`)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_missing_global(t, name, aliases) for t in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return isinstance(test.operand, ast.Name) and test.operand.id in {name, *aliases}
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    it, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is None:
        return isinstance(it, ast.Name) and it.id in {name, *aliases}
    return isinstance(op, ast.NotIn) and isinstance(right, ast.Name) and right.id == name


def _got(call: ast.Call, parents: Mapping[int, ast.AST]) -> str | None:
    """The local `v` of `v = C.get(k)` (no default but None): None for another use."""
    stmt = parents.get(id(call))
    default = call.args[1] if len(call.args) > 1 else None
    if len(call.args) not in (1, 2) or call.keywords or not (default is None or (isinstance(default, ast.Constant) and default.value is None)):
        return None
    if isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _aliases(node: ast.AST, parents: Mapping[int, ast.AST], name: str) -> frozenset[str]:
    """The locals of the function around `node` bound to `name.get(k)`
    (`_got`) that it otherwise only tests (`v is None`, `not v`), binds
    with a fill (`v = name[k] = make(k)`) or returns: the entry, or its absence."""
    fn = next((p for p in ancestors(node, parents) if isinstance(p, FUNCS)), None)
    if fn is None:
        return frozenset()
    nodes = list(walk(fn))
    got = {g for c in nodes if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "get"
           and isinstance(c.func.value, ast.Name) and c.func.value.id == name and (g := _got(c, parents))}  # fmt: skip
    return frozenset(v for v in got if all(_aliased(n, parents, name) for n in nodes if isinstance(n, ast.Name) and n.id == v))


def _aliased(use: ast.Name, parents: Mapping[int, ast.AST], name: str) -> bool:
    above = parents.get(id(use))
    if isinstance(use.ctx, ast.Store):  # `v = name.get(k)`, `v = name[k] = make(k)`
        if not isinstance(above, ast.Assign):
            return False
        fill = any(isinstance(t, ast.Subscript) and getattr(t.value, "id", None) == name for t in above.targets)
        value = above.value
        got = isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and getattr(value.func.value, "id", None) == name
        return fill or (got and isinstance(value, ast.Call) and _got(value, parents) is not None)
    if isinstance(above, ast.Compare):
        return len(above.ops) == 1 and isinstance(above.ops[0], (ast.Is, ast.IsNot)) and above.left is use
    return isinstance(above, (ast.Return, ast.If, ast.While)) or (isinstance(above, ast.UnaryOp) and isinstance(above.op, ast.Not))
