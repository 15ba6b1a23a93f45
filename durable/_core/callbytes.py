"""The canonical bytes of a call (DESIGN §2): what a step call's argument
digest hashes, spelled for the commonest calls (scalars passed positionally
to positional parameters, scalar defaults for the rest) without binding.

A record of such a call whose bytes are short and hold numbers only keeps
them (`kept_bytes`), and its replay compares the call's bytes with them
(`replayrow.same_fields`): equal bytes are equal SHA-256 digests, so the
comparison never says "same" where the digests would differ, and no hash is
made. Strings and bytes are never kept: a record stores the digest of a
step's argument, not the argument (a token passed to a step stays unwritten).
Everything else is digested as before (`identity.call_digest`)."""

from __future__ import annotations

import inspect
import struct
from collections.abc import Callable
from typing import Any

from .._storage.argdigest import HEX as HEX
from .._storage.argdigest import digest_of as digest_of
from .signature import Forwarded

_KEPT = 64  # the longest canonical bytes a record keeps (one int: about a dozen)
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
}
# A bytearray is not among them: one held twice (`f(buf, buf)`) is one
# object, told apart from two equal ones (`identity._Walk.met`).
_IMMUTABLE = frozenset(_SCALAR)  # what a step cannot change
# What a record may keep the canonical bytes of: never text nor bytes (see above).
_NUMBERS = frozenset({int, float, bool, complex, type(None)})


def call_bytes(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> bytes | None:
    """The bytes `identity._arguments_digest` would hash for this call,
    built without binding; None when the call needs the full path (keywords,
    a non-scalar argument or default, too many or too few arguments)."""
    hit = _SHAPES.get(id(signature))
    shape = hit[1] if hit is not None and hit[0] is signature else _shape(signature)
    if shape is None or kwargs:
        return None
    names, tails, start, _ = shape
    n = len(args)
    tail = tails[n] if n < len(tails) else None
    if tail is None:
        return None  # too many arguments, or one left out without a scalar default
    if n == 1 and type(args[0]) is int:  # one id or counter (most steps): one format
        try:  # `_int` inline: a call costs more than the bytes
            return b"%si%d;%s" % (start, args[0], tail)
        except ValueError:
            return start + _int(args[0]) + tail
    if not n:
        return tail  # the whole input, head included
    parts, i = [start], 0
    for value in args:
        if i:  # the first name is in `start`
            parts.append(names[i])
        i += 1
        enc = _SCALAR.get(type(value))
        if enc is None:
            return None
        parts.append(enc(value))
    parts.append(tail)
    return b"".join(parts)


def kept_bytes(
    signature: inspect.Signature | None, args: tuple[Any, ...], canonical: bytes
) -> bytes | None:
    """`canonical` (the call's `call_bytes`) when a record may keep it: short,
    and made of numbers only (the arguments and the defaults filled in)."""
    if signature is None or len(canonical) > _KEPT:
        return None
    hit = _SHAPES.get(id(signature))
    if hit is None or hit[0] is not signature or hit[1] is None or not hit[1][3][len(args)]:
        return None
    for a in args:
        if type(a) not in _NUMBERS:
            return None
    return canonical


def immutable_call(signature: inspect.Signature | None, args: tuple[Any, ...]) -> bool:
    """Whether a call of positional arguments on the fast path holds only
    immutable scalars, which its step cannot change (`identity.changed_in_place`)."""
    hit = _SHAPES.get(id(signature))
    if hit is None or hit[0] is not signature or hit[1] is None:
        return False
    tails = hit[1][1]
    if len(args) >= len(tails) or tails[len(args)] is None:
        return False
    return all(type(a) in _IMMUTABLE for a in args)


# The encoded names of the parameters, all positional; for each count k of arguments given the
# bytes the others' defaults add (None: one has none, or not a scalar one), `tails[0]` being the
# whole input of a call without arguments; the start of a call with arguments (its head and
# first name); for each k whether the defaults added are numbers (`kept_bytes`).
_Shape = tuple[tuple[bytes, ...], tuple[bytes | None, ...], bytes, tuple[bool, ...]]
# id(signature) -> (signature, shape): the signature is kept so that its id is not reused.
_SHAPES: dict[int, tuple[inspect.Signature, _Shape | None]] = {}
_HEADS = [b"A%d:" % n for n in range(256)]


def _shape(signature: inspect.Signature) -> _Shape | None:
    params = signature.parameters.values()
    shape = None
    # No defaults to add through a `Forwarded` signature (`fill_defaults`): no fast path.
    if (
        all(p.kind in _POSITIONAL for p in params)
        and len(params) < len(_HEADS)
        and type(signature) is not Forwarded
    ):
        names = tuple(_str(p.name) for p in params)
        defaults = [_default(p.default) for p in params]
        numbers = [type(p.default) in _NUMBERS for p in params]
        tails: list[bytes | None] = []
        for k in range(len(names) + 1):
            rest = list(zip(names[k:], defaults[k:], strict=True))
            ok = all(d is not None for _, d in rest)
            tail = b"".join(n + d for n, d in rest if d is not None) if ok else None
            tails.append(_HEADS[len(names)] + tail if k == 0 and tail is not None else tail)
        start = _HEADS[len(names)] + names[0] if names else b""
        kept = tuple(all(numbers[k:]) for k in range(len(names) + 1))
        shape = (names, tuple(tails), start, kept)
    if len(_SHAPES) >= 4096:  # steps redefined again and again (a notebook)
        _SHAPES.clear()
    _SHAPES[id(signature)] = (signature, shape)
    return shape


def _default(value: Any) -> bytes | None:
    # Only immutable scalars (a mutable one may change); None without one (`Parameter.empty`).
    enc = _SCALAR.get(type(value))
    return None if enc is None else enc(value)
