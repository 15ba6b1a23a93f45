"""The replay path's lean parts (issue 13): each gives exactly what the
plain way gives, with less work a call or a record."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from durable._core import callbytes
from durable._core.identity import call_digest
from durable._storage import argdigest
from durable._storage.logentry import data_at, data_of, span


def _none() -> None:
    """No parameter."""


def _one(a: Any) -> None:
    """One, without a default."""


def _mixed(a: Any, b: Any, c: Any = 3, d: Any = "x") -> None:
    """Two without defaults, two with."""


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (_none, ()),
        (_one, (7,)),
        (_one, ("s",)),
        (_mixed, (1, 2)),
        (_mixed, (1, 2.5, None)),
        (_mixed, (1, b"b", 4, "y")),
        (_mixed, (2**70, True)),
    ],
    ids=lambda v: getattr(v, "__name__", None) or repr(v),
)
def test_the_fast_digest_hashes_the_calls_bytes_and_is_the_bound_calls_digest(
    fn: Callable[..., None], args: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call of positional scalars hashes its canonical bytes, one hash a
    call and nothing shared between calls (perf53: no started hash copied),
    and its digest is still the digest of the bound call, again and again."""
    sig = inspect.signature(fn)
    names = list(sig.parameters)
    bound = call_digest(sig, (), dict(zip(names, args, strict=False)), "f")  # the binding path
    assert call_digest(sig, args, {}, "f") == bound
    made: list[bytes] = []
    real = argdigest._small_sha256

    def counted(data: bytes = b"") -> Any:
        made.append(data)
        return real(data)

    monkeypatch.setattr(argdigest, "_small_sha256", counted)
    assert [call_digest(sig, args, {}, "f") for _ in range(3)] == [bound] * 3
    assert made == [callbytes.call_bytes(sig, args, {})] * 3
    other = (*args[:-1], "other") if args else ()
    if args:
        assert call_digest(sig, other, {}, "f") != bound


def test_the_data_of_many_spans_is_the_data_at_each() -> None:
    blob = bytes(range(200))
    spans = [(0, span(10, 5)), (1, 0), (2, span(3, 1)), (5, span(190, 10))]
    assert data_of(blob, spans) == {k: data_at(blob, at) for k, at in spans if at}
    assert list(data_of(blob, spans)) == [0, 2, 5]  # a span of 0: no record at that position
