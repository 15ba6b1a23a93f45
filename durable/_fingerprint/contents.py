"""Globals a module's own statements change in place, which count by their
contents too (`reads`).

Pure standard library."""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ..errors import ConfigurationError
from .anybind import imports_alone, may_bind_any
from .assigned import assigned_into
from .attributes import attribute_tokens, settings_object
from .bindings import binding_statements
from .elsewhere import called_elsewhere, changed_elsewhere
from .executors import runs_code_only
from .imports import user_class, user_module
from .inplace import run_now
from .outside import imported_from, reads_outside
from .outsidevalues import (
    class_outside_tokens,
    holds_values,
    items_tokens,
    outside_tokens,
)
from .ownpath import bound_again, bound_in_places, chosen_outside, class_made_by
from .reach import code_objects, identity_of
from .singletons import closure_instances, kept_instances
from .unseen import unseen_change, unseen_part
from .values import content_tokens, fresh_token, hash_tokens, plain_tokens
from .witness import witnessed

_MISSING = object()
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def contents_part(
    name: str,
    obj: object,
    namespace: Mapping[str, Any],
    checked_file: str | None = None,
    *,
    running: bool = True,
    elsewhere: bool = True,
    _via: frozenset[int] = frozenset(),
) -> str | None:
    """The hash of `obj`'s contents when the module's own statements change it in place,
    through `name` or another name bound to it (`CONFIG["k"] = 7`, `MODEL.update(k=7)`,
    in a loop too), else None. Such a global holds, when a step runs, what the module
    has run so far, while its statements are all in the file from the start: counted by
    them alone, a call made after `CONFIG["k"] = 7` was served the output of one made before. So
    does a list, dict or set of plain data, an array (`buffer_tokens`) or an object of
    the user's class, that a module-level call changes through a function or method
    (`set_lr(lr)`, `fill(CONFIG, lr)`, `PARAMS.set("lr", lr)` in a loop: the same text,
    another value each pass), or that a module-level loop binds anew on each pass (`for
    cfg in configs:`, `model = Model(lr)` in its body), or that another module's
    module-level statement changes (`helpers.CFG["k"] = 2` in a script; `elsewhere`),
    where the function reads it (`running`): not a value only a statement it follows
    reads (`args` in `wf.run(**args)`, a statement that also calls `sys.exit` of a body
    reading `sys`): that made every resume of such a script refused. Not a state only
    functions change (`RUNS = []` a step appends to: else no call would hit), nor what
    is not plain data; an object by its plain attributes (`attribute_tokens`); not a
    pool or a Dask client (`runs_code_only`). A library's object a module-level loop
    changes, whose contents cannot be told, counts as changed on every call (fail
    closed). Bound by `from cfg import CFG`, also what changes cfg's `CFG`."""
    if witnessed(runs_code_only, obj):  # where code runs: a client's id is new in each process
        return None
    own = _contents_here(name, obj, namespace, checked_file, running, elsewhere)
    if not running or isinstance(obj, type):
        return own
    found = binding_statements(name, namespace, checked_file) or []
    homes = {id(vars(home)): (home, attr) for stmt in found for home, attr in imported_from(stmt, namespace, name)}
    via = _via | {id(namespace)}  # `from a import X` in b and `from b import X` in a: once each
    theirs = [contents_part(attr, obj, vars(home), elsewhere=elsewhere, _via=via) for home, attr in homes.values()
              if id(vars(home)) not in via and vars(home).get(attr) is obj]  # fmt: skip
    theirs += [witnessed(unseen_part, name, obj, namespace) if elsewhere else None]  # `flow.CFG[k] = 3` typed
    parts = [p for p in (own, *theirs) if p is not None]
    return own if parts in ([], [own]) else hash_tokens(parts)


def _contents_here(
    name: str, obj: object, namespace: Mapping[str, Any], checked_file: str | None, running: bool, elsewhere: bool
) -> str | None:
    if isinstance(obj, type):  # `self.LR` of a class whose body reads `os.environ`
        constants = class_outside_tokens(obj, name, namespace)
        constants += witnessed(class_made_by, obj, name, namespace, checked_file)  # `class C` twice
        constants += kept_instances(obj, name, namespace, _running_tokens)  # `Cfg()` of a singleton
        return hash_tokens(constants) if constants else None
    found = binding_statements(name, namespace, checked_file)
    if found is None:  # `from c import *`: X is c's, as `reads._bound` follows it
        found = binding_statements("*", namespace, checked_file) or []
    # A library's module is not changed by a call of its functions (`np.add(a, b)`, `np.sort(a)`):
    # counted by its attributes, numpy's differ in each process (every resume was refused).
    module = name if isinstance(obj, types.ModuleType) and not witnessed(user_module, obj) else ""
    changed = sorted({n for stmt in found for n in assigned_into(stmt, module)})
    # `helpers.CFG["k"] = 2` in a script (`elsewhere`: not for a module read whole).
    changed += [name] if running and elsewhere and witnessed(changed_elsewhere, namespace, name) else []
    # `CFG = {"k": 1}` ... `CFG = {"k": 2}`: which ran last decides, not the statements.
    changed += [name] if running and witnessed(bound_again, name, namespace, checked_file) else []
    toks = None
    # A number a function rebinds with `global` from outside, that a module-level
    # call runs (`main()` setting `RATE = args.rate`), counts by value too.
    # So does what a partial of a library's function binds (`partial(round, ndigits=N)`), what
    # `itemgetter(K)` gets, the object of a bound method (`CFG.get`): callables that hold values.
    read = running and (type(obj) in _SCALARS or holds_values(obj))
    running = running and _holds_data(obj)
    runs = [s for s in found if _runs_over(s, name, namespace)] if running else []
    if runs:
        looped = any(map(_looped, runs))
        toks = witnessed(_running_tokens, obj, looped)  # a client: by its statements
        if toks is None and looped and not user_class(type(obj)):
            return str(witnessed(fresh_token))  # a library's object nothing tells: changed
        changed += [name] if toks is not None else []
    if not any(witnessed(namespace.get, n, _MISSING) is obj for n in changed):
        outside = (running or read) and reads_outside(found, namespace, checked_file, name)
        # Rebound with `global` by a function another module calls (`cfg.configure(args.k)`).
        outside = outside or (read and any(_called(s, namespace) for s in found))
        toks = witnessed(outside_tokens, obj, tuple(found), namespace.get("__name__")) if outside else None
        return None if toks is None else hash_tokens(toks)
    if toks is None and module and all(imports_alone(s, name) for s in found):
        # `import logging` twice: which ran last, a library's module, by its name; its attributes
        # differ in each process (logging's `_startTime`: every resume was refused)
        return hash_tokens([f"module:{obj.__name__}"])  # type: ignore[attr-defined]
    toks = toks if toks is not None else witnessed(content_tokens, obj)
    if toks is None:  # an object (a function, a namespace): its plain attributes
        toks = witnessed(attribute_tokens, obj)
    if toks is None:  # a NamedTuple rebound, an OrderedDict: what it holds
        toks = witnessed(items_tokens, obj)
    return None if toks is None else hash_tokens(toks)


def closure_kept(fn: object) -> list[str]:
    """What a decorator's closure keeps for a module-level call (`singletons`)."""
    return closure_instances(fn, _running_tokens)


def class_attribute_part(key: str, cls: type, obj: object) -> dict[str, str]:
    """A class's list, dict or set read through it (`Base.registry`) by its
    contents, when module-level statements change the class in place
    (`Base.registry["x"] = K`, `Base.configure(K)`, a script's `Config.model.k
    = 2`, code with no text: `unseen`) or its own `__init_subclass__` may fill
    it as subclasses are made (`class Sub(Base, k=K)`): their text is the same
    whatever `K` was, before and after they ran. {} otherwise: the class statement counts."""
    home = sys.modules.get(cls.__module__)
    if home is None or "." in cls.__qualname__ or not _holds_data(obj):
        return {}
    names, name = vars(home), cls.__name__
    try:
        found = binding_statements(name, names) or []
    except ConfigurationError:
        return {}
    init = vars(cls).get("__init_subclass__")
    code = getattr(getattr(init, "__func__", init), "__code__", None)
    # An attribute its code names (`Base.registry[...] = k`), not a cache the steps fill.
    filled = code is not None and any(key.rpartition(".")[2] in c.co_names for c in code_objects(code))  # comprehensions too
    changed = any(name in assigned_into(s) or _runs_over(s, name, names) for s in found)
    if not filled and not changed and not witnessed(changed_elsewhere, names, name) and not witnessed(unseen_change, names, name):
        return {}
    toks = witnessed(_running_tokens, obj, False)
    return {} if toks is None else {"now:" + key: hash_tokens(toks)}


def module_state(module: types.ModuleType) -> str | None:
    """For a module read whole (`globals()[name]`, `getattr(helpers,
    name)`): the hash of the plain data its own statements rebind (`K = 1`
    ... `K = 2`) or change in place, as it is now, else None. Its statements
    are all in the file from the start: counted by them alone, a call made
    after `K = 2` was served the output of one made before, where a name
    read directly counts by its value. A name one statement binds counts by
    that statement alone (a value from the clock does not refuse a resume)."""
    namespace = vars(module)
    toks: list[str] = []
    for name, value in sorted((k, v) for k, v in list(namespace.items()) if not k.startswith("__")):
        plain = plain_tokens(value, mutable=False) if bound_again(name, namespace) else None
        part = hash_tokens(plain) if plain is not None else contents_part(name, value, namespace, elsewhere=False)
        toks += [name, part] if part is not None else []
    return hash_tokens(toks) if toks else None


def bound_part(
    key: str, name: str, obj: object, namespace: Mapping[str, Any], checked_file: str | None, cls: type | None = None,
    places: bool = False,
) -> dict[str, str]:
    """Which function a name holds now, by its identity, when several statements bind it (`h = h1` ... `h = h2`),
    one chooses it by what it reads from the environment or a file (`{"a": t7, "b": t5}[os.environ["MODE"]]`),
    another module sets it (`stages.PICK = f` in a script's `main()`), or it is a class's attribute (`cls`:
    `Scorer.key = f`, which any code may set): the statements read each, so counted by them alone, a call
    after `h = h2`, or under another flag, was served what `h1` gave."""
    elsewhere = cls is not None or bound_again(name, namespace, checked_file) or witnessed(changed_elsewhere, namespace, name)
    elsewhere = elsewhere or (places and bound_in_places(name, namespace, checked_file))  # `places`: inside `try` too
    if not elsewhere and not chosen_outside(name, namespace, checked_file):
        return {}
    # A module by its name (`import json as ser` ... `import pickle as ser`; `try: import orjson as js`).
    held = f"module:{obj.__name__}" if isinstance(obj, types.ModuleType) else witnessed(identity_of, obj)
    return {"bound:" + key: held}


def held_part(
    key: str, name: str, namespace: Mapping[str, Any], checked_file: str | None, module: bool = False
) -> dict[str, str]:
    """`bound_part` for a name of the user's module holding a library's module, function or class
    (`ser` of a step's `ser.dumps(x)`, `f` of `from json import dumps as f` ... `from pickle import
    dumps as f` under a flag): its statements and the library's code read the same whichever ran.
    `module`: only a module (the head of `ser.dumps`; `Cfg.LIMIT` counts by its class)."""
    obj = witnessed(namespace.get, name, _MISSING)
    if not isinstance(obj, types.ModuleType) and (module or not callable(obj)):
        return {}
    return bound_part(key, name, obj, namespace, checked_file, places=True)


def _running_tokens(obj: object, looped: bool = False) -> list[str] | None:
    """What a module-level call may have changed in `obj`: its plain data or bytes, else,
    for an object of your own class or a namespace (`PARAMS.set("lr", lr)`), its attributes,
    a library's container by its items (`CP.set("a", "k", "2")`, `for row in df.itertuples():`),
    and a library's object changed in a loop (`model.set_params(alpha=a)`) by its public
    attributes: not a cache it keeps (a logger's `_cache`). Out of a loop, the statement's
    text tells what a call did to a library's object (a logger, a client): its state, which
    may hold where the file lies, is no value of yours."""
    try:  # nested past the recursion limit, a `__dict__` that raises: changed, never a crash
        toks = content_tokens(obj)
        toks = attribute_tokens(obj) if toks is None and settings_object(obj) else toks
        toks = items_tokens(obj) if toks is None else toks
        return attribute_tokens(obj, public=True) if toks is None and looped else toks
    except Exception:  # RecursionError, whatever an odd `__getattribute__` raises
        return [fresh_token()]


# Values made of one immutable value (a NamedTuple, `np.float64`): by what they hold.
_MADE_OF_ONE = (tuple, frozenset, str, bytes, int, float, complex)
_SCALARS = (*_MADE_OF_ONE, bool, type(None))


def _holds_data(obj: object) -> bool:
    """A list, dict or set, or an object exposing its memory (an array):
    not a scalar (rebound, never changed in place), a module, class or
    function (counted by their code and statements)."""
    if isinstance(obj, (list, dict, set, bytearray)):
        return True
    if isinstance(obj, (type, types.ModuleType)) or callable(obj):
        return False
    # These very types: a subclass (a NamedTuple, `np.float64`) is data made of one.
    return type(obj) not in (str, bytes, int, float, complex, bool, tuple, frozenset, type(None))


@lru_cache(maxsize=8192)
def _changes_by_running(stmt: ast.AST, name: str) -> bool:
    """Whether a module-level statement among `name`'s is there because it
    changes `name`'s object as it runs without binding the name (a call of
    a function that changes it, `fill(X)`, a method call, a name bound to
    it changed): a function or class is there for what its body does when
    called (no step or workflow fills what counts this way: `inplace`), an
    import or an assignment to the name for the binding, a `globals()` or
    `exec` for every name (by its text, as before)."""
    if isinstance(stmt, (*_DEFS, ast.Import, ast.ImportFrom)) or may_bind_any(stmt):
        return False
    return not any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name
        for n in run_now(stmt)
    )


@lru_cache(maxsize=8192)
def _looped(stmt: ast.AST) -> bool:
    """Whether a module-level statement runs a loop (`for a in grid: m.set(a)`):
    its text, the same on every pass, cannot tell what each pass did."""
    loops = (ast.For, ast.AsyncFor, ast.While, ast.comprehension)
    return any(isinstance(n, loops) for n in run_now(stmt))


def _runs_over(stmt: ast.AST, name: str, namespace: Mapping[str, Any]) -> bool:
    """Whether `stmt` may change `name` each time the program runs past it:
    a call at module level, a loop, a function another module calls."""
    return _changes_by_running(stmt, name) or _in_loop(stmt, name) or _called(stmt, namespace)


def _called(stmt: ast.AST, namespace: Mapping[str, Any]) -> bool:
    """Whether `stmt` defines a function another module calls as it runs
    (`settings.set_lr(lr)` in a script's loop, `set_lr` changing it)."""
    return isinstance(stmt, _DEFS[:2]) and witnessed(called_elsewhere, namespace, stmt.name)


@lru_cache(maxsize=8192)
def _in_loop(stmt: ast.AST, name: str) -> bool:
    """Whether a module-level `for` or `while` binds `name` on each pass
    (`for cfg in configs:`, `model = Model(lr)` in its body): one
    statement, the same text on every pass, another value each time."""
    return any(
        isinstance(loop, (ast.For, ast.AsyncFor, ast.While))
        and any(
            isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name
            for n in run_now(loop)
        )
        for loop in run_now(stmt)
    )

