"""The instances a metaclass of the user's keeps (a singleton: `Cfg()`
gives the object a module-level `Cfg(K)` made), counted with the class
that is read (`contents`).

Pure standard library. Calling such a class runs its metaclass's
`__call__`, which fills a dict or list on the metaclass (`Single._made[cls]
= ...`, `cls._instances[cls] = ...`): the class statement's text is the same
whatever `K` was, so counted by it alone, `Cfg().k` in a cached step was
served the output computed with another process's `K`.
"""

from __future__ import annotations

import ast
import inspect
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigurationError
from .bindings import module_statements
from .doers import doer
from .elsewhere import called_elsewhere
from .imports import user_class
from .inplace import _called_names, _callees, run_now, units
from .nodes import walk
from .outsidevalues import held_tokens
from .reach import _cell_value, code_objects
from .source import parse
from .witness import witnessed

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def kept_instances(
    cls: type, name: str, namespace: Mapping[str, Any], tokens: Callable[[Any], list[str] | None]
) -> list[str]:
    """The tokens (by `tokens`, as they are now) of what making an object
    of `cls` keeps, when a module-level statement makes one (`Cfg(K)`, or
    `configure()` calling it, in the module reading `name` or the class's
    own, or another module calling it): the data attributes its metaclass's
    `__call__` names (`Single._made[cls]`, `cls._instances[cls]`), and
    those of the class its `__new__`, `__init__` or `__post_init__` names
    (`cls._instance = ...`, a Borg's `self.__dict__ = Borg._shared`); []
    otherwise. Instances the steps make on first use are state they keep
    (`Client()` in a step): counted, a completed run would be refused on
    its next call in that process."""
    metas = [m for m in inspect.getmro(type(cls)) if m is not type and m is not object and user_class(m)]
    owners = [k for k in cls.__mro__ if k is not object and user_class(k)]
    held = (*_named(cls, metas, ("__call__",)), *_named(cls, owners, ("__new__", "__init__", "__post_init__")))
    if not held:
        return []
    home = sys.modules.get(cls.__module__)
    spaces = [(namespace, name), *([(vars(home), cls.__name__)] if home is not None else [])]
    if not any(_made_at_import(space, called) for space, called in spaces):
        return []
    toks: list[str] = witnessed(_kept_tokens, cls, held, tokens)
    return toks


def closure_instances(fn: object, tokens: Callable[[Any], list[str] | None]) -> list[str]:
    """The tokens of the instance a decorator's closure keeps for the class
    it holds (`@singleton`: `get` holding `cls` and `instances`, filling
    `instances[cls]`), when a module-level statement calls the decorated
    name (`Cfg(K)`): else [] (its dict counts by type, as a function's
    cache does). Made at import from the environment, the same class text
    served K=2's output to K=3. Not the one the steps make on first use:
    state they keep, counted it would refuse the completed run."""
    values = [_cell_value(c) for c in getattr(fn, "__closure__", None) or ()]
    kept = [v for v in values if type(v) is dict]
    classes = [v for v in values if isinstance(v, type) and user_class(v)] if kept else []
    for cls in classes:
        home = sys.modules.get(cls.__module__)
        space = vars(home) if home is not None else {}
        if any(_made_at_import(space, n) for n in witnessed(_names_of, space, fn)):
            return list(witnessed(_kept_entries, cls, tuple(kept), tokens))
    return []


def _names_of(space: Mapping[str, Any], fn: object) -> list[str]:
    return [n for n, v in list(space.items()) if v is fn]


def _kept_entries(
    cls: type, kept: tuple[dict[Any, Any], ...], tokens: Callable[[Any], list[str] | None]
) -> list[str]:
    entries = [e for d in kept if cls in d for e in ("<kept", *_told(d[cls], tokens), ">")]
    return [f"type:{cls.__qualname__}", *entries]


def _named(cls: type, owners: list[type], makers: tuple[str, ...]) -> tuple[tuple[type, str], ...]:
    """(class, attribute) of each attribute of `owners` that the code of
    their `makers` names and that keeps an instance: an object of `cls`
    (`cls._instance`), a list, dict or set (a metaclass's `_instances`,
    the entry of `cls` is taken), a dict given as the instances' `__dict__`
    (a Borg's `_shared`). Not a counter (`Job.created += 1` in `__init__`,
    a `Job()` in a step too): counted, each call made the next look changed."""
    found: list[tuple[type, str]] = []
    for owner in owners:
        members = vars(owner)
        codes = [c for m in makers if isinstance(c := _code(members.get(m)), types.CodeType)]
        named = {n for c in codes for co in code_objects(c) for n in co.co_names}  # comprehensions' too
        keeps = (list, dict, set) if owner not in cls.__mro__ else dict if "__dict__" in named else ()
        found += [
            (owner, n) for n in sorted(named)
            if n in members and (isinstance(members[n], cls) or isinstance(members[n], keeps))
        ]  # fmt: skip
    return tuple(found)


def _code(member: object) -> object:
    return getattr(getattr(member, "__func__", member), "__code__", None)


def _made_at_import(namespace: Mapping[str, Any], name: str) -> bool:
    try:
        body = module_statements(namespace)
    except ConfigurationError:  # the file was edited: refused where the class is read
        return False
    body = _cells(namespace) if body is None else body
    return _calls_at_import(tuple(body), name) or called_elsewhere(namespace, name)


def _cells(namespace: Mapping[str, Any]) -> list[ast.AST]:
    """A notebook's statements, which no file holds: the cells run so far
    (IPython keeps their text in `_ih`), each text once."""
    cells = namespace.get("_ih")
    texts = dict.fromkeys(t for t in cells if isinstance(t, str)) if isinstance(cells, list) else {}
    return [stmt for text in texts for stmt in getattr(parse(text).tree, "body", [])]


_SEEN: dict[tuple[int, str], tuple[tuple[ast.AST, ...], bool]] = {}


def _calls_at_import(body: tuple[ast.AST, ...], name: str) -> bool:
    """Whether a module-level statement calls `name` as it runs, or a
    function (no step) calling it in turn. Once per parsed source and name:
    a statement's syntax never changes (an edit parses anew)."""
    key = (id(body[0]) if body else 0, name)
    seen = _SEEN.get(key)
    if seen is not None and seen[0] == body:
        return seen[1]
    stmts = list(units(list(body)))
    later = {s.name: _callees(s)[1] for s in body if isinstance(s, _FUNCS) and doer(s)}
    later.update((n, _called_names(walk(f.body))) for n, f in map(_named_lambda, stmts) if f is not None)
    makers, grown = {name}, True
    while grown:  # `def configure(): Cfg(K)`, `def main(): configure()`, `get = lambda: Cfg(K)`
        more = {n for n, called in later.items() if n not in makers and not makers.isdisjoint(called)}
        makers |= more
        grown = bool(more)
    found = any(not makers.isdisjoint(_now(s)) for s in stmts)
    if len(_SEEN) >= 256:
        _SEEN.clear()
    _SEEN[key] = (body, found)
    return found


def _named_lambda(stmt: ast.AST) -> tuple[str, ast.Lambda | None]:
    """`NAME = lambda: Cfg()`: a function, as a `def` is, whose body runs
    when it is called (a module-level call of NAME then makes one), not at
    import. Not a lambda handed to a call (`run(lambda: Cfg())`): called there."""
    if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Lambda):
        return "", None
    target = stmt.targets[0] if len(stmt.targets) == 1 else None
    return (target.id, stmt.value) if isinstance(target, ast.Name) else ("", None)


def _now(stmt: ast.AST) -> set[str]:
    """The names a module-level statement calls as it runs (of a named
    lambda, those its defaults call)."""
    _, fn = _named_lambda(stmt)
    if fn is None:
        return _callees(stmt)[0]
    defaults = [*fn.args.defaults, *(d for d in fn.args.kw_defaults if d is not None)]
    return _called_names(n for d in defaults for n in run_now(d))


def _kept_tokens(
    cls: type, held: tuple[tuple[type, str], ...], tokens: Callable[[Any], list[str] | None]
) -> list[str]:
    """Each attribute by what it holds (of a dict keyed by classes, the
    entry of `cls`): a key by what it is, a value by `tokens` (an instance
    by its plain attributes; a client's lock none: by its class)."""
    toks: list[str] = []
    for owner, attr in held:
        value = vars(owner).get(attr)
        if not isinstance(value, (list, dict, set)):
            toks += [f"<kept:{owner.__qualname__}.{attr}", *_told(value, tokens), ">"]
            continue
        # Keyed by class, the entry `cls()` gives: not those the steps make of others.
        pairs = [(k, v) for k, v in _pairs(value) if k is cls or not isinstance(k, type)]
        entries = [_told(key, held_tokens) + _told(item, tokens) for key, item in pairs]
        entries = sorted(entries) if isinstance(value, set) else entries  # in no order: sorted
        toks += [f"<kept:{owner.__qualname__}.{attr}", *(t for e in entries for t in e), ">"]
    return toks


def _told(value: object, tokens: Callable[[Any], list[str] | None]) -> list[str]:
    return tokens(value) or [f"obj:{type(value).__qualname__}"]


def _pairs(value: list[Any] | dict[Any, Any] | set[Any]) -> list[tuple[Any, Any]]:
    return list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
