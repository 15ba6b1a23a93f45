"""Which parameters a helper writes through other names than their own
(`helperreads._handed`): a name bound to the object (`store = items`), to a
part of it (`items = cfg["items"]`, `for row in rows`) or to a shallow copy
of it whose parts it writes (`c = dict(cfg); c["items"].append(v)`: the copy
shares the nested list, so the write is the parameter's). A copy written
only at its own level (`items = list(items); items.append(v)`) is the
helper's own. Pure standard library."""

from __future__ import annotations

import ast
import io
import random
import types
from collections.abc import Callable, Mapping
from typing import Any

from .changers import LOGS, MUTATORS, drawn, is_queue, library_object, library_write
from .hiddenrng import hidden_write
from .inplace import LOOKS, READERS, roots
from .localbound import bound_locals
from .nodes import walk

_FUNC = ast.FunctionDef | ast.AsyncFunctionDef
# What makes a new object of the one it is given: `items = list(items)`, `cfg = cfg.copy()`.
_COPIES = frozenset({"list", "dict", "set", "sorted", "tuple", "frozenset", "bytearray", "copy", "deepcopy"})


def through_names(fn: _FUNC, changed: set[str], logs: bool) -> set[str]:
    """`changed` (the names `fn` writes by name), with the names those are
    bound to in turn, less the parameters rebound to a copy first
    (`_copied`) whose parts it does not write."""
    edges = _bindings([fn])
    changed = _spread(edges, changed, _deep_writes([fn]))
    aliased = set() if logs else {s for _, kind, s in edges if kind == "same"}  # by content: any write by that name
    return (changed | aliased) - (_copied(fn) - _deep_writes([fn]))


def _spread(edges: list[tuple[str, str, str]], changed: set[str], deep: set[str]) -> set[str]:
    """`changed` with what the names among it are bound to, in turn (`deep`:
    those written below their own level, grown as it goes)."""
    grown = True
    while grown:
        before = len(changed) + len(deep)
        for name, kind, source in edges:
            if kind == "copy" and name in deep:  # a write into a part a shallow copy shares
                changed.add(source)
                deep.add(source)
            elif kind == "part" and name in changed:
                changed.add(source)
                deep.add(source)
            elif kind == "same" and name in changed:
                changed.add(source)
                deep.update([source] if name in deep else [])
        grown = len(changed) + len(deep) > before
    return changed


def _bindings(defs: list[ast.AST]) -> list[tuple[str, str, str]]:
    """(name, how, what it is bound from): `same`, a `part` of it or a shallow `copy`."""
    found: list[tuple[str, str, str]] = []
    for node in (n for fn in defs for n in walk(fn)):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:  # `ys, n = xs, 0`: each to each; else every name to every value
                pairs = _paired(target, node.value)
                found += [(n, *b) for names, v in pairs for n in names for b in _bound(v)]
                # `box["k"] = CFG`: box holds CFG one level down, as a shallow copy shares its parts.
                held = roots(target.value) if isinstance(target, (ast.Subscript, ast.Attribute)) else []
                found += [(h, "copy", s) for h in held for s in roots(node.value)]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.target, ast.Name):
            found += [(node.target.id, "part", s) for s in roots(node.iter)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node not in defs:
            # read inside a nested function: what is done to it there is not told by its own name
            found += [("", "same", n.id) for n in walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return found


def _paired(target: ast.AST, value: ast.AST) -> list[tuple[list[str], ast.AST]]:
    """The names `target` binds, each with the value it takes."""
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
        if len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
            return [p for t, v in zip(target.elts, value.elts, strict=True) for p in _paired(t, v)]
    names = [n.id for n in walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    values = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
    return [(names, v) for v in values]


def _bound(value: ast.AST) -> list[tuple[str, str]]:
    """How a name bound to `value` holds the names `value` reads."""
    if isinstance(value, ast.Name):
        return [("same", value.id)]
    if isinstance(value, (ast.Subscript, ast.Attribute, ast.IfExp, ast.BoolOp, ast.NamedExpr)) or (
        isinstance(value, ast.Call) and roots(value)
    ):
        return [("part", s) for s in roots(value)]  # `cfg["items"]`, `cfg.get("items")`
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name == "deepcopy":
            return []
        if name in _COPIES:  # `dict(cfg)`, `copy.copy(cfg)`, `cfg.copy()`
            given = value.args[:1] if isinstance(func, ast.Name) or (name == "copy" and value.args) else [func.value]  # type: ignore[attr-defined]
            return [("copy", s) for a in given for s in roots(a)]
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.Tuple)):  # `{**cfg}`, `[*rows]`
        spread = [v for k, v in zip(value.keys, value.values, strict=True) if k is None] if isinstance(value, ast.Dict) else value.elts
        return [("copy", s) for v in spread for s in roots(v)]
    return []


def _deep_writes(defs: list[ast.AST]) -> set[str]:
    """The names a write of `defs` reaches below their own level
    (`c["items"].append(v)`, `c["a"]["b"] = v`), or a call is handed a part of."""
    found: set[str] = set()
    for node in (n for fn in defs for n in walk(fn)):
        objs: list[ast.AST] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            objs += [t.value for t in node.targets if isinstance(t, (ast.Subscript, ast.Attribute))]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, (ast.Subscript, ast.Attribute)):
            objs.append(node.target.value)
        elif isinstance(node, ast.Call):
            m = method(node.func)
            if m is not None and (m[1] is None or m[1] in MUTATORS):
                objs.append(m[0])
            shows = (m is not None and m[1] in LOOKS) or (isinstance(node.func, ast.Name) and node.func.id in READERS)
            given = [] if shows else [*node.args, *(k.value for k in node.keywords)]  # not `print(c["k"])`
            objs += [a for a in given if isinstance(a, (ast.Subscript, ast.Attribute))]
        found.update(r for obj in objs if not isinstance(obj, ast.Name) for r in roots(obj))
    return found


def _copied(fn: _FUNC) -> frozenset[str]:
    """The parameters `fn`'s first statements rebind to a copy of what they
    hold (`items = list(items)`, `rows = sorted(rows)`, `cfg = cfg.copy()`),
    before anything else runs: what it writes of them after is its own
    copy. Not one rebound at some calls only (`if x: items = list(items)`)
    or to what may be the object given (`items = items or []`)."""
    body = fn.body[1:] if fn.body and _docstring(fn.body[0]) else fn.body
    found: set[str] = set()
    for stmt in body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            break
        call = stmt.value
        func = call.func if isinstance(call, ast.Call) else None
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name not in _COPIES:
            break
        found.add(stmt.targets[0].id)
    return frozenset(found)


def _docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def written_in(defs: list[ast.AST], logs: bool = True, globs: Mapping[str, Any] | None = None) -> frozenset[str]:
    """What the functions write themselves (`STATE[k] = v`, `global RATE`,
    and unless `logs` is false, a count or a log: `N += 1`,
    `LOG.append(x)`): not what they only hand to a call (`sum(VALUES)`
    reads it). A count or a log the steps keep replays as it always did
    (DBOS's and joblib's tests count calls so, and read the count). With
    the module's globals `globs`, `xs = LOG; xs += [x]` on a list, dict,
    set... (`localbound.in_place_grown`) writes `LOG` as `xs.__iadd__([x])` would."""
    found: set[str] = set()
    declared: set[str] = set()
    counted: set[str] = set()  # `global N; N += 1`
    methods = MUTATORS if logs else MUTATORS - LOGS
    nodes = [n for fn in defs for n in walk(fn)]
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.Delete)):
            found.update(r for t in node.targets if not isinstance(t, ast.Name) for r in roots(t))
        elif isinstance(node, ast.AnnAssign) or (logs and isinstance(node, ast.AugAssign)):
            found.update(roots(node.target))
        elif isinstance(node, ast.Attribute) and node.attr in methods:  # called or handed on: `map(LOG.append, xs)`
            found.update(roots(node.value))
        elif isinstance(node, ast.Call):  # `DF.dropna(inplace=True)`, `np.add(A, 1, out=A)`
            found.update(r for k in node.keywords if k.arg == "out" for r in roots(k.value))
            found.update(roots(node.func.value) if isinstance(node.func, ast.Attribute) and _in_place(node) else ())
            picked = method(node.func) if isinstance(node.func, ast.Call) else None  # `getattr(LOG, "append")(x)`
            found.update(roots(picked[0]) if picked and (picked[1] is None or picked[1] in methods) else ())
            drawn = library_write(node, globs, logs) if globs is not None else None  # `RNG.random()`, `next(IT)`
            found.update([drawn] if drawn else ())
        elif isinstance(node, ast.Global):
            declared.update(node.names)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            counted.add(node.target.id)
    if not logs:  # a global only ever bumped is a count; not one also bound (`N = 0`, `del N`)
        bumped = {id(n.target) for n in nodes if isinstance(n, ast.AugAssign)}
        stored = (n for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load))
        declared -= counted - {n.id for n in stored if id(n) not in bumped}
    bound = bound_locals(nodes, globs)  # a local bound to a global, written into (`log.append(x)`), writes it
    found.update(n.target.id for n in nodes if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id in bound)
    found |= {g for n in found for g in bound.get(n, ())}
    # A shallow copy written below its own level (`c = dict(CFG); c["items"].append(x)`) writes the parts it shares.
    copies = [edge for edge in _bindings(defs) if edge[1] == "copy"]
    return frozenset(_spread(copies, found, _deep_writes(defs)) | declared)


def drawn_in(defs: list[ast.AST], globs: Mapping[str, Any], again: Callable[[], bool] = lambda: False) -> frozenset[str]:
    """The globals holding a library's object that `defs` change by a call
    (`changers.library_write`: `RNG.random()`, `next(IT)`, `MODEL.fit(X)`):
    what the call gives depends on what it changes, so a later call of the
    same step reads what this one left. A library's hidden generator
    (`random.random()` in a program seeding it) only when the step may be
    called again (`again`, asked only then: `hiddenrng.called_again`): a
    step drawing once from a seeded one replays what an uninterrupted run
    drew; another step drawing after it reads it. Not an object the step
    only calls as statements of their own, their results unused
    (`PBAR.update(1)`, `BUF.write(s)`), or stores into (`C[k] += 1`): what
    it computes holds nothing such a use gave back (its next call alike)."""
    nodes = [n for fn in defs for n in walk(fn)]
    calls = [n for n in nodes if isinstance(n, ast.Call)]
    hidden = {id(c) for c in calls if hidden_write(c, globs) is not None}
    found = frozenset(filter(None, (library_write(c, globs, False) for c in calls if id(c) not in hidden or again())))
    return found - unused_calls(nodes, found, globs) if found else found


# What fails on what an object holds (`try: D.pop(k) except KeyError: ...` computes from it).
_FAILING = frozenset({"pop", "popitem", "popleft", "remove", "index", "get", "get_nowait", "put_nowait", "__next__", "send", "throw"})


def unused_calls(nodes: list[ast.AST], names: frozenset[str], globs: Mapping[str, Any]) -> frozenset[str]:
    """Those of `names` (globals holding a library's object or a builtin
    container) whose every use among `nodes` is the receiver of a method
    call standing as a statement of its own (`PBAR.update(1)`,
    `BAR.set_description(s)`), or what a statement stores into (`C[k] +=
    1`): nothing there gives the code a value of it. Not a method that
    fails on what it holds (`D.pop(k)`), nor a queue, an iterator or a
    generator of random numbers (a draw as a statement moves what the next
    draw gives)."""
    parents = {id(c): p for p in nodes for c in ast.iter_child_nodes(p)}
    used: dict[str, bool] = {}
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in names:
            above = parents.get(id(node))
            call = parents.get(id(above))
            alone = (
                isinstance(above, ast.Attribute) and above.value is node and _unmoved(globs.get(node.id), above.attr)
                and isinstance(call, ast.Call) and call.func is above and isinstance(parents.get(id(call)), ast.Expr)
            )  # fmt: skip
            stored = isinstance(above, (ast.Subscript, ast.Attribute)) and above.value is node and not isinstance(above.ctx, ast.Load)
            used[node.id] = used.get(node.id, True) and (alone or (stored and _unmoved(globs.get(node.id), "")))
    return frozenset(n for n, alone in used.items() if alone and n in globs)


def _unmoved(value: object, attr: str) -> bool:
    """A library's object or container whose method `attr` gives nothing
    back the code uses, as a statement: not one a draw moves
    (`changers.library_changes`), but a stream written to (`BUF.write(s)`)."""
    if attr in _FAILING:
        return False
    if isinstance(value, io.IOBase):
        return attr in ("write", "writelines", "flush")
    kind = type(value)
    home = str(getattr(kind, "__module__", "")).partition(".")[0]
    rng = isinstance(value, random.Random) or (home == "numpy" and kind.__name__ in ("Generator", "RandomState"))
    return library_object(value) and not (rng or is_queue(value) or drawn(value))


def _in_place(call: ast.Call) -> bool:
    """`inplace=True` (pandas' way of changing the object it is called on)."""
    return any(k.arg == "inplace" and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in call.keywords)


def method(func: ast.AST) -> tuple[ast.expr, str | None] | None:
    """The object and the name of the method a call runs: `LOG.append`,
    `getattr(LOG, "append")` (None for a name the text does not spell)."""
    if isinstance(func, ast.Attribute):
        return func.value, func.attr
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr" and len(func.args) >= 2:
        name = func.args[1]
        return func.args[0], name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None
    return None


def calls_only(node: ast.AST, names: frozenset[str], written: frozenset[str], globs: Mapping[str, Any]) -> frozenset[str]:
    """Those of `names` holding a module of yours written for what a global
    of it holds (`helpers._WARNED` written, `helpers` with it:
    `helperreads.helper_writes`) that `node` uses only to call its
    functions (`helpers.warn_once(m)`), not the written attribute: what
    those functions read is told by their own code (`helper_readers`)."""
    found: set[str] = set()
    parents = {id(c): p for p in walk(node) for c in ast.iter_child_nodes(p)} if names else {}
    for name in names:
        module = globs.get(name)
        if not isinstance(module, types.ModuleType):
            continue
        mod = getattr(module, "__name__", "")
        ok = True
        for n in walk(node):
            if isinstance(n, ast.Name) and n.id == name:
                above, call = parents.get(id(n)), None
                if isinstance(above, ast.Attribute):
                    call = parents.get(id(above))
                ok = (
                    isinstance(above, ast.Attribute) and f"{mod}.{above.attr}" not in written
                    and isinstance(vars(module).get(above.attr), types.FunctionType)
                    and isinstance(call, ast.Call) and call.func is above
                )  # fmt: skip
                if not ok:
                    break
        if ok:
            found.add(name)
    return frozenset(found)
