"""The calls whose function only the run knows.

Pure standard library. `pick(kind)(xs)`, `f = HANDLERS.get(kind)` then
`f(xs)`, `getattr(cfg, name)(xs)`, `globals()[name](xs)` and `eval(...)`
call a function the text does not name: it may be any of the user's, and
fill any global (`fills`).
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterable, Iterator, Mapping

_RUNS_TEXT = frozenset({"eval", "exec"})  # run code given as text: any function


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
                if func.id in other or runs_text:
                    yield call
            elif not isinstance(func, (ast.Attribute, ast.Lambda)):
                yield call


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


def _names(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
