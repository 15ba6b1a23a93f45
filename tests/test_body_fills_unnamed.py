"""A global filled through a function the body calls without naming it in
the call: bound to a local first, passed on to `map` or `partial`, held in a
list or dict, called from a function or lambda defined in the body, a
class whose `__init__` or other method fills it, or a function given as
an argument. A
resume given another value for the argument is a changed call, never a
replay of the output computed from the old one."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from tests.test_body_fills import FLOW, far, fill_farther, resumed_each
from tests.test_closure_arguments import refused_on_resume

EXTRA = """
SETTERS = [set_rate]
HANDLERS = {"rate": set_rate}

class Setup:
    def __init__(self, rate):
        RATES["k"] = rate

class Setter:
    def set(self, rate):
        RATES["k"] = rate

SETTER = Setter()
SET_PARTIAL = functools.partial(set_rate)
SET_BOUND = SETTER.set

def describe(x):
    return str(x)
"""

# (body, whether a resume with another scale is refused)
BODIES = [
    ("f = set_rate\n    f(scale)\n    out = rated(10)", True),
    ("for f in SETTERS:\n        f(scale)\n    out = rated(10)", True),
    ("HANDLERS['rate'](scale)\n    out = rated(10)", True),
    ("list(map(set_rate, [scale]))\n    out = rated(10)", True),
    ("functools.partial(set_rate, scale)()\n    out = rated(10)", True),
    ("def apply(s):\n        RATES['k'] = s\n    apply(scale)\n    out = rated(10)", True),
    ("def apply(s):\n        cfg.configure(s)\n    apply(scale)\n    out = cfg.from_config(10)", True),
    ("apply = lambda s: set_rate(s)\n    apply(scale)\n    out = rated(10)", True),
    ("def apply():\n        set_rate(scale)\n    apply()\n    out = rated(10)", True),  # by closure
    ("Setup(scale)\n    out = rated(10)", True),
    ("s = Setter()\n    s.set(scale)\n    out = rated(10)", True),  # a method of an object made
    ("s = SETTER\n    s.set(scale)\n    out = rated(10)", True),  # ... or held by a global
    ("SET_PARTIAL(scale)\n    out = rated(10)", True),  # a partial held by a global
    ("SET_BOUND(scale)\n    out = rated(10)", True),  # a bound method held by a global
    # a function of the script that fills nothing, bound to a local: replayed
    ("set_rate(2)\n    f = describe\n    f(scale)\n    out = rated(10)", False),
    # a function defined in the body, called with no argument of the run: replayed
    ("def note(m):\n        RATES['m'] = m\n    note('start')\n    set_rate(2)\n    out = rated(10)", False),
]


@pytest.mark.slow
def test_each_way_an_unnamed_function_fills_a_global_in_real_processes(tmp_path: Path) -> None:
    """As `test_each_way_a_global_is_filled_in_real_processes`, for the
    functions a call does not name."""
    resumed_each(tmp_path, BODIES, FLOW + EXTRA)


RATES: dict[str, int] = {}


def set_rate(rate: int) -> None:
    RATES["k"] = rate


@durable.step
def rated(n: int) -> int:
    return n * RATES["k"]


@pytest.mark.parametrize("step", [rated, far])
def test_a_function_given_as_an_argument_may_fill_any_global(
    store: durable.Store, step: durable.Step[[int], int]
) -> None:
    """A function the run is given fills what the body's source cannot
    tell: every global may be made from the arguments, of the body's module
    (`set_rate`) or another (`fill_farther` and `far` of `test_body_fills`)."""
    setter = set_rate if step is rated else fill_farther

    @durable.workflow(run_id="u1", store=store)
    def report(rate: int, setup: object = setter, ready: bool = False) -> int:
        setup(rate)  # type: ignore[operator]
        out: int = step(10)
        if not ready:
            durable.suspend("waiting")
        return out

    # running gives 30, not 20
    refused_on_resume(report, "u1", 2, match="arguments changed", rate=3)


LIMIT = 1


@durable.step
def limited(n: int) -> int:
    return n * LIMIT


def test_a_global_the_body_rebinds_counts_when_a_nested_function_has_a_local_of_its_name(
    store: durable.Store,
) -> None:
    """A function defined in the body with a local named as the global
    (`LIMIT = 0` there) leaves the body's own `global LIMIT; LIMIT = rate`
    a fill from `rate`."""

    @durable.workflow(run_id="u2", store=store)
    def report(rate: int, ready: bool = False) -> int:
        global LIMIT

        def reset() -> int:
            LIMIT = 0  # noqa: F841 (its own local)
            return 0

        LIMIT = rate + reset()
        out: int = limited(10)
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(report, "u2", 2, match="arguments changed", rate=3)  # running gives 30
