"""The user's functions a statement may call: those its calls name, and
those it names without calling them, which may be called where the text
does not show it.

Pure standard library. `f = configure` then `f(xs)`, `map(configure,
[xs])`, `partial(configure, xs)()`, `for f in SETTERS: f(xs)` and
`HANDLERS[kind](xs)` all run `configure` as surely as `configure(xs)`
does; a class called runs its `__init__`.
"""

from __future__ import annotations

import ast
import functools
import types
from collections.abc import Iterator, Mapping, Sequence

from .imports import head_module, import_head
from .reach import _MISSING
from .userclasses import methods_named, users_class
from .userfiles import is_user_file

MOST = 64  # functions followed from one call: a body's helpers, not a library
_HOLDERS = (list, tuple, set, frozenset)
_MADE = ("__init__", "__post_init__")  # what calling a class of the user's runs


def resolve(func: ast.AST, namespace: Mapping[str, object]) -> list[types.FunctionType]:
    """The user's Python functions a name chain names, through modules and
    classes only (looked up without running a property): the function,
    and those it wraps (a step, a decorator using `functools.wraps`)."""
    value = _value(func, namespace)
    if isinstance(value, type) and users_class(value):
        return [f for name in _MADE for f in _followed(_in_class(value, name))]
    if value is None and isinstance(func, ast.Attribute) and _unknown_head(func, namespace):
        return [f for member in methods_named(func.attr) for f in _followed(member)]
    return _followed(value)


def _unknown_head(func: ast.Attribute, namespace: Mapping[str, object]) -> bool:
    """Whether `func` is the method of an object of a class the text does not
    name: a local's, a parameter's, a call's result (`make().load`)."""
    chain = list(_chain(func))
    return not chain or _head(chain[0], namespace) is None


def referenced(node: ast.AST, namespace: Mapping[str, object]) -> list[types.FunctionType]:
    """The user's functions `node` names other than as the function of a
    call: given on, bound to a local, or held in a list, tuple, set or dict
    it names (only one level down: a registry of handlers); and the methods
    of a class of the user's it names or makes, or of an object of one
    (`s = Settings(); s.load(rate)`)."""
    calls = [sub for sub in ast.walk(node) if isinstance(sub, ast.Call)]
    called = {id(sub.func) for sub in calls}
    inner = {id(sub.value) for sub in ast.walk(node) if isinstance(sub, ast.Attribute)}
    # What durable runs (`loop_over(fn, items)`, `durable.step(fn)`) it runs
    # as a step: what that fills is filled only when it runs, and it is
    # recorded on its own (see `_followed`).
    given = {id(a) for c in calls if _durables(c.func, namespace) for a in _arguments(c)}
    found: list[types.FunctionType] = []
    for sub in ast.walk(node):
        found += _stored_into(sub, namespace)
        if not isinstance(sub, (ast.Name, ast.Attribute)) or not isinstance(sub.ctx, ast.Load):
            continue
        if id(sub) in inner or id(sub) in given:
            continue
        value = _value(sub, namespace)
        if id(sub) not in called:
            found += resolve(sub, namespace)
            held = value.values() if isinstance(value, dict) else value if isinstance(value, _HOLDERS) else ()
            found += [f for item in list(held)[:MOST] for f in _followed(item)]
        cls = value if isinstance(value, type) else type(value)
        if users_class(cls) and not isinstance(value, types.FunctionType):
            found += _methods(cls)
    return found


_OPERATORS = {"Add": "add", "Sub": "sub", "Mult": "mul", "MatMult": "matmul", "Div": "truediv",
              "FloorDiv": "floordiv", "Mod": "mod", "Pow": "pow", "LShift": "lshift", "RShift": "rshift",
              "BitOr": "or", "BitXor": "xor", "BitAnd": "and"}
_DUNDERS = {ast.Attribute: ("__setattr__", "__delattr__"), ast.Subscript: ("__setitem__", "__delitem__")}


def _stored_into(sub: ast.AST, namespace: Mapping[str, object]) -> list[types.FunctionType]:
    """The methods a store into an object runs: a property's setter,
    `__setattr__`, `__setitem__`, `__iadd__` (`SETTER.rate = r`, `obj[k] =
    v`, `SETTER += r`), of its class when the text names the object, else
    those of that name of every class of the user's (`runtime`)."""
    if isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
        op = _OPERATORS.get(type(sub.op).__name__, "")
        owner, names = namespace.get(sub.target.id), [f"__i{op}__", f"__{op}__"]
    elif isinstance(sub, (ast.BinOp, ast.UnaryOp, ast.Compare)):
        return [f for operand, names in _operands(sub) for f in _run_on(operand, names, namespace)]
    elif isinstance(sub, (ast.Attribute, ast.Subscript)) and not isinstance(sub.ctx, ast.Load):
        owner = _value(sub.value, namespace)
        names = [*_DUNDERS[type(sub)], *([sub.attr] if isinstance(sub, ast.Attribute) else [])]
    else:
        return []
    if owner is None:
        return [f for name in names for member in methods_named(name) for f in _followed(member)]
    cls = owner if isinstance(owner, type) else type(owner)
    return _methods(cls) if users_class(cls) and not isinstance(owner, types.FunctionType) else []


# Not `==`, `<`, `not x`: `__eq__`, `__lt__`, `__bool__` and `__len__` are in
# most classes (a dataclass makes them), whose running fills nothing, yet
# followed by name they made what a body fills hang on which modules a
# process had loaded: a resume in another one was refused.
_UNARY = {"UAdd": "pos", "USub": "neg", "Invert": "invert"}


def _operands(sub: ast.BinOp | ast.UnaryOp | ast.Compare) -> Iterator[tuple[ast.expr, list[str]]]:
    """Each operand of an operator and the methods of its class the
    operator may run (`acc + r`: `acc.__add__`, else `r.__radd__`; `r in
    acc`: `acc.__contains__`)."""
    if isinstance(sub, ast.BinOp):
        op = _OPERATORS.get(type(sub.op).__name__, "")
        yield from ((sub.left, [f"__{op}__"]), (sub.right, [f"__r{op}__"]))
    elif isinstance(sub, ast.UnaryOp) and type(sub.op).__name__ in _UNARY:
        yield sub.operand, [f"__{_UNARY[type(sub.op).__name__]}__"]
    elif isinstance(sub, ast.Compare):
        pairs = zip(sub.ops, sub.comparators, strict=True)
        yield from ((right, ["__contains__"]) for op, right in pairs if isinstance(op, (ast.In, ast.NotIn)))


def _run_on(operand: ast.expr, names: list[str], namespace: Mapping[str, object]) -> list[types.FunctionType]:
    """The methods named `names` an operation on `operand` may run: of its
    class when the text names the object (its methods count already, as
    `referenced` names it), else of every class of the user's (`runtime`);
    none on a literal."""
    if isinstance(operand, (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Set, ast.Dict)):
        return []
    if _value(operand, namespace) is not None:
        return []
    return [f for name in names for member in methods_named(name) for f in _followed(member)]


def _durables(func: ast.AST, namespace: Mapping[str, object]) -> bool:
    module = getattr(_value(func, namespace), "__module__", None)
    return isinstance(module, str) and module.partition(".")[0] == "durable"


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(k.value for k in call.keywords)]


def _methods(cls: type) -> list[types.FunctionType]:
    """The user's functions a class holds, its bases' too."""
    members = [v for k in cls.__mro__[:-1] for v in vars(k).values()]
    return [f for v in members[: MOST * 4] for f in _followed(v)]


def _value(func: ast.AST, namespace: Mapping[str, object]) -> object:
    chain = list(_chain(func))
    value: object = _head(chain[0], namespace) if chain else None
    for attr in chain[1:]:
        if isinstance(value, types.ModuleType):
            value = vars(value).get(attr)
        elif isinstance(value, type):
            value = _in_class(value, attr)
        elif users_class(type(value)):  # `SETTER.set` of `SETTER = Setter()`
            value = _in_class(type(value), attr)
        else:
            return None
    return value


def _head(name: str, namespace: Mapping[str, object]) -> object:
    """What a chain's first name holds: a global, or the module of the
    user's an `import_module("p.setup")` at its head returns."""
    module = head_module(name)
    return namespace.get(name) if module is _MISSING else module


def _in_class(cls: type, attr: str) -> object:
    return next((vars(k)[attr] for k in cls.__mro__ if attr in vars(k)), None)


def _followed(value: object) -> list[types.FunctionType]:
    # `SET = partial(configure)`, `SET = REG.register`: the function they call
    while isinstance(value, functools.partial):
        value = value.func
    if isinstance(value, (staticmethod, classmethod, types.MethodType)):
        value = value.__func__
    if isinstance(value, property):  # `obj.rate = r` runs its setter
        return [f for part in (value.fget, value.fset, value.fdel) for f in _followed(part)]
    found: list[types.FunctionType] = []
    # A step (or child workflow, no function) is not followed: what it fills
    # is filled only when it runs, and its call's own arguments (and what its
    # closure holds) already make it a changed call on such a resume, after
    # which the rest of the run runs again or is refused; counting what it
    # fills (`executed.append(name)`) would make its own replay a change.
    while isinstance(value, types.FunctionType) and len(found) < MOST:
        if hasattr(value, "__durable_step__"):
            break
        # The user's own code: a library's globals (numpy's random state) are
        # program state, as a database's rows are; and following durable's
        # own functions would find its bookkeeping.
        root = (value.__module__ or "").partition(".")[0]
        if is_user_file(value.__code__.co_filename, root):
            found.append(value)
        value = getattr(value, "__wrapped__", None)
    return found


def _chain(func: ast.AST) -> Iterator[str]:
    if isinstance(func, ast.Attribute):
        head = list(_chain(func.value))
        if head:
            yield from (*head, func.attr)
    elif isinstance(func, ast.Name):
        yield func.id
    elif (imported := import_head(func)) is not None:  # `importlib.import_module("p.setup").setup`
        yield imported


Later = ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef
# Where what a statement runs runs: (the line calling it, the line defining
# it), the same line twice outside a function defined in the body; None
# when it cannot be told (every argument).
Runs = tuple[int, int] | None


class Deferred:
    """The functions and lambdas defined in a body that are not steps: what
    they run, they run where they are called, not where they are defined.
    A function called by name there runs at that call (with what it reads
    where it is defined: its closure); one given on, decorated, called
    from another such function or never called by name, and a lambda not
    bound to a name, run where it cannot be told."""

    def __init__(self, body: Sequence[ast.AST]) -> None:
        self.nodes = [n for stmt in body for n in runs_later(stmt)]
        bound = {
            id(sub.value): sub.targets[0].id
            for stmt in body
            for sub in ast.walk(stmt)
            if isinstance(sub, ast.Assign) and len(sub.targets) == 1
            and isinstance(sub.targets[0], ast.Name) and isinstance(sub.value, ast.Lambda)
        }
        self._named = {id(n): _name_of(n, bound) for n in self.nodes}
        self._inside = {id(n): {id(s) for s in ast.walk(n)} for n in self.nodes}
        called = {id(c.func) for stmt in body for c in ast.walk(stmt) if isinstance(c, ast.Call)}
        self._uses: dict[str, list[tuple[ast.Name, bool]]] = {}
        for stmt in body:
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                    self._uses.setdefault(sub.id, []).append((sub, id(sub) in called))

    def runs_at(self, line: int) -> list[Runs]:
        """Where what the body's `line` runs runs."""
        around = [n for n in self.nodes if n.lineno <= line <= (n.end_lineno or n.lineno)]
        if not around:
            return [(line, line)]
        return self.runs_of(max(around, key=lambda n: (n.lineno, n.col_offset)))

    def runs_of(self, node: Later) -> list[Runs]:
        """Where the function or lambda `node` runs."""
        name = self._named[id(node)]
        if name is None:
            return [None]
        found: list[Runs] = []
        for use, direct in self._uses.get(name, []):
            if id(use) in self._inside[id(node)]:
                continue  # itself, recursively
            later = any(id(use) in inside for inside in self._inside.values())
            found.append((use.lineno, node.lineno) if direct and not later else None)
        return found or [None]


def _name_of(node: Later, bound: dict[int, str]) -> str | None:
    if isinstance(node, ast.Lambda):
        return bound.get(id(node))
    return None if node.decorator_list else node.name


def runs_later(stmt: ast.AST) -> Iterator[Later]:
    """The functions and lambdas defined in `stmt` that are not steps."""
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Lambda):
            yield sub
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _a_step(sub):
            yield sub


def _a_step(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Decorated `@durable.step`/`@step(...)` or as a workflow: it fills only when it runs."""
    for deco in node.decorator_list:
        head = deco.func if isinstance(deco, ast.Call) else deco
        names = list(_chain(head))
        if names and names[-1] in ("step", "workflow"):
            return True
    return False
