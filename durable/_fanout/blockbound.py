"""What a `loop_over` block's function binds besides its items: a
partial's arguments, the `self` of a bound method, what a decorator over a
step captured, and the run's arguments its closure holds. They are
arguments of every item, in the block's digest and in each item's."""

from __future__ import annotations

from typing import Any

from .._core.bound import bound_values, held_by, unbound
from .._core.cachekey import with_captured
from .._core.identity import fresh_token, is_token, value_digest
from .._core.spec import own_step_spec, step_spec


def bound_digest(fn: Any, held: tuple[Any, ...] = (), bodies: tuple[Any, ...] = ()) -> str | None:
    """The digest of what `fn` binds (`bound.bound_values`: a partial's arguments, the
    `self` of `loop_over(obj.method, items)`), of what a decorator over a step captured,
    and of the run's arguments `held` its closure holds or the locals of `bodies` it reads
    are made from (`bound.held_by`, those with a digest); None when none. A fresh token when they have no digest (`value_digest`)."""
    bound = bound_values(fn)
    taken = [v for v in held_by(fn, held, bodies) if not is_token(value_digest(v))]
    if taken:
        bound.append((tuple(taken), []))
    under = unbound(fn)
    if step_spec(under) is not None and own_step_spec(under) is None:
        # A decorator over a step runs around each item (`executors`): what it captured
        # (`scaled(k)`) is an argument of every call too, by content as in a cache key.
        captured = with_captured(under, "")
        if captured is None:
            return fresh_token()
        bound.append(((under, captured), []))
    return value_digest(bound) if bound else None
