"""What a value made from the environment or a file holds (`CFG =
json.load(f)`, `LR = float(os.environ["LR"])` in a class body, `scale =
make([float(os.environ["K"])])`): its statements' text is the same
whatever they read, so such a value counts by its contents as well, as
they are when the step runs (`contents`, `reads`). Also how an object
holding no attribute (`attributes`) counts: by what pickle makes it again
from.

Pure standard library."""

from __future__ import annotations

import ast
import collections
import contextvars
import copyreg
import functools
import operator
import struct
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigurationError
from .attributes import attribute_tokens
from .bindings import binding_statements
from .imports import user_class
from .namedfiles import named_files, with_file
from .outside import _DEFS, reads_outside
from .reach import _cell_value, is_durable, module_label
from .values import (
    _enum_tokens,
    _qualname,
    content_tokens,
    fresh_token,
    mapping_tokens,
    named_function,
    plain_tokens,
    public_name,
)
from .witness import witnessed


def class_outside_tokens(cls: type, name: str, held: Mapping[str, Any]) -> list[str]:
    """A top-level class's immutable plain constants (`LR =
    float(os.environ["LR"])`), by value, when the statements of its body
    read the environment or a file: what a method reads as `self.LR`, which
    the class statement's text does not show. [] otherwise: as written.
    `name`: the global of `held` (a module's namespace) it was read as: a
    class a call made is bound by that name (`Named = make_dataclass("Other",
    ...)`), in that module (`made_by_new_class`: its own says `types`)."""
    if "." in cls.__qualname__ or cls.__module__ not in sys.modules:
        return []  # defined in a function: its statement is not the module's to read
    if not witnessed(user_class, cls):  # a library's (`Path`): by the import alone, as its values
        return []
    namespace, name = (held, name) if held.get(name) is cls else (vars(sys.modules[cls.__module__]), cls.__name__)
    try:
        found = binding_statements(name, namespace) or []
    except ConfigurationError:
        return []
    classes = [c for c in found if isinstance(c, ast.ClassDef)]
    # A class a call made (`namedtuple("P", "k", defaults=[K])`): by that statement.
    body: list[ast.AST] = [n for c in classes for s in c.body for n in _made_when_defined(s)] if classes else found
    # And a module-level statement setting one (`Cfg.rate = int(os.environ["K"])`), and what
    # the class statement calls: its decorators (`@set_k` setting `cls.K` from a file), its
    # bases' `__init_subclass__`.
    body += [s for s in found if classes and not isinstance(s, ast.ClassDef)]
    body += [ast.Call(d, [], []) for c in classes for d in c.decorator_list]
    hook = [ast.Attribute(b, "__init_subclass__", ast.Load()) for c in classes for b in c.bases]
    body += [ast.Call(h, [], []) for h in hook]
    # Its bases chosen so (`class M(A if FLAG else B)`, a `metaclass=` too): which classes.
    heads: list[ast.AST] = [n for c in classes for n in (*c.bases, *(k.value for k in c.keywords))]
    chosen = [("bases", ["type:" + _qualname(b) for b in cls.__mro__[1:]])] if reads_outside(heads, namespace, None) else []
    if not chosen and not reads_outside(body, namespace, None):
        return []
    # A list or dict its own statement makes from outside (`RATES = [float(os.environ["K"])]`)
    # by its contents too: not one a method fills.
    made = {n.id for s in body if reads_outside([s], namespace, None) for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}  # fmt: skip
    members = sorted(vars(cls).items())
    # A list of enum members, of paths (`MODES = frozenset(...)`) by its values too, as a global's.
    constants = [(k, plain_tokens(v, mutable=k in made) or (witnessed(outside_tokens, v) if k in made else None))
                 for k, v in members if not k.startswith("__")]  # fmt: skip
    # A method chosen so (`run = fast if FLAG else slow`): which function it is.
    constants += [(k, ["fn:" + _function_name(v)]) for k, v in members if k in made and _function_name(v)]
    # What its functions were made with (a NamedTuple's `__new__`, `def get(self, k=K)`, `@times(K)`).
    constants += [(k + "()", _made_with(v)) for k, v in members]
    # Bound by a statement choosing it (`IMPL = {"a": A, "b": B}[os.environ["K"]]`): which class.
    constants += [] if classes else [("class", ["type:" + _qualname(cls)])]
    constants += [*chosen, ("metaclass", ["type:" + _qualname(type(cls))])] if chosen else []
    return [t for k, toks in constants if toks for t in (k, *toks)]


def _function_name(member: object) -> str:
    """`module.qualname` of a function a class holds (a static or class method's too), else ""."""
    fn = getattr(member, "__func__", member) if isinstance(member, (staticmethod, classmethod)) else member
    if not isinstance(fn, types.FunctionType):
        return ""
    return f"{module_label(fn.__module__)}.{fn.__qualname__}"


def _made_when_defined(stmt: ast.AST) -> list[ast.AST]:
    """What of a class body's statement runs when the class is made: all of
    it, or a method's decorators and defaults (its body runs when called)."""
    if not isinstance(stmt, _DEFS[:2]):
        return [stmt] if not isinstance(stmt, ast.ClassDef) else []
    args = stmt.args
    return [*stmt.decorator_list, *args.defaults, *(d for d in args.kw_defaults if d is not None)]


def _made_with(member: object) -> list[str] | None:
    """What a function a class holds was made with, by content: its
    defaults (`scale=[K]`) and the cells of its closure (a decorator's
    argument), not the functions and classes there; None when it holds none."""
    fn = getattr(member, "__func__", member) if isinstance(member, (staticmethod, classmethod)) else member
    if is_durable(fn):  # a step: its function's, not the step's own state (a memo of ids)
        fn = getattr(fn, "__wrapped__", None)
    if not isinstance(fn, types.FunctionType):
        return None
    kw = [v for _, v in sorted((fn.__kwdefaults__ or {}).items())]
    held = [*(fn.__defaults__ or ()), *kw, *(_cell_value(c) for c in fn.__closure__ or ())]
    data = [v for v in held if not isinstance(v, type) and (not callable(v) or holds_values(v))]
    toks = [t for v in data for t in witnessed(outside_tokens, v) or ()]
    return toks or None


def outside_tokens(obj: object, stmts: tuple[ast.AST, ...] = (), module: str | None = None) -> list[str] | None:
    """What a global made from the environment or a file holds (`CFG =
    json.load(f)`, `model = Ridge(alpha=ALPHA)` of an `ALPHA` from
    `os.environ`): its plain data or bytes, a pandas frame's rows (`DF =
    pd.read_csv(path)`), a mapping's (`ConfigParser`), else its plain attributes (a
    library's public ones); a client or a file has none: by its statements.
    Once per object: what was loaded differs between processes, and a
    module-level change of it counts as any (`contents_part`); hashed again
    at every call, a large array loaded once cost each step call its bytes.
    With the statements that made it (`stmts`, of the module named
    `module`), the small files they name count by their bytes too (`namedfiles`)."""
    seen = _loaded.get((id(obj), bool(stmts)))
    if seen is not None and seen[0] is obj:
        return seen[1]
    toks = _told_or_changed(obj, stmts, module)  # kept below: the same object tells the same
    if len(_loaded) >= 64:
        _loaded.clear()
    _loaded[(id(obj), bool(stmts))] = (obj, toks)
    return toks


def contents_now(obj: object) -> list[str] | None:
    """What `outside_tokens` tells of `obj`, read as it is now rather than
    as first found: a function a factory made holds what the factory put
    there after decorating it too (`items.extend(...)` below `@durable.step`),
    and another call of the factory another list alike at first."""
    return _told_or_changed(obj, (), None)  # kept per object (`madewith.held_snapshot`)


def _told_or_changed(obj: object, stmts: tuple[ast.AST, ...], module: str | None) -> list[str] | None:
    """`_told`, or a token no other process gives when nothing can tell `obj`:
    nested past the recursion limit, or an attribute that raises (a proxy
    outside its context, `flask.current_app`; a lazy object): a change, never
    the caller's crash, nor counted as its type (unchanged whatever it holds)."""
    try:
        return _told(obj, stmts, module)
    except Exception:  # RecursionError, and whatever an odd `__getattribute__` raises
        return [fresh_token()]


def _told(obj: object, stmts: tuple[ast.AST, ...], module: str | None) -> list[str] | None:
    toks = content_tokens(obj)
    toks = mapping_tokens(obj) if toks is None else toks
    if toks is None and isinstance(obj, functools.partial):  # its function counts by its name
        toks = plain_tokens((obj.args, sorted(obj.keywords.items())))
    if toks is None and bound_to(obj) is not None:  # `CFG.get`, `Scale(K).times`: by its object
        held = outside_tokens(bound_to(obj))
        toks = None if held is None else [f"<bound:{getattr(obj, '__name__', '?')}", *held, ">"]
    if toks is None and isinstance(obj, (tuple, list, set, frozenset, dict)):  # `[Mode(K)]`
        toks = held_tokens(obj)
    told = toks is not None  # by what it holds: not by the files it came from (a database written)
    if toks is None:
        toks = attribute_tokens(obj, public=not user_class(type(obj)))
        # Of your own class, also what is not plain data in it (`Cfg(mode=Mode(K), n=1)`).
        toks = toks + (reduced_tokens(obj) or []) if toks is not None and user_class(type(obj)) else toks
    if toks is None and isinstance(obj, contextvars.ContextVar):  # `ContextVar("k", default=K)`
        toks = var_tokens(obj)
    if toks is None:  # a NamedTuple, a range, a compiled pattern: no attribute of its own
        toks = reduced_tokens(obj)
    if not told and not user_class(type(obj)):  # a template keeps no trace of its text
        toks = with_file(obj, toks)  # `env.get_template("p.j2")`
        toks = toks if toks is None or not stmts else [*toks, *named_files(stmts, module)]
    return toks


_REDUCERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {struct.Struct: lambda s: (struct.Struct, (s.format,))}


def reduced_tokens(obj: object, depth: int = 0) -> list[str] | None:
    """An object without attributes by the arguments pickle would make it
    again with (`Cfg(lr=0.1)`, `range(0, 3, 1)`, `re.compile("a", 0)`),
    when they are plain data (its class, by its name, aside); else None.
    An object that will not pickle (a client, a lock) has none."""
    # As pickle: a pattern's is registered; a `struct.Struct`, which will not pickle, is its format.
    reducer = copyreg.dispatch_table.get(type(obj)) or _REDUCERS.get(type(obj))
    try:
        reduced = obj.__reduce_ex__(4) if reducer is None else reducer(obj)
    except Exception:
        return None
    if not isinstance(reduced, tuple) or len(reduced) < 2 or not isinstance(reduced[1], tuple):
        return None
    args = tuple(a for a in reduced[1] if a is not type(obj))  # `copyreg.__newobj__(cls, ...)`
    # A deque's or an OrderedDict's items, in order, which pickle gives apart from its arguments.
    items = tuple((i, list(reduced[i])) for i in (3, 4) if len(reduced) > i and reduced[i] is not None)
    # `methodcaller("format", k=K)` is made again by a partial holding K.
    maker = (reduced[0],) if isinstance(reduced[0], functools.partial) else ()
    toks = held_tokens((*maker, args, reduced[2] if len(reduced) > 2 else None, *items), depth)
    return None if toks is None else [f"<reduced:{type(obj).__qualname__}", *toks, ">"]


def held_tokens(value: object, depth: int = 0) -> list[str] | None:
    """Plain data, with classes and builtin functions by their names, enum
    members, and objects by what pickle makes them again from, in tuples,
    lists, sets, dicts and partials: what pickle makes a library's value
    again from (a `decimal.Context`'s traps, the partial of a
    `methodcaller`), a list of enum members, of dataclasses or of arrays
    (by their bytes' digest, `content_tokens`)."""
    toks = content_tokens(value)
    if toks is not None or depth > 8:
        return toks
    if isinstance(value, (type, types.BuiltinFunctionType)):
        return ["ref:" + public_name(value)]
    if (named := named_function(value)) is not None:  # `STAGES = [clean, enrich]` that `main()` changes
        return [named]
    if (member := _enum_tokens(value)) is not None:
        return member
    if isinstance(value, functools.partial):
        value = (value.func, value.args, tuple(sorted(value.keywords.items())))
    kind = type(value).__name__
    value = list(value.items()) if isinstance(value, dict) else value
    if not isinstance(value, (tuple, list, set, frozenset)):
        return reduced_tokens(value, depth + 1)
    found = [held_tokens(v, depth + 1) for v in value]
    parts = [p for p in found if p is not None]
    if len(parts) < len(found):
        return None
    parts = sorted(parts) if isinstance(value, (set, frozenset)) else parts  # in no order: sorted
    return [f"<{kind}", *(t for p in parts for t in p), ">"]


def items_tokens(obj: object) -> list[str] | None:
    """A library's container by what it holds: an OrderedDict, a
    defaultdict, a Counter or a ConfigParser by what it maps, in order, a
    deque by its items, a NamedTuple by its values, a context variable by
    its value (`CV.set(K)`), a list, set or dict of values that are not
    plain data by each (`PATHS.append(Path("b"))`, `MODES.add(Mode.TWO)`);
    None for anything else."""
    if isinstance(obj, (list, set, dict)):
        return held_tokens(obj)
    if isinstance(obj, Mapping):
        return mapping_tokens(obj)
    if isinstance(obj, contextvars.ContextVar):
        return var_tokens(obj)
    return reduced_tokens(obj) if isinstance(obj, (tuple, frozenset, str, bytes, int, float, complex, collections.deque)) else None


def var_tokens(var: contextvars.ContextVar[Any]) -> list[str]:
    """A context variable by the value it holds in the running context,
    where a step reads it (`CV.get()`), else by its type; not set: by its
    default, which `CV.get()` returns then (`default=int(os.environ["K"])`),
    or by name when it has none."""
    value = var.get(_UNSET)
    if value is _UNSET:  # `get(_UNSET)` hides the variable's own default
        try:
            value = var.get()
        except LookupError:
            pass
    toks = None if value is _UNSET else content_tokens(value) or outside_tokens(value)
    return [f"<var:{var.name}", *(toks or [f"obj:{type(value).__qualname__}"]), ">"]


_UNSET = object()


def holds_values(obj: object) -> bool:
    """A callable that is no code of the user's but holds the values it was
    made with, which count as data does: a partial (`partial(round,
    ndigits=N)`), `itemgetter(K)`, a bound method (`CFG.get`, `Scale(K).times`),
    an instance of the user's class with `__call__` (`double = Doubler(K)`:
    its class's code counts as code, its attributes are data)."""
    if isinstance(obj, _HOLDING) or bound_to(obj) is not None:
        return True
    return not isinstance(obj, (type, types.FunctionType)) and callable(obj) and _own_instance(obj)


def _own_instance(obj: object) -> bool:
    return not is_durable(obj) and witnessed(user_class, type(obj))


_HOLDING = (functools.partial, operator.itemgetter, operator.attrgetter, operator.methodcaller)


def bound_to(obj: object) -> object | None:
    """The object a bound method is bound to (`CFG.get`, `Scale(K).times`,
    `(2).__add__`), None for anything else (a module's builtin function)."""
    if not isinstance(obj, _BOUND):
        return None
    owner = getattr(obj, "__self__", None)
    return None if isinstance(owner, types.ModuleType) else owner


_BOUND = (types.MethodType, types.BuiltinMethodType, types.MethodWrapperType)

# id(object) -> (the object, its tokens), as `outside_tokens` first found them
_loaded: dict[tuple[int, bool], tuple[object, list[str] | None]] = {}
