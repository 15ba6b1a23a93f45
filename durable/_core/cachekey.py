"""The key of a cached call (`@durable.step(cache=...)`): the argument
digest the step cache keys on (the one argument rule of `identity`, with
`ignore`d arguments left out), the digest of a `Cache(key=...)` function's
result, and the look for secrets that keeps a call holding one out of the
cache (the key may leave the secret out; the output may be made of it).
The values a step's own closure captured count as arguments do: a step made
by a factory (`make_step(weights)`) computes from them, while its
fingerprint counts lists, dicts and objects there by type only."""

from __future__ import annotations

import hashlib
import inspect
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errortext import warn
from .._fingerprint.kept import kept_state
from ..errors import ConfigurationError, DurableError
from .bound import binds, bound_values, unbound
from .cachestate import state_values
from .callbytes import _SCALAR, HEX, call_bytes, digest_of
from .code import function_stamp
from .content import Secret, Undigestable
from .identity import (
    MAX_DEPTH,
    NO_DIGEST,
    _arguments_digest,
    _bind,
    _Walk,
)
from .ownstate import after_body
from .spec import own_step_spec, step_spec

if TYPE_CHECKING:
    from .cacheoption import Cache


def call_key(
    option: Cache,
    signature: inspect.Signature | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    name: str,
    fn: Callable[..., Any] | None = None,
) -> tuple[str | None, str | None, str | None]:
    """The digest a cached call is keyed on (besides the step's fingerprint),
    or None when it cannot be cached; the call's `call_digest` when the
    key was made of it (no key function, nothing ignored), else None; and
    the digest before the closure's captured values joined it
    (`captured_changed`). A call
    that does not bind raises TypeError, as without a cache; a
    `Cache(key=...)` function is called once it has bound, and its arguments
    are looked at for secrets too (the key leaves them out, the output may
    be made of them). `fn`: the step's function, whose captured values join
    the key (`with_captured`)."""
    if option.key is None:
        ignored = option.ignored
        digest = cache_digest(signature, args, kwargs, name, ignored)
        # Without a secret (then None) and with nothing left out, the same digest.
        call, base = None if ignored else digest, for_interpreter(digest)
        return with_state(fn, with_captured(fn, base)), call, base
    if not _cache_check(signature, args, kwargs, name):
        return None, None, None
    key_args, key_kwargs = _key_arguments(signature, args, kwargs)
    key = option.key(*key_args, **key_kwargs)
    if key is None:
        # A forgotten `return`: every call would share one entry (wrong values).
        raise ConfigurationError(
            f"the Cache(key=...) function of step {name} returned None: it must return "
            "the key of the call (did it forget `return`?); return a constant such as () "
            "for one entry that every call shares"
        )
    code = _key_code(option.key, name)
    if code is None:
        return None, None, None
    base = for_interpreter(strict_digest((key, code)))
    return with_state(fn, with_captured(fn, base)), None, base


# The standard library differs from one minor Python to the next (3.13's `ast.dump` is not
# 3.11's): an entry serves the Python that wrote it (a resume on another one is not refused).
_PYTHON = f"/{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}".encode()


def for_interpreter(digest: str | None) -> str | None:
    return None if digest is None else hashlib.sha256(digest.encode() + _PYTHON).hexdigest()[:HEX]


def _key_arguments(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """What a `Cache(key=...)` function is called with: the call as bound
    (already checked to bind), a parameter given by name passed by position
    as its signature places it, so `f(1)` and `f(x=1)` give it the same; the
    defaults are the key function's own. Called as given, a key function
    `lambda *a, **k: a` keyed `f(x=1)` and `f(x=2)` alike: one's output
    served to the other."""
    if signature is None or not kwargs:
        return args, kwargs
    bound = signature.bind(*args, **kwargs)
    return bound.args, bound.kwargs


def _key_code(key_fn: Callable[..., Any], name: str) -> str | None:
    """The code of a `Cache(key=...)` function, which joins the key: an entry
    stored under an older one was keyed by what *that* function meant (`x`,
    not `x // 2`). A function of the user's own code by its fingerprint
    (memoised, as a step's), anything else (a library function,
    `itemgetter(0)`) by its content digest; None, with a warning, when its
    source cannot be read."""
    try:
        stamp = function_stamp(key_fn) if isinstance(key_fn, types.FunctionType) else None
    except DurableError:  # its advice (version= on the decorator) is not for a key function
        warn(
            f"the Cache(key=...) function of step {name} has no source durable can read "
            "(exec, `python -c`, the plain prompt), so an edit of it could not be told: "
            f"define it in a file or a notebook cell. Step {name} ran without its cache",
        )
        return None
    return stamp if stamp is not None else strict_digest(key_fn)


def with_captured(fn: Callable[..., Any] | None, digest: str | None) -> str | None:
    """The digest with the values `fn`'s closure captured, by content as an
    argument counts (the fingerprint counts a list, dict or object there by
    its type only, since functions keep state in them: in a cache key that
    would serve `make_step([1, 2])`'s output to `make_step([3, 4])`), and
    with what a partial or a bound method binds (`bound`: a step made of
    `model.predict` is not served another state's output). None (not
    cached) for a captured secret, a value without a digest, or a name the
    closure has not bound yet. A plain function without a closure: `digest`."""
    if fn is None or digest is None:
        return digest
    plain = type(fn) is types.FunctionType and fn.__closure__ is None
    if plain and "__durable_step__" not in fn.__dict__:
        return digest  # the common case, told at once: binds nothing, captures nothing
    target = unbound(fn)
    if getattr(target, "__closure__", None):
        captured = _captured(target, set())
        if captured is None:
            return None
        digest = strict_digest((digest, captured))
    if digest is None or not binds(fn):
        return digest
    return strict_digest((digest, bound_values(fn)))


def captured_changed(fn: Callable[..., Any] | None, base: str | None, key: str) -> bool:
    """Whether running fn changed a value its closure captured that counts
    in its key (`state["n"] += 1` where the output reads state): the key the
    call was looked up by no longer holds what a later call finds, and a hit
    could not redo the change, so its output is not kept, as a call's that
    changed its arguments is not. A value without a digest now, or one
    another thread is changing as it is read: changed."""
    if base is None or not (getattr(unbound(fn), "__closure__", None) or state_values(fn)):
        return False  # nothing captured (under a partial or a method's binding too), no state read
    with after_body():
        return with_state(fn, with_captured(fn, base)) != key


def with_state(fn: Callable[..., Any] | None, digest: str | None) -> str | None:
    """The digest with the module-level values `fn` reads that the program
    changes as it runs (`cachestate`): a hit served another state's output."""
    held = state_values(fn) if digest is not None else None
    return strict_digest((digest, held)) if held else digest


def _captured(fn: Any, seen: set[int]) -> list[Any] | None:
    """The values fn's closure holds, and those of the functions it holds
    (a helper made by a factory): their code is in the step's fingerprint
    already (it follows them), the data they captured is not. A cell fn
    only writes (a counter it bumps, a list it appends to) is no input: as
    in its fingerprint, it is left out (`kept_state`), else every call
    would make a key of its own and none would be served."""
    seen.add(id(fn))
    out: list[Any] = []
    if own_step_spec(fn) is None and step_spec(fn) is not None:
        # A decorator over a step, whose fingerprint is the step's (it
        # follows `__wrapped__`): what it holds as defaults is data too.
        out.append((fn.__defaults__, sorted((fn.__kwdefaults__ or {}).items())))
    cells = getattr(fn, "__closure__", None) or ()
    kept = kept_state(fn, fn.__code__) if cells else frozenset()
    for name, cell in zip(fn.__code__.co_freevars if cells else (), cells, strict=True):
        if name in kept:
            continue
        try:
            value = cell.cell_contents
        except ValueError:  # a captured name not assigned yet: what it will hold is unknown
            return None
        # A decorator over a step (functools.wraps copies its attributes) is
        # a function of its own: what it captured (`scaled(k)`) counts too.
        spec = own_step_spec(value)
        inner = spec.fn if spec is not None else value
        if not isinstance(inner, types.FunctionType):
            out.append(value)
        elif id(inner) not in seen:  # a nested step calling itself holds itself
            held = _captured(inner, seen)
            if held is None:
                return None
            out.append(held)
    return out


def cache_digest(
    signature: inspect.Signature | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    name: str,
    ignore: frozenset[str] = frozenset(),
) -> str | None:
    """The argument digest the step cache keys on: `call_digest` with the
    `ignore`d arguments left out (a name given through `**kwargs` too). None
    when the call holds a secret (a `Redacted` never enters the cache, nor
    does an output computed from one: ignored arguments are looked at for
    secrets as well) or has no reproducible digest: such a call is never
    served from the cache nor stored in it. A call that does not bind raises
    TypeError, as `call_digest`."""
    if signature is not None and not ignore:
        fast = call_bytes(signature, args, kwargs)
        if fast is not None:
            return digest_of(fast)  # scalars only: no secret, and the same bytes as below
    kept, left_out = _cache_pairs(signature, args, kwargs, name, ignore)
    try:
        digest = _arguments_digest(kept, allow_secrets=False)
    except NO_DIGEST:
        return None
    return digest if left_out is None or not holds_secret(left_out) else None


def _cache_check(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any], name: str
) -> bool:
    """For a step keyed by a `Cache(key=...)` function, before it is called:
    the call is bound like any other (TypeError when it does not match the
    signature), and True unless its arguments hold a secret."""
    if signature is not None and call_bytes(signature, args, kwargs) is not None:
        return True  # scalars only: bound, and no secret
    pairs, _ = _cache_pairs(signature, args, kwargs, name, frozenset())
    return not holds_secret([value for _, value in pairs])


def _cache_pairs(
    signature: inspect.Signature | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    name: str,
    ignore: frozenset[str],
) -> tuple[list[tuple[str, Any]], list[Any] | None]:
    """The bound arguments the cache key is made of, and those left out
    (None: none). An ignored name that is not a parameter of its own is
    taken out of the `**kwargs` parameter's dict."""
    if signature is None:
        return [("*", args), ("**", kwargs)], None
    bound = _bind(signature, args, kwargs, name)
    if not ignore:
        return list(bound.arguments.items()), None
    kept: list[tuple[str, Any]] = []
    left_out: list[Any] = []
    params = signature.parameters
    for arg, value in bound.arguments.items():
        if arg in ignore:
            left_out.append(value)
        elif params[arg].kind is inspect.Parameter.VAR_KEYWORD and not ignore.isdisjoint(value):
            left_out.extend(v for k, v in value.items() if k in ignore)
            kept.append((arg, {k: v for k, v in value.items() if k not in ignore}))
        else:
            kept.append((arg, value))
    return kept, left_out


def holds_secret(value: Any) -> bool:
    """Whether value holds a `Redacted` anywhere a digest would look (items,
    fields, pickled state, a closure's captured values), or is nested too
    deep to tell. Parts without a digest (a lock, an open file) are passed
    over, and arrays of numbers are not read."""
    try:
        _Scan().feed(value)
    except (Secret, RecursionError):
        return True
    return False


def strict_digest(value: Any) -> str | None:
    """`value_digest` for a cache key (the result of a `Cache(key=...)`
    function): None instead of a random token, and for a secret."""
    walk = _Walk(allow_secrets=False)
    try:
        walk.feed(value)
    except NO_DIGEST:
        return None
    return walk.h.hexdigest()[:HEX]


class _NoHash:
    """Stands for the SHA-256 of a walk that only looks for secrets."""

    def update(self, data: bytes) -> None:
        pass


class _Scan(_Walk):
    """The walk of `holds_secret`: it raises `Secret` at the first secret
    (or at MAX_DEPTH: fail closed), and passes over what has no digest."""

    def __init__(self) -> None:
        super().__init__(allow_secrets=False)
        self.h = _NoHash()  # type: ignore[assignment]

    def feed(self, v: Any) -> None:
        if type(v) in _SCALAR:
            return
        if len(self.stack) >= MAX_DEPTH:
            raise Secret(f"nested deeper than {MAX_DEPTH} levels: a secret may be there")
        super().feed(v)

    def _compound(self, v: Any) -> None:
        np = sys.modules.get("numpy")
        if np is not None and type(v) is np.ndarray and not v.dtype.hasobject:
            return  # numbers, never a secret: not read
        try:
            super()._compound(v)
        except Secret:
            raise
        except Undigestable:
            pass  # no digest: nothing the walk can look into
