"""The calls whose function only the run knows.

Pure standard library. `pick(kind)(xs)`, `f = HANDLERS.get(kind)` then
`f(xs)`, `getattr(cfg, name)(xs)`, `globals()[name](xs)`, `import_module(name).setup(xs)`
and `eval(...)`
call a function the text does not name: it may be any of the user's, and
fill any global (`fills`). So does `apply(pick(kind), xs)` when `apply`
calls its parameter: it calls what it is handed.
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Iterable, Iterator, Mapping

from .callees import _value, resolve
from .imports import untold_import
from .ownpath import is_durable
from .source import find_definitions, source_of

_RUNS_TEXT = frozenset({"eval", "exec"})  # run code given as text: any function
_BUILTINS = frozenset(dir(builtins))


def run_time_calls(nodes: Iterable[ast.AST], namespace: Mapping[str, object]) -> Iterator[ast.Call]:
    """The calls among `nodes` whose function is known only at run time: the
    result of a call or of an item lookup, a local the statements bind other
    than to a name the module holds (`f = configure`) or a definition, and
    `eval`/`exec`."""
    nodes = list(nodes)
    plain, other = _bindings(nodes, namespace)
    for node in nodes:
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            if isinstance(func, ast.Name):
                runs_text = func.id in _RUNS_TEXT and func.id not in namespace and func.id not in plain
                if func.id in other or runs_text or _hands_unknown(call, namespace, plain, other):
                    yield call
            elif isinstance(func, ast.Call) and _with_options(func, namespace):
                continue  # `child.with_options(run_id="x")(y)` runs `child`, as `child(y)` does
            elif not isinstance(func, (ast.Attribute, ast.Lambda)) or _hands_unknown(call, namespace, plain, other):
                yield call
            elif untold_import(func):
                yield call


def _with_options(call: ast.Call, namespace: Mapping[str, object]) -> bool:
    """Whether `call` is `X.with_options(...)` of a workflow or a step the
    text names: its result is that workflow with other options (a child
    run's own id), whose call is not followed (`callees._followed`). Taken
    for a function only the run knows, it made a body calling
    `child.with_options(run_id="shared")(1)` in a statement reading `n`
    fill any global from `n`: a step of a shared child run, replayed under
    another parent's `n`, was a changed call."""
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr == "with_options" and is_durable(_value(func.value, namespace))


def _hands_unknown(call: ast.Call, namespace: Mapping[str, object], plain: set[str], other: set[str]) -> bool:
    """Whether `call` hands something other than a function the text names
    (`set_rate`, `cfg.configure`, a definition, a lambda) to a parameter a
    function of the user's it calls calls (`def apply(fn, x): fn(x)`)."""
    if not isinstance(call.func, (ast.Name, ast.Attribute)):
        return False
    for fn in resolve(call.func, namespace):
        called = _called_parameters(fn)
        code = fn.__code__
        positional = code.co_varnames[: code.co_argcount]
        handed = [a for i, a in enumerate(call.args) if i < len(positional) and positional[i] in called]
        handed += [k.value for k in call.keywords if k.arg in called]
        if called and any(isinstance(a, ast.Starred) for a in call.args):
            handed = [*call.args, *(k.value for k in call.keywords)]
        if any(not _names_a_function(a, namespace, plain - other, other) for a in handed):
            return True
    return False


def _called_parameters(fn: types.FunctionType) -> frozenset[str]:
    """The parameters `fn` calls (`fn(x)` of a parameter `fn`), at any depth
    of its body; every one when its source cannot be read."""
    code = fn.__code__
    params = frozenset(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    src = source_of(code.co_filename, fn.__globals__)
    known = _CALLED.get(id(code))
    if known is not None and known[0] is code and known[1] is src:
        return known[2]
    nodes = find_definitions(code, src)
    funcs = (c.func for c in ast.walk(nodes[0]) if isinstance(c, ast.Call)) if len(nodes) == 1 else None
    called = params if funcs is None else frozenset(f.id for f in funcs if isinstance(f, ast.Name) and f.id in params)
    if len(_CALLED) >= 4096:
        _CALLED.clear()
    _CALLED[id(code)] = (code, src, called)
    return called


# id(code) -> (the code, the source read, the parameters it calls): once per
# function and text (an edit reads another source object)
_CALLED: dict[int, tuple[types.CodeType, object, frozenset[str]]] = {}


def _names_a_function(expr: ast.expr, namespace: Mapping[str, object], plain: set[str], other: set[str]) -> bool:
    """Whether `expr` is a function the text names (followed as such:
    `referenced`; a builtin), or no function at all (a constant)."""
    if isinstance(expr, (ast.Lambda, ast.Constant)):
        return True
    if isinstance(expr, ast.Name) and (expr.id in plain or _builtin(expr.id, namespace, other)):
        return True
    return isinstance(expr, (ast.Name, ast.Attribute)) and _held(expr, namespace) is not None


def _bindings(nodes: list[ast.AST], namespace: Mapping[str, object]) -> tuple[set[str], set[str]]:
    """(names bound to what the module holds or to a definition, names bound
    to anything else) by `nodes`."""
    plain: set[str] = set()
    other: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                plain.add(sub.name)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                plain.update((a.asname or a.name).partition(".")[0] for a in sub.names)
            elif isinstance(sub, ast.Assign):
                _bind(sub.targets, sub.value, namespace, plain, other)
            elif isinstance(sub, (ast.AnnAssign, ast.NamedExpr)) and sub.value is not None:
                _bind([sub.target], sub.value, namespace, plain, other)
            elif isinstance(sub, (ast.For, ast.AsyncFor, ast.comprehension)):
                _bind([sub.target], sub.iter, namespace, plain, other)
            elif isinstance(sub, (ast.AugAssign, ast.withitem, ast.ExceptHandler)):
                target = getattr(sub, "target", None) or getattr(sub, "optional_vars", None)
                other.update(_names(target) if target is not None else [])
                other.update([sub.name] if isinstance(sub, ast.ExceptHandler) and sub.name else [])
            elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
                other.add(sub.name)
    return plain, other


def _bind(
    targets: list[ast.expr], value: ast.expr, namespace: Mapping[str, object], plain: set[str], other: set[str]
) -> None:
    # `f = configure`, `for f in SETTERS`: what `callees.referenced` follows
    held = isinstance(value, ast.Lambda) or _held(value, namespace) is not None
    for target in targets:
        (plain if held and isinstance(target, ast.Name) else other).update(_names(target))


def _held(expr: ast.expr, namespace: Mapping[str, object]) -> object:
    chain: list[str] = []
    while isinstance(expr, ast.Attribute):
        chain.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in namespace:
        return None
    value = namespace[expr.id]
    for attr in reversed(chain):
        if not isinstance(value, (types.ModuleType, type)):
            return None
        value = vars(value).get(attr)
    return value


def _builtin(name: str, namespace: Mapping[str, object], other: set[str]) -> bool:
    return name in _BUILTINS - _RUNS_TEXT and name not in namespace and name not in other


def _names(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
