"""Code passed as a value (DESIGN §2 "Identity of a call"): a function, or
an object or class of the user's own code, counts in an argument digest
by the fingerprint of that code, not by its name alone. The step it is
passed to runs that code (`fn(x)`, `model.predict(x)`) and the step's own
fingerprint does not see it (the step names neither), so an edit to it
would replay the old output. Library code counts by name, as a
fingerprint counts it."""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import types
import weakref

from .._fingerprint.assigned import assigned_into
from .._fingerprint.bindings import binding_statements, module_statements
from .._fingerprint.canon import node_hash
from .._fingerprint.classreads import statements_read
from .._fingerprint.elsewhere import attributes_set_elsewhere, elsewhere_of
from .._fingerprint.fingerprint import digest
from .._fingerprint.holds import held_callables, holds_callables, module_callables, user_class
from .._fingerprint.imports import user_module
from .._fingerprint.kept import attributes_kept_by_steps
from .._fingerprint.memo import memo_fingerprint
from .._fingerprint.memorule import Memo
from .._fingerprint.outsidevalues import class_outside_tokens
from .._fingerprint.passes import one_pass
from .._fingerprint.reach import durable_fingerprint_of, is_durable, is_user_code, target_of
from .._fingerprint.values import plain_tokens
from .._fingerprint.witness import witnessed
from ..errors import ConfigurationError


def function_stamp(fn: object) -> str | None:
    """A step's fingerprint, or that of a function of the user's own code;
    None for a library function. ConfigurationError when it has no source.
    A step's as of now (`durable_fingerprint_of`). A lambda is fingerprinted
    with any other on its line (its own code counts by its pickled bytes
    anyway), not refused."""
    stamp = durable_fingerprint_of(fn)
    # What it runs: behind a wrapper (`lru_cache`, a library's `functools.wraps`
    # decorator) the user's function, whose fingerprint the wrapper's is.
    target = target_of(fn) if stamp is None else None
    if isinstance(target, types.FunctionType) and is_user_code(target):
        name = target.__qualname__ if target.__name__ == "<lambda>" else None
        stamp = memo_fingerprint(fn, name=name).value  # type: ignore[arg-type]
    return stamp


def module_stamp(module: types.ModuleType) -> str | None:
    """A module of the user's own code passed as a value (`run(helpers)`):
    its whole text and the fingerprints of the functions it holds, as a
    step using a module as a whole counts it; None for a library's, which
    counts by its name. ConfigurationError when its file was edited after
    import."""
    if not user_module(module):
        return None
    found = module_statements(vars(module))
    text = [node_hash(s) for s in found] if found is not None else [module.__name__]
    return digest(*text, *(function_stamp(f) or "" for f in module_callables(module)))


# id(cls) -> the stamp of its methods, reused while nothing it was computed
# from changed (a method rebound, a file edited: the one memo rule).
_CLASSES: Memo[str | None] = Memo()


def class_stamp(cls: type) -> str | None:
    """The fingerprints of the functions (methods, static and class methods,
    properties) the user's own classes in `cls.__mro__` define, and their
    `class` statements (or, without one, their immutable constants); None
    when none is the user's: a library class counts by its name.
    ConfigurationError when one of them has no source."""
    if not _user_classes(cls):
        return None
    return _CLASSES.get(id(cls), cls, lambda: _in_one_pass(cls))


def _in_one_pass(cls: type) -> str | None:
    # As a step's fingerprint is: each question its classes' statements ask, answered once.
    with one_pass():
        return _methods_stamp(cls)


@functools.lru_cache(maxsize=1024)
def _user_classes(cls: type) -> tuple[type, ...]:
    # Which classes are the user's own does not change: a class keeps its module
    # (and its metaclass). A metaclass's code runs for the class (`cls.rate`
    # through its property, the attributes its `__new__` sets).
    metaclass: type = type(cls)
    found = (*cls.__mro__, *metaclass.__mro__)
    return tuple(c for c in found if c not in (object, type) and user_class(c))


# Whether a class is made without a `class` statement of its module (by a
# function, `type()`, `Enum("Labels", names)`, pydantic's `create_model`), as
# `class_stamp` found it: what defines such a class counts by value (`defined`).
_RUN_TIME: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def made_at_run_time(cls: type) -> bool:
    """Whether `class_stamp(cls)` found no `class` statement for `cls`."""
    return _RUN_TIME.get(cls, False)


def _methods_stamp(cls: type) -> str | None:
    parts = []
    owners = list(_user_classes(cls))
    for owner in owners:  # grows by the classes its class attributes hold
        statement = _class_statement(owner, _own_file(owner))
        if owner is cls:
            _RUN_TIME[cls] = statement is None
        if statement is not None:  # its constants, as written: `RATE = 2`, `LIMITS = [1, 2]`
            parts += [owner.__qualname__, *statement]
        for name, member in sorted(witnessed(_members, owner), key=lambda pair: pair[0]):
            for fn in _functions(member) or witnessed(_held_functions, member):
                stamp = function_stamp(fn)
                if stamp is not None:
                    parts += [f"{owner.__qualname__}.{name}", stamp]
            owners += [c for c in _held_classes(member) if c not in owners]
            constant = None if statement is not None else _constant(name, member)
            if constant is not None:
                parts += [f"{owner.__qualname__}.{name}", *constant]
    return digest(*parts) if parts else None


def _held_classes(member: object) -> tuple[type, ...]:
    """The user's classes behind a class attribute that holds a class or an
    object of the user's code (`strategy = Strategy()`, `model_cls = Model`,
    `score = Scorer().score`):
    a method calls their methods through it, and the class statement names
    them only (their code counts as theirs, once, even in a cycle)."""
    if isinstance(member, types.MethodType):  # `score = Scorer().score`: its object's class runs
        member = member.__self__
        return _user_classes(member if isinstance(member, type) else type(member))
    if isinstance(member, type):
        return _user_classes(member)
    if isinstance(member, (types.FunctionType, types.ModuleType, functools.partial)):
        return ()
    kind: type = type(member)
    return _user_classes(kind) if kind.__module__ != "builtins" else ()


def _held_functions(member: object) -> list[object]:
    """The user's functions a class attribute holds in a list, dict, tuple
    or set (`HANDLERS = {"a": parse_a}`), or the steps: called through it,
    their code runs, and the class statement names them only."""
    found = []
    for fn in held_callables(member) if holds_callables(member) else ():
        fn = getattr(fn, "__func__", fn)  # a bound method
        if isinstance(fn, types.FunctionType) or durable_fingerprint_of(fn) is not None:
            found.append(fn)
    return found


def _class_statement(cls: type, checked_file: str | None) -> list[str] | None:
    """The hashes of the statements that bind a top-level class in its
    module (its `class` statement), as a global counts by the statements
    that bind it: what a method reads as `self.RATE` counts as written,
    and a class-level cache filled as the program runs is not a change.
    None for a class defined elsewhere (in a function), or whose module's
    text cannot be told to be the running code: then its immutable
    constants count by value, as they run. `checked_file`: the file of the
    class's own methods, each checked against the running code when it is
    fingerprinted; without one, every function of the module is checked,
    and one a decorator remade (hypothesis's `@given`) fails that check."""
    module = sys.modules.get(cls.__module__)
    if module is None or "." in cls.__qualname__:
        return None
    try:
        found = binding_statements(cls.__name__, vars(module), checked_file)
        # `Model.RATES = [3]` in another module: the class statement does not show it.
        elsewhere = elsewhere_of(vars(module), cls.__name__)
    except ConfigurationError:
        return None
    if not found:
        return None
    # What the statement reads counts too, as a global's statements' reads do.
    read, reached = statements_read(cls.__name__, found, vars(module), checked_file)
    read += elsewhere
    # `Base.rate = 2` at module level is in the file before and after it ran:
    # what it sets counts as it is now, as a global's contents do.
    names = _set_at_module_level(cls.__name__, found)
    if elsewhere:  # `models.Base.rate = 2` in a script
        names = tuple(sorted({*names, *attributes_set_elsewhere(vars(module), cls.__name__, vars(cls))}))
    if any(not isinstance(s, _DEFINITIONS) for s in found):  # `Base.set_rate(2)`, `setattr(Base, ...)`
        names = tuple(sorted({*names, *(k for k, v in vars(cls).items() if _constant(k, v) is not None)}))
    kept = {k for s in found for k in attributes_kept_by_steps(s)}  # `Counted.runs += 1` in its steps
    names = tuple(n for n in names if n not in kept)
    if names:
        read += witnessed(_attributes_now, cls, names)
    # Its constants by value when its statements read the environment or a
    # file (`rate = int(os.environ["K"])`), as the fingerprint counts them.
    read += class_outside_tokens(cls, cls.__name__, vars(module))
    return [*map(node_hash, found), *read, *(function_stamp(fn) or "" for fn in reached)]


def _set_at_module_level(name: str, found: list[ast.AST]) -> tuple[str, ...]:
    """The attributes of the class `name` that module-level statements among
    `found` set or change in place (`Base.rate = 2`, `Base.rates["k"] = 2`)."""
    attrs: set[str] = set()
    for stmt in found:
        if not isinstance(stmt, _DEFINITIONS) and name in assigned_into(stmt):
            attrs.update(
                n.attr for n in ast.walk(stmt)
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name
            )  # fmt: skip
    return tuple(sorted(attrs))


def _attributes_now(cls: type, names: tuple[str, ...]) -> list[str]:
    """The plain data the class holds under `names` now (its type otherwise)."""
    toks = []
    for name in names:
        value = vars(cls).get(name)
        toks += [name, *(plain_tokens(value) or ["obj:" + type(value).__qualname__])]
    return toks


_DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _own_file(cls: type) -> str | None:
    """The file of the class's own methods from the user's source (checked
    by their fingerprints), when they all come from one."""
    files = {fn.__code__.co_filename for m in vars(cls).values() for fn in _functions(m)}
    return files.pop() if len(files) == 1 else None


def _constant(name: str, member: object) -> list[str] | None:
    """The tokens of an immutable plain class constant (`RATE = 2`); None
    for a dunder (the docstring, the module name) and for anything else:
    a list a method fills is state, not code."""
    if name.startswith("__") and name.endswith("__"):
        return None
    return plain_tokens(member, mutable=False)


def _members(cls: type) -> tuple[tuple[str, object], ...]:
    """What the class defines, as one value the witness compares member by
    member (by identity): a method rebound or added is a change."""
    return tuple(vars(cls).items())


def _functions(member: object) -> list[types.FunctionType]:
    """The functions of the user's source behind a class member. Methods a
    decorator generated (a dataclass's `__init__`, a NamedTuple's `__new__`:
    code from `exec`, without a file) follow from the fields, which count
    as state."""
    if isinstance(member, (staticmethod, classmethod)):
        member = member.__func__
    found = [getattr(member, a, None) for a in ("fget", "fset", "fdel")]
    found = found if isinstance(member, property) else [member]
    return [
        fn
        for fn in map(_unwrapped, found)
        if isinstance(fn, types.FunctionType) and not fn.__code__.co_filename.startswith("<")
    ]


# Where a decorator that is no function keeps the method it wraps.
_HOLDERS = (functools.cached_property, functools.partialmethod, functools.singledispatchmethod)


def _unwrapped(member: object) -> object:
    """The function behind a `cached_property`, `partialmethod`,
    `singledispatchmethod` or an `lru_cache` (or other `functools.wraps`)
    wrapper: its code runs when the method is called, and the `class`
    statement holds its text only, not the helpers it calls."""
    for _ in range(16):  # wrappers of wrappers, never a cycle
        if is_durable(member):  # a step: counts by its own fingerprint (`version=`...)
            break
        if isinstance(member, _HOLDERS):
            member = member.func
        elif isinstance(member, functools.partial) or _wraps(member):
            # A function made by `functools.wraps` too: a library's decorator
            # (`contextlib.contextmanager`) is not the user's code, what it wraps is.
            member = target_of(member)
        else:
            break
    return member


def _wraps(member: object) -> bool:
    # Looked up statically: a lazy proxy's attributes may raise anything.
    try:
        return inspect.getattr_static(member, "__wrapped__", None) is not None
    except Exception:  # an exotic metaclass: not a wrapper (as before it was looked at)
        return False
