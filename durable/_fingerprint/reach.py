"""Which objects a function leads to, told from the running objects alone.

Pure standard library; nothing here reads source. The callable behind a
wrapper and its identity, whether an object is a step or workflow, whether a
function is the user's own code (and so followed as a helper); what a
function reaches by name for the engine is in `references`.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import inspect
import types
from collections.abc import Iterator, Mapping
from typing import Any

from .scriptnames import _SCRIPT_MODULES as _SCRIPT_MODULES
from .scriptnames import importable as importable
from .scriptnames import module_label as module_label
from .scriptnames import script_name as script_name
from .static import static_has
from .userfiles import is_user_file

_MISSING = object()

# ---------------------------------------------------------------- what it is


def identity_of(fn: object, name: str | None = None) -> str:
    """`module.qualname` (for a `functools.partial`, with its bound
    arguments), or `name` when one is given that differs from both the
    default identity and the default name: `name="task1"` on `def task1`
    says nothing new, so it keeps the identity (and fingerprint) it had
    without. The module of a script is `__main__` however it is started,
    and no path ever enters it."""
    default = _default_identity(fn)
    if name and name not in (default, default_name(fn)):
        return name
    return default


def _default_identity(fn: object) -> str:
    if isinstance(fn, functools.partial):
        return _default_identity(fn.func) + bound_label(fn)
    target = target_of(fn)
    module = getattr(target, "__module__", None) or "?"
    qualname = getattr(target, "__qualname__", type(target).__qualname__)
    script = script_name(target)
    if script is not None:  # by the name `import` gives it, when it has one (`importable`)
        named = importable(module)
        return f"{named}.{qualname}" if named else f"{script}.py:{qualname}"
    return f"{module}.{qualname}"


def default_name(fn: object) -> str:
    """A step's or workflow's name when `name=` is not given: its qualified
    name without `<locals>.`; a partial adds its bound arguments. Never a
    repr with a memory address, which differs in every process."""
    if isinstance(fn, functools.partial):
        return default_name(fn.func) + bound_label(fn)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not isinstance(name, str):
        name = type(fn).__qualname__  # a callable object
    return name.replace("<locals>.", "")


def bound_label(p: functools.partial[Any]) -> str:
    """`(2, k='a')`: the arguments a partial binds, spelled the same in
    every process (keywords sorted; long or odd values abbreviated)."""
    args = [_label(a) for a in p.args]
    args += [f"{k}={_label(v)}" for k, v in sorted(p.keywords.items())]
    return "(" + ", ".join(args) + ")"


def _label(value: object, depth: int = 0) -> str:
    if isinstance(value, enum.Enum):  # before str and int: a StrEnum is both
        return f"{type(value).__qualname__}.{value.name}"
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    if isinstance(value, int) and abs(value) < 10**15:
        return repr(value)
    if isinstance(value, str) and len(value) <= 40 and value.isascii() and value.isprintable():
        return repr(value)
    if isinstance(value, (str, bytes, int)):
        text = hex(value) if isinstance(value, int) else value  # str() refuses huge ints
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        return f"<{type(value).__name__} {hashlib.sha256(data).hexdigest()[:8]}>"
    if isinstance(value, (tuple, list)) and depth < 2 and len(value) <= 8:
        inner = ", ".join(_label(v, depth + 1) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if _followable(value) or isinstance(value, type):
        return identity_of(value)
    return f"<{type(value).__qualname__}>"


def target_of(fn: Any) -> Any:
    """The function that runs when fn is called: through partials and
    `functools.wraps` decorators."""
    if type(fn) is types.FunctionType and "__wrapped__" not in fn.__dict__:
        return fn  # the common case, without `inspect.unwrap`
    if isinstance(fn, functools.partial):
        return target_of(fn.func)
    try:
        fn = inspect.unwrap(fn)
    except ValueError:  # a __wrapped__ cycle
        pass
    except Exception:
        # A proxy whose every attribute raises (a context-bound LocalProxy,
        # unconfigured lazy settings): not a function of the user's.
        return fn
    try:
        return getattr(fn, "__func__", fn)  # bound methods
    except Exception:  # a proxy whose attributes raise: not a function, not followed
        return fn


def is_durable(obj: object) -> bool:
    """A step or workflow, told without evaluating its fingerprint (for a
    workflow that is a property that resolves its whole definition)."""
    kind = type(obj)
    # The common cases first, with the answer `getattr_static` would give:
    # built-in types take no attributes, nor do their instances, and a plain
    # function has only its own `__dict__` to hold one.
    if kind in _NO_ATTRIBUTES or kind in _FIXED_CALLABLES:
        return False
    if kind is types.FunctionType or kind is types.ModuleType:
        # Neither type can be given attributes (built in): only the
        # object's own `__dict__` can hold one.
        return "__durable_fingerprint__" in obj.__dict__
    try:
        told = static_has(obj, "__durable_fingerprint__")
        if told is not None:
            return told
        found = inspect.getattr_static(obj, "__durable_fingerprint__", _MISSING)
    except Exception:  # an exotic proxy
        return False
    return found is not _MISSING


_NO_ATTRIBUTES = frozenset(
    {int, float, complex, str, bytes, bool, type(None), tuple, list, dict, set, frozenset}
)


# Built-in callables (`len`, `gc.collect`, `str.join`): neither their types
# nor they themselves take attributes, so none ever becomes a step.
_FIXED_CALLABLES = frozenset(
    {
        types.BuiltinFunctionType,
        types.MethodWrapperType,
        types.WrapperDescriptorType,
        types.MethodDescriptorType,
        types.ClassMethodDescriptorType,
    }
)


# What could make a module followable as a function: `target_of` follows
# `__wrapped__` and `__func__`, which its `__getattr__` may answer.
_MODULE_HOOKS = ("__wrapped__", "__func__")


def may_answer(namespace: Mapping[str, Any], name: str) -> bool:
    """Whether a module's `__getattr__` (PEP 562) may answer `name`: unless
    it lists the names it answers (`__durable_answers__` on the function:
    `durable`'s own, which loads its public names when first asked), any."""
    hook = namespace.get("__getattr__")
    if hook is None:
        return False
    answers = hook.__dict__.get("__durable_answers__") if type(hook) is types.FunctionType else None
    return type(answers) is not frozenset or name in answers


def is_builtin_value(obj: object) -> bool:
    """An instance of a built-in data type: never a step, workflow or
    function, whatever the program does (neither these types nor their
    instances take attributes, and an object's class cannot become one of
    them). What is told of it from its type needs no witness."""
    return type(obj) in _NO_ATTRIBUTES


def durable_fingerprint_of(obj: object) -> str | None:
    """The fingerprint a step or workflow carries, or None for other objects.
    A step's as of now (`__durable_refingerprint__`), not the one from its
    decoration: that misses a helper defined below it, or rebound since.
    ConfigurationError when its code cannot be established now."""
    try:
        stamp = getattr(obj, "__durable_fingerprint__", None)
        live = getattr(obj, "__durable_refingerprint__", None) if stamp is not None else None
    except Exception:  # a proxy or lazy object may raise anything
        return None
    if callable(live):
        stamp = live()  # outside the `try`: an error here is the step's, never passed over
    value = getattr(stamp, "value", stamp)
    return value if isinstance(value, str) else None


def reached_stamp_of(obj: object) -> str | None:
    """What a step or workflow reached from a step or helper contributes: a
    step its fingerprint; a workflow its body's own (its definition holds
    the steps it reaches, maybe the one reaching it: a cycle that would
    never end). Running it checks its definition anyway."""
    try:
        body = getattr(obj, "__durable_body_fingerprint__", None)
    except Exception:  # a proxy or lazy object may raise anything
        return None
    return "body:" + body if isinstance(body, str) else durable_fingerprint_of(obj)


def _followable(obj: object) -> bool:
    kind = type(obj)
    if kind in _NO_ATTRIBUTES or kind in _FIXED_CALLABLES:  # plain data, built-in code
        return False
    if kind is types.ModuleType:
        names = obj.__dict__
        hooked = "__getattr__" in names and any(may_answer(names, h) for h in _MODULE_HOOKS)
        if not hooked and not any(hook in names for hook in _MODULE_HOOKS):
            # Neither a function nor a partial, nor anything `target_of`
            # could unwrap it to: only a step could be followed.
            return is_durable(obj)
    if is_durable(obj):
        return True
    if isinstance(obj, functools.partial):
        return _followable(obj.func)
    target = target_of(obj)
    return isinstance(target, types.FunctionType) and is_user_code(target)


# ---------------------------------------------------------------- whose code


def is_user_code(fn: types.FunctionType) -> bool:
    """Defined in the user's own code: not the standard library, not an
    installed package, not durable itself."""
    module = getattr(fn, "__module__", None) or ""
    return is_user_file(fn.__code__.co_filename, module.partition(".")[0])


# ---------------------------------------------------------------- what it reaches


def code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    """A code object and those of the functions, lambdas and comprehensions
    nested in it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from code_objects(const)


def _cell_value(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # not assigned yet (a recursive inner function)
        return _MISSING


def class_member(cls: type, name: str) -> object:
    """`cls.name` as defined, without running a descriptor (a property is
    not called); the function behind a staticmethod or classmethod."""
    try:
        found = inspect.getattr_static(cls, name, _MISSING)
    except Exception:  # an exotic metaclass
        return _MISSING
    return getattr(found, "__func__", found) if isinstance(found, _METHODS) else found


_METHODS = (staticmethod, classmethod)
