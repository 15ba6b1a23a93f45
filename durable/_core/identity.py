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

import contextlib
import hashlib
import importlib
import inspect
import os
import struct
from collections.abc import Callable, Iterable
from typing import Any

from .._calls import callers
from .content import NO_DIGEST as NO_DIGEST
from .content import Secret, content_of
from .content import Undigestable as Undigestable
from .ownstate import after_body
from .redact import Redacted
from .signature import Forwarded, fill_defaults

sha256 = hashlib.sha256


def _builtin_sha256() -> Callable[[bytes], Any]:
    """CPython's own SHA-256 (`_sha2` from 3.12, `_sha256` before): the same digest without
    OpenSSL's set-up, a third cheaper on a call's few bytes; OpenSSL's stays for the large."""
    for module in ("_sha2", "_sha256"):
        with contextlib.suppress(ImportError, AttributeError):
            return importlib.import_module(module).sha256  # type: ignore[no-any-return]
    return hashlib.sha256


_small_sha256 = _builtin_sha256()

HEX = 32  # hex digits kept in records: 128 bits
# Nesting deeper than this is not digested (the walk recurses): fail closed.
MAX_DEPTH = 200
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


# -- canonical scalars: self-delimiting, type-tagged byte strings -------------

_pack_float = struct.Struct(">d").pack
_pack_complex = struct.Struct(">dd").pack


def _str(v: str) -> bytes:
    data = v.encode("utf-8", "surrogatepass")  # lone surrogates (os.fsdecode) too
    return b"s%d:" % len(data) + data


def _int(v: int) -> bytes:
    try:
        return b"i%d;" % v
    except ValueError:  # past 4300 digits `%d` refuses it: hex, under a tag of its own
        return b"I%x;" % v


# Canonical scalars (not the codec's plain data, nor a fingerprint's: see
# `_storage.codec.is_plain`).
_SCALAR: dict[type, Callable[[Any], bytes]] = {
    str: _str,
    int: _int,
    float: lambda v: b"f" + _pack_float(v),  # the bits: -0.0 and 0.0 differ
    bool: lambda v: b"T" if v else b"F",
    type(None): lambda v: b"N",
    bytes: lambda v: b"b%d:" % len(v) + v,
    complex: lambda v: b"c" + _pack_complex(v.real, v.imag),
    bytearray: lambda v: b"B%d:" % len(v) + bytes(v),
}
_IMMUTABLE = frozenset(_SCALAR).difference({bytearray})  # what a step cannot change


# -- the walk ------------------------------------------------------------------


class _Walk:
    """Feeds one value into a SHA-256. `stack` holds the values being walked
    (id -> depth) so that a cycle refers back instead of recursing forever."""

    def __init__(self, *, allow_secrets: bool = True, code: bool = True) -> None:
        self.h = hashlib.sha256()
        self.stack: dict[int, int] = {}
        # False for the step cache: a secret must never be part of a key that
        # other calls (other secrets) could match.
        self.allow_secrets = allow_secrets
        # False for a derived run id (`content_of`): see `run_id_digest`.
        self.code = code

    def feed(self, v: Any) -> None:
        enc = _SCALAR.get(type(v))
        if enc is not None:
            self.h.update(enc(v))
            return
        depth = self.stack.get(id(v))
        if depth is not None:
            self.h.update(b"@%d;" % depth)
            return
        if len(self.stack) >= MAX_DEPTH:
            raise Undigestable(f"nested deeper than {MAX_DEPTH} levels")
        self.stack[id(v)] = len(self.stack)
        try:
            self._compound(v)
        finally:
            del self.stack[id(v)]

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
        elif isinstance(v, Redacted):
            if not self.allow_secrets:
                raise Secret("it holds a durable.redact() value")
            self.h.update(b"R")  # a secret: only that one was there
        else:
            kind, content = content_of(v, code=self.code, walk=self)
            self.h.update(b"o" + _str(kind))
            # The stand-in is a fresh tuple (or a scalar): no level of its own.
            enc = _SCALAR.get(type(content))
            if enc is not None:
                self.h.update(enc(content))
            else:
                self._compound(content)

    def _unordered(self, tag: bytes, items: Iterable[Any]) -> None:
        # Iteration order of a set depends on the hash seed: sort the items' digests.
        outer, subs = self.h, []
        try:
            for item in items:
                self.h = hashlib.sha256()
                self.feed(item)
                subs.append(self.h.digest())
        finally:
            self.h = outer
        self.h.update(b"%s%d:" % (tag, len(subs)) + b"".join(sorted(subs)))


# -- what the engine calls ------------------------------------------------------


def fresh_token() -> str:
    """Stands for a value with no digest: never equal to anything recorded."""
    return "!" + os.urandom(HEX // 2).hex()[1:]


def is_token(digest: str | None) -> bool:
    """A digest that stands for a value without one (`fresh_token`)."""
    return digest is not None and digest.startswith("!")


def value_digest(value: Any) -> str:
    """The digest of one value (a loop item, a sleep's duration)."""
    walk = _Walk()
    try:
        walk.feed(value)
    except NO_DIGEST:
        return fresh_token()
    return walk.h.hexdigest()[:HEX]


def call_digest(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any], name: str
) -> str:
    """The digest of a call over its BOUND arguments with defaults applied (`fill_defaults`):
    f(1), f(x=1) and f() with default x=1 are one call. A call that does not
    bind raises TypeError naming the step (it would fail the same way on
    every retry). Without a signature, the arguments count as given."""
    if signature is None:
        pairs: list[tuple[str, Any]] = [("*", args), ("**", kwargs)]
    else:
        fast = _all_scalar_positional(signature, args, kwargs)
        if fast is not None:
            return fast
        pairs = list(_bind(signature, args, kwargs, name).arguments.items())
    try:
        return _arguments_digest(pairs)
    except NO_DIGEST:
        return fresh_token()


def changed_in_place(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any],
    name: str, digest: str, rejoin: Callable[[str], str] | None = None,
) -> bool:
    """Whether the step changed an object it was given (`rows.append(x)`),
    which its replay cannot redo. Immutable scalars (the hot path) cannot.
    `rejoin`: how `digest` was made of the call's digest (`bound.with_bound`:
    the instance of a bound method may change too)."""
    hit = _SHAPES.get(id(signature)) if not kwargs and rejoin is None else None
    if hit is not None and hit[0] is signature and hit[1] is not None:
        tails = hit[1][1]
        if len(args) < len(tails) and tails[len(args)] is not None:
            for a in args:
                if type(a) not in _IMMUTABLE:
                    break
            else:
                return False
    if is_token(digest):
        return False
    with after_body():
        after = call_digest(signature, args, kwargs, name)
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
    pairs: list[tuple[str, Any]], *, allow_secrets: bool = True, code: bool = True
) -> str:
    walk = _Walk(allow_secrets=allow_secrets, code=code)
    walk.h.update(b"A%d:" % len(pairs))
    for arg, value in pairs:
        walk.h.update(_str(arg))
        try:
            walk.feed(value)
        except Undigestable as e:
            raise Undigestable(f"argument {arg!r}: {e}") from None
    return walk.h.hexdigest()[:HEX]


def _all_scalar_positional(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> str | None:
    """The per-step hot path (ids, names, numbers passed positionally to
    positional parameters, scalar defaults for the rest): the bytes
    `_arguments_digest` would hash, built without binding. None when the
    call needs the full path."""
    hit = _SHAPES.get(id(signature))
    shape = hit[1] if hit is not None and hit[0] is signature else _shape(signature)
    if shape is None or kwargs:
        return None
    names, tails, starts = shape
    n = len(args)
    tail = tails[n] if n < len(tails) else None
    if tail is None:
        return None  # too many arguments, or one left out without a scalar default
    h = starts[n].copy()
    if n == 1 and type(args[0]) is int:  # one id or counter (most steps): one update
        try:  # `_int` inline, as below: a call costs more than the digest's bytes
            h.update(b"i%d;%s" % (args[0], tail))
        except ValueError:
            h.update(_int(args[0]) + tail)
    else:  # fed part by part, as `_arguments_digest` feeds them: no list to join
        feed, i = h.update, 0
        for value in args:
            if i:  # the first name is in `starts`
                feed(names[i])
            i += 1
            t = type(value)
            if t is int:  # ids and counters: the commonest argument, spelled as `_SCALAR[int]`
                try:
                    feed(b"i%d;" % value)
                except ValueError:
                    feed(_int(value))
                continue
            enc = _SCALAR.get(t)
            if enc is None:
                return None
            feed(enc(value))
        if n and tail:
            feed(tail)
    digest: str = h.hexdigest()
    return digest[:HEX]


# The encoded names of the parameters, all positional, and for each count k of arguments given
# the bytes the others' defaults add (None: one has none, or not a scalar one); `tails[0]` is the
# whole input of a call without arguments; `starts[k]` a hash fed its start, to copy.
_Shape = tuple[tuple[bytes, ...], tuple[bytes | None, ...], tuple[Any, ...]]
# id(signature) -> (signature, shape): the signature is kept so that its id is not reused.
_SHAPES: dict[int, tuple[inspect.Signature, _Shape | None]] = {}
_HEADS = [b"A%d:" % n for n in range(256)]


def _shape(signature: inspect.Signature) -> _Shape | None:
    params = signature.parameters.values()
    shape = None
    # No defaults to add through a `Forwarded` signature (`fill_defaults`): no fast path.
    if all(p.kind in _POSITIONAL for p in params) and len(params) < len(_HEADS) and type(signature) is not Forwarded:
        names = tuple(_str(p.name) for p in params)
        defaults = [_default(p.default) for p in params]
        tails: list[bytes | None] = []
        for k in range(len(names) + 1):
            rest = list(zip(names[k:], defaults[k:], strict=True))
            ok = all(d is not None for _, d in rest)
            tail = b"".join(n + d for n, d in rest if d is not None) if ok else None
            tails.append(_HEADS[len(names)] + tail if k == 0 and tail is not None else tail)
        first = _small_sha256(_HEADS[len(names)] + names[0] if names else b"")  # and its name
        shape = (names, tuple(tails), (_small_sha256(tails[0] or b""), *[first] * len(names)))
    if len(_SHAPES) >= 4096:  # steps redefined again and again (a notebook)
        _SHAPES.clear()
    _SHAPES[id(signature)] = (signature, shape)
    return shape


def _default(value: Any) -> bytes | None:
    # Only immutable scalars (a mutable one may change); None without one (`Parameter.empty`).
    enc = _SCALAR.get(type(value)) if type(value) is not bytearray else None
    return None if enc is None else enc(value)
