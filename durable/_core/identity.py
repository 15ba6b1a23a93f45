"""The identity of a call (DESIGN §2): one digest for a step's bound
arguments, a loop item, a sleep and a derived run id.

Canonical data (None, bool, int, float, complex, str, bytes, bytearray,
tuple, list, dict in key order, set, frozenset) has a type-tagged encoding,
so `1`, `1.0` and `True` or `bytes` and `bytearray` never share a digest.
Everything else is digested by content: numpy and pandas objects by dtype,
shape, index and bytes (duck-typed: looked at only when the user imported
them), dataclasses, attrs and pydantic models by type and fields, other
objects by type and pickled state (`__reduce_ex__`). A value that cannot be
digested gets a fresh random token: the call simply looks changed the next
time (fail closed), it is never replayed unchecked."""

from __future__ import annotations

import enum
import hashlib
import inspect
import os
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

from .._calls import callers
from .._fingerprint.values import unchanging
from .arrays import Memory, in_pandas
from .callbytes import _IMMUTABLE as _IMMUTABLE
from .callbytes import _SCALAR, HEX, _str, call_bytes, digest_of, immutable_call
from .callbytes import _int as _int
from .content import NO_DIGEST as NO_DIGEST
from .content import Secret, content_of
from .content import Undigestable as Undigestable
from .ownstate import after_body
from .redact import Redacted
from .signature import fill_defaults

# Nesting deeper than this is not digested (the walk recurses): fail closed.
MAX_DEPTH = 200


# -- the walk ------------------------------------------------------------------


class _Walk:
    """Feeds one value into a SHA-256. `stack` holds the values being walked
    (id -> depth) so that a cycle refers back instead of recursing forever;
    `met`, the mutable ones met before (id -> their order; `kept` holds
    them, so that no id is reused), so that one object held twice
    (`[row, row]`) refers back too, as pickle's memo does: a step that
    changes, or copies and changes, one of them sees the other change."""

    def __init__(self, *, allow_secrets: bool = True, code: bool = True) -> None:
        self.h = hashlib.sha256()
        self.stack: dict[int, int] = {}
        self.met: dict[int, int] = {}
        self.kept: list[Any] = []
        # numpy arrays met, by what holds their memory; None inside a pandas object
        # (copy-on-write: a write to its values is never seen through another).
        self.memory: Memory | None = Memory()
        self.meeting = True  # False inside a set: its order depends on the hash seed
        # False for the step cache: a secret must never be part of a key that
        # other calls (other secrets) could match.
        self.allow_secrets = allow_secrets
        # False for a derived run id (`content_of`): see `run_id_digest`.
        self.code = code

    def feed(self, v: Any) -> None:
        t = type(v)
        enc = _SCALAR.get(t)
        if enc is not None:
            self.h.update(enc(v))
            return
        i = id(v)
        stack, met = self.stack, self.met
        if i in stack:  # `in`, not `.get`: no call for the values met once (most)
            self.h.update(b"@%d;" % stack[i])
            return
        if i in met:
            self.h.update(b"=%d;" % met[i])
            return
        if len(stack) >= MAX_DEPTH:
            raise Undigestable(f"nested deeper than {MAX_DEPTH} levels")
        meeting = self.meeting
        if t is tuple or t is frozenset:  # `unshared`, its parts met one by one: asked without a call
            pass
        elif t is list or t is dict or not unshared(v):
            if meeting:
                met[i] = len(self.kept)
                self.kept.append(v)
        elif not isinstance(v, (tuple, frozenset)):
            # What an immutable value is made of (a dtype's fields) is its own: met
            # again when it is, not when an equal one is.
            self.meeting = False
        stack[i] = len(stack)
        try:
            self._compound(v)
        finally:
            del stack[i]
            self.meeting = meeting

    def _compound(self, v: Any) -> None:
        t = type(v)
        if t is list or t is tuple:
            self.h.update(b"%s%d:" % (b"[" if t is list else b"(", len(v)))
            for item in v:
                self.feed(item)
        elif t is dict:
            self.h.update(b"{%d:" % len(v))
            for key, value in v.items():
                self.feed(key)
                self.feed(value)
        elif t is set or t is frozenset:
            self._unordered(b"S" if t is set else b"Z", v)
        elif t is bytearray:
            self.h.update(b"B%d:" % len(v) + bytes(v))
        elif isinstance(v, Redacted):
            if not self.allow_secrets:
                raise Secret("it holds a durable.redact() value")
            self.h.update(b"R")  # a secret: only that one was there
        else:
            order, memory = self.met.get(id(v)), self.memory
            if order is not None and memory is not None:  # two arrays may be one memory (a view and its base)
                self.h.update(memory.meet(v, order))
            kind, content = content_of(v, code=self.code, walk=self)
            self.h.update(b"o" + _str(kind))
            # The stand-in is a fresh tuple (or a scalar): no level of its own.
            enc = _SCALAR.get(type(content))
            if enc is not None:
                self.h.update(enc(content))
                return
            self.memory = None if in_pandas(v) else memory
            try:
                self._compound(content)
            finally:
                self.memory = memory

    def _unordered(self, tag: bytes, items: Iterable[Any]) -> None:
        # Iteration order of a set depends on the hash seed: sort the items' digests.
        outer, subs, meeting = self.h, [], self.meeting
        self.meeting = False
        try:
            for item in items:
                self.h = hashlib.sha256()
                self.feed(item)
                subs.append(self.h.digest())
        finally:
            self.h, self.meeting = outer, meeting
        self.h.update(b"%s%d:" % (tag, len(subs)) + b"".join(sorted(subs)))


# What is one of a kind: no copy of it is equal to it (`copy.deepcopy` returns it).
_ONE_OF_A_KIND = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, enum.Enum)


def unshared(v: Any) -> bool:
    """Whether one object held twice cannot be told from two equal ones: a
    tuple or frozenset (the objects they hold are met one by one), what
    nothing changes in place (`unchanging`, a numpy dtype or scalar) and
    what is one of a kind."""
    t = type(v)
    if t is list or t is dict or t is set or t is bytearray:
        return False
    if isinstance(v, (tuple, frozenset)) or isinstance(v, _ONE_OF_A_KIND):
        return True
    np = sys.modules.get("numpy")  # a dtype or a scalar of numpy: immutable (joblib's hash agrees)
    return unchanging(v) or (np is not None and isinstance(v, (np.dtype, np.generic)))


# -- what the engine calls ------------------------------------------------------


def fresh_token() -> str:
    """Stands for a value with no digest: never equal to anything recorded."""
    return "!" + os.urandom(HEX // 2).hex()[1:]


def is_token(digest: str | None) -> bool:
    """A digest that stands for a value without one (`fresh_token`)."""
    return digest is not None and digest.startswith("!")


def value_digest(value: Any, held: list[Any] | None = None) -> str:
    """The digest of one value (a loop item, a sleep's duration); `held`
    gets the mutable objects met (`call_digest`)."""
    walk = _Walk()
    try:
        walk.feed(value)
    except NO_DIGEST:
        return fresh_token()
    if held is not None:
        held += walk.kept
    return walk.h.hexdigest()[:HEX]


def call_digest(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any], name: str,
    held: list[Any] | None = None,
) -> str:  # fmt: skip
    """The digest of a call over its BOUND arguments with defaults applied (`fill_defaults`):
    f(1), f(x=1) and f() with default x=1 are one call. A call that does not
    bind raises TypeError naming the step (it would fail the same way on
    every retry). Without a signature, the arguments count as given.
    `held` gets the mutable objects the walk met (`sharing.shared`): none
    for a call of scalars (its bytes)."""
    if signature is None:
        pairs: list[tuple[str, Any]] = [("*", args), ("**", kwargs)]
    else:
        fast = call_bytes(signature, args, kwargs)
        if fast is not None:
            return digest_of(fast)
        pairs = list(_bind(signature, args, kwargs, name).arguments.items())
    try:
        return _arguments_digest(pairs, held=held)
    except NO_DIGEST:
        return fresh_token()


def changed_in_place(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any],
    name: str, digest: str, rejoin: Callable[[str], str] | None = None,
    held: list[Any] | None = None,
) -> bool:
    """Whether the step changed an object it was given (`rows.append(x)`),
    which its replay cannot redo. Immutable scalars (the hot path) cannot.
    `rejoin`: how `digest` was made of the call's digest (`bound.with_bound`:
    the instance of a bound method may change too). `held`: `call_digest`'s."""
    if not kwargs and rejoin is None and immutable_call(signature, args):
        return False
    if is_token(digest):
        return False
    with after_body():
        after = call_digest(signature, args, kwargs, name, held)
    return (after if rejoin is None else rejoin(after)) != digest


def _bind(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any], name: str
) -> inspect.BoundArguments:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise callers(TypeError(f"step {name}{signature} cannot be called with these arguments: {e}. A call "
                                "that does not match the signature fails at once, without retries.")) from None  # fmt: skip
    fill_defaults(bound)
    return bound


def _arguments_digest(
    pairs: list[tuple[str, Any]], *, allow_secrets: bool = True, code: bool = True,
    held: list[Any] | None = None,
) -> str:  # fmt: skip
    walk = _Walk(allow_secrets=allow_secrets, code=code)
    walk.h.update(b"A%d:" % len(pairs))
    for arg, value in pairs:
        walk.h.update(_str(arg))
        try:
            walk.feed(value)
        except Undigestable as e:
            raise Undigestable(f"argument {arg!r}: {e}") from None
    if held is not None:
        held += walk.kept
    return walk.h.hexdigest()[:HEX]
