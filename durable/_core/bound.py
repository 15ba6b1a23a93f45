"""What a step's callable binds besides the arguments of its call: the
arguments a `functools.partial` binds and the instance a bound method
carries. They are arguments of every call (`obj.method(x)` is
`type(obj).method(obj, x)`), so they count as arguments do, by content: in
a step's record, a `loop_over` block and a cache key alike. The
fingerprint counts a list or an object there by its type only (program
state), which alone would replay, or serve from the cache, the output
computed for an instance whose state has changed since.

A run's argument that a step reads through its closure (a step defined in
the workflow body, or made there by a factory) counts the same way
(`held_by`): the fingerprint would count a list there by its type only. So
do the arguments a local of the body is made from, for a function nested in
the body that reads that local (`ys = sorted(xs)`: `Body`).
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Mapping
from typing import Any

from .._fingerprint.derived import OUTSIDE, made_at, made_in, read_from_body
from .._fingerprint.reach import target_of
from .filled import filled_from_outside
from .identity import _IMMUTABLE, is_token, value_digest


class Body:
    """A running workflow's body, whose locals the functions defined in it
    read, and the digests of the run's arguments (`argument_digests`)."""

    __slots__ = ("digests", "fills", "function", "outside")

    def __init__(self, function: types.FunctionType, digests: Mapping[str, str]) -> None:
        self.function, self.digests = function, digests
        self.fills = bool(made_in(function).stored)  # a module's step may read what it filled
        self.outside: dict[str, str] = {}  # `filled.filled_from_outside`, as the run's first reader found it


def body_of(fn: object, digests: Mapping[str, str]) -> tuple[Body, ...]:
    """The `Body` of a workflow's function, none when it takes no argument
    and fills no global from the environment or a file."""
    under = target_of(unbound(fn))
    # Without arguments, only a body that fills a global from outside has any.
    if isinstance(under, types.FunctionType) and (digests or made_in(under).stored):
        return (Body(under, digests),)
    return ()


def note_made(fn: object, bodies: tuple[Body, ...]) -> None:
    """`fn` is made into a step, or given to `loop_over`, while a workflow
    body runs (made by a factory the body calls, `total =
    make_total(sorted(xs))`, `durable.step(make(ys))`): what its closure
    holds may be made from the run's arguments. It
    keeps those its statement reads or whose locals it reads are made from
    (`made_at`), for `held_by`. A function defined in the body needs none:
    which of the body's locals it reads is known exactly."""
    under = unbound(fn)
    codes = {id(b.function.__code__): b for b in bodies}
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and id(frame.f_code) not in codes:
        frame = frame.f_back
    if frame is None or bare(under):  # a function holding nothing reads no argument
        return
    assert isinstance(under, types.FunctionType)  # `bare`
    body = codes[id(frame.f_code)].function
    if id(under.__code__) not in made_in(body).nested:
        params = made_at(body, frame.f_lineno or 0)
        under.__durable_made_at__ = (body.__code__, params)  # type: ignore[attr-defined]


def binds(fn: object) -> bool:
    """Whether `fn` binds anything (decided once, at decoration)."""
    return bool(bound_values(fn))


def bound_values(fn: object) -> list[Any]:
    """The arguments each partial binds (keywords in name order) and the
    `self` of each bound method, outermost first, through the steps they
    wrap (`loop_over(durable.step(model.predict), items)`), and the object
    a callable without code of its own computes from (`_instance_of`);
    empty for a function that binds nothing."""
    bound: list[Any] = []
    while True:
        if isinstance(fn, functools.partial):
            bound.append((fn.args, sorted(fn.keywords.items(), key=lambda pair: pair[0])))
            fn = fn.func
        elif isinstance(fn, types.MethodType):
            bound.append(((fn.__self__,), []))
            fn = fn.__func__
        else:
            inner = _step_function(fn)
            if inner is not None:
                fn = inner
                continue
            owner = _instance_of(fn)
            if owner is not None:
                bound.append(((owner,), []))
            return bound


def _instance_of(fn: object) -> object:
    """The object whose state a callable without Python code of its own
    computes from: the `self` of a builtin method (`config.get`; a module's
    builtin function binds its module, which is no data), or the callable
    object itself (a model whose `__call__` predicts). None for a function,
    a class, or an object that wraps a Python function (a class-based
    decorator, `functools.lru_cache`): the function it wraps is what runs,
    and its code is fingerprinted, as the fingerprint resolves it."""
    if isinstance(fn, (types.FunctionType, type)):
        return None
    if isinstance(fn, (types.BuiltinMethodType, types.MethodWrapperType)):
        owner = getattr(fn, "__self__", None)
        return None if owner is None or isinstance(owner, types.ModuleType) else owner
    return None if isinstance(target_of(fn), types.FunctionType) else fn


def bound_digest(fns: list[Any]) -> str | None:
    """What the step callables `fns` bind, digested, None for none. Without
    a digest (an object holding a client) "?": counted by its type, as the
    fingerprint counts it, a completed run's value is returned as before."""
    if not fns:
        return None
    digest = value_digest([bound_values(fn) for fn in fns])
    return "?" if is_token(digest) else digest


def bound_arguments(fn: object) -> tuple[Any, ...]:
    """What `fn` binds as the leading arguments of a call, for a message:
    the instance as a method step's `self` is shown, a partial's arguments
    before the call's own."""
    return tuple(v for args, kws in bound_values(fn) for v in (*args, *(v for _, v in kws)))


def unbound(fn: Any) -> Any:
    """The function under the partials, method bindings and steps."""
    while True:
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, types.MethodType):
            fn = fn.__func__
        else:
            inner = _step_function(fn)
            if inner is None:
                return fn
            fn = inner


def _step_function(fn: object) -> Any:
    """The function a `@durable.step` wraps (its spec's `fn`), None for
    anything else, a decorator put over a step with `functools.wraps`
    included (it copied the step's attributes, but runs code of its own:
    `spec.own_step_spec`). Read by attribute: the spec module imports this
    one."""
    inner = getattr(getattr(fn, "__durable_step__", None), "fn", None)
    if inner is None or inner is fn or getattr(fn, "__wrapped__", None) is not inner:
        return None
    return inner


def with_bound(
    fn: object, digest: str, held: tuple[Any, ...] = (), bodies: tuple[Body, ...] = ()
) -> str:
    """A call's digest joined with what `fn` binds, and with the run's
    arguments `held` that it reads through its closure (`held_by`). A call
    without a digest stays without one; a bound value without one makes a
    fresh token (the call looks changed: fail closed)."""
    if is_token(digest):
        return digest
    bound = bound_values(fn)
    if bound:
        digest = value_digest((digest, bound))
    return with_held(fn, digest, held, bodies)


def with_held(
    fn: object, digest: str, held: tuple[Any, ...], bodies: tuple[Body, ...] = ()
) -> str:
    """A call's digest joined with the run's arguments `held` that `fn`
    reads through its closure, and those the body's locals it reads are
    made from (`held_by`). One without a digest (a client) counts as the
    fingerprint counts it, by its type: a closure is how a step reaches one."""
    found = held_by(fn, held, bodies) if held or bodies else []
    taken = [d for d in map(value_digest, found) if not is_token(d)]
    return value_digest((digest, taken)) if taken and not is_token(digest) else digest


def run_arguments(values: Any) -> tuple[Any, ...]:
    """Of a run's argument values, those `held_by` looks for: not a number,
    a string or another immutable scalar, which a step's fingerprint counts
    by value when its closure holds one, nor a function, counted by its
    code there. (A list, a dict or an object counts by its type there.)
    Told by type alone: a run's start does not walk a large argument."""
    return tuple(
        v for v in values if type(v) not in _IMMUTABLE and not isinstance(v, types.FunctionType)
    )


def held_by(fn: object, arguments: tuple[Any, ...], bodies: tuple[Body, ...] = ()) -> list[Any]:
    """The values of `arguments` (by identity) that the function under `fn`
    holds in its closure cells or defaults, or that a function it holds
    there does (a helper defined in the body, the function a decorator
    wraps, a step it calls): a step defined in the body that reads `xs`
    computes from it as if it were given it. Then, when one of them is
    defined in a workflow's body and reads its locals, the digests of the
    run's arguments those locals are made from (`read_from_body`)."""
    if not arguments and not bodies:
        return []
    hit = _UNDER.get(id(fn))
    if hit is None or hit[0] is not fn:
        if len(_UNDER) >= 4096:
            _UNDER.clear()
        start = unbound(fn)
        first = target_of(start)
        hit = _UNDER[id(fn)] = (fn, start, first, bare(first) and bare(start))
    _, start, first, holds_nothing = hit
    if holds_nothing:  # most steps: a module's function, nothing held
        for body in bodies:
            if body.fills:  # unless a body fills a global it may read
                break
        else:
            return []
    wanted = {id(v) for v in arguments}
    found: list[Any] = []
    made: set[tuple[str, str]] = set()
    todo, seen = [first, start], set()
    while todo:
        f = todo.pop()
        if not isinstance(f, types.FunctionType) or id(f) in seen:
            continue
        seen.add(id(f))
        held = [_contents(c) for c in f.__closure__ or ()]
        held += [*(f.__defaults__ or ()), *(f.__kwdefaults__ or {}).values()]
        for body in bodies:
            made.update(_made_from(f, body, held))
        for v in held:
            if id(v) in wanted and not any(v is x for x in found):
                found.append(v)
            elif isinstance(v, (types.FunctionType, functools.partial, types.MethodType)):
                todo += [v, unbound(v)]  # a step defined in the body: the function it runs
    if made:
        found.append(("made from the run's arguments", sorted(made)))
    return found


def _made_from(f: types.FunctionType, body: Body, held: list[Any]) -> list[tuple[str, str]]:
    """The run's arguments (name, digest) that the body's locals `f` reads
    are made from, or that the statement making it did (`note_made`); one
    without a digest counts by its type, as `with_held` counts it."""
    names = read_from_body(f, body.function, held)
    made = getattr(f, "__durable_made_at__", None)
    if made is not None and made[0] is body.function.__code__:
        names |= made[1]
    found = [(n, d) for n in names if not is_token(d := body.digests.get(n, "!"))]
    return found + filled_from_outside(f, body) if OUTSIDE in names else found


# id(fn) -> (fn, the function under it, what that one wraps, whether both
# hold nothing): asked on each call of a step of a run with arguments, where
# walking them again cost a replayed step a third more (the entry holds fn:
# its id stays). A closure cannot change; defaults set after a step's first
# call of the process are not looked for.
_UNDER: dict[int, tuple[object, object, object, bool]] = {}


def bare(f: object) -> bool:
    """Whether `f` holds nothing: no closure, no defaults (or is no function)."""
    return not isinstance(f, types.FunctionType) or (
        f.__closure__ is None and not f.__defaults__ and not f.__kwdefaults__
    )


def _contents(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # not assigned yet (a function that calls itself)
        return None
