"""A child run given its own id (`child.with_options(run_id="shared")(1)`),
which several parent runs share, was refused when a second parent called
it with the same arguments: the body's statement reading the parent's
argument `n` called the result of a call, taken for a function only the
run knows (`pick(kind)(xs)`) that may fill any global from `n`; so the
child's step counted the parent's `n` among its arguments, and its record,
made under `n=1`, was "made by a call with other arguments" under `n=2`.
`X.with_options(...)` of a workflow or a step the text names runs that
workflow, as `X(...)` does."""

from __future__ import annotations

import types
from typing import cast

import durable
from durable.testing import memory_store

ran: list[int] = []


@durable.step
def scale(x: int) -> int:
    ran.append(x)
    return x * 10


@durable.workflow
def shared(x: int) -> int:
    return scale(x)


@durable.workflow
def parent(n: int) -> list[int]:
    return [shared.with_options(run_id="shared")(1) for _ in range(n)]


def test_a_shared_child_run_replays_for_another_parents_arguments() -> None:
    ran.clear()
    flow = parent.with_options(store=memory_store())
    assert flow.with_options(run_id="p1")(1) == [10]
    assert flow.with_options(run_id="p2")(2) == [10, 10]
    assert flow.with_options(run_id="p3")(3) == [10, 10, 10]
    assert ran == [1]  # the shared child's step ran once, for the first parent


def pick(kind: str) -> object:
    return shared if kind == "shared" else scale


def test_a_function_only_the_run_knows_still_counts() -> None:
    """`pick(kind)(1)` may still be anything: what it reads stays counted."""
    from durable._fingerprint.derived import made_in

    def body(kind: str) -> object:
        return pick(kind)(1)  # type: ignore[operator]

    def options(kind: str) -> object:
        return [shared.with_options(run_id=kind)(1)]

    assert made_in(cast(types.FunctionType, body)).stored  # any global, from `kind`
    assert not made_in(cast(types.FunctionType, options)).stored
