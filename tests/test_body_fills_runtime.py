"""A global filled through a function the body reaches only at run time:
returned by a function of the user's (`pick(kind)(rate)`), looked up by a
name the text does not spell (`getattr(cfg, name)`, `globals()[name]`), a
method of an object whose class the text does not name, a property's
setter or `__iadd__` a store into an object runs, or the method an operator
runs on such an object (`s + rate`, `rate in s`). A resume given another
value for the argument is a changed call, never a replay of the output
computed from the old one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_body_fills import FLOW, resumed_each

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

EXTRA = """
import importlib, operator
HANDLERS = {"rate": set_rate}

class Setter:
    def set(self, rate):
        RATES["k"] = rate

    @property
    def rate(self):
        return RATES.get("k")

    @rate.setter
    def rate(self, value):
        RATES["k"] = value

class Adder:
    def __iadd__(self, rate):
        RATES["k"] = rate
        return self

ADDER = Adder()

SETTER = Setter()

def pick(kind):
    return globals()["set_" + kind]

def make():
    return Setter()

def apply(fn, rate):
    fn(rate)

def by_name(name):
    return getattr(importlib.import_module(__name__), name)

class Summer:
    def __add__(self, rate):
        RATES["k"] = rate
        return self

    def __contains__(self, rate):
        RATES["k"] = rate
        return True

def make_summer():
    return Summer()

@durable.step
def setter_of():
    return Setter()

@durable.step
def setter_name():
    return "set_rate"
"""

# (body, whether a resume with another scale is refused)
BODIES = [
    ("f = pick('rate')\n    f(scale)\n    out = rated(10)", True),
    ("pick('rate')(scale)\n    out = rated(10)", True),
    ("getattr(importlib.import_module(__name__), 'set_rate')(scale)\n    out = rated(10)", True),
    ("getattr(SETTER, 'set')(scale)\n    out = rated(10)", True),
    ("name = 'set'\n    getattr(SETTER, name)(scale)\n    out = rated(10)", True),
    ("obj = make()\n    obj.set(scale)\n    out = rated(10)", True),
    ("by_name('set_rate')(scale)\n    out = rated(10)", True),
    ("f = HANDLERS.get('rate')\n    f(scale)\n    out = rated(10)", True),
    ("operator.methodcaller('set', scale)(SETTER)\n    out = rated(10)", True),
    ("type(SETTER).set(SETTER, scale)\n    out = rated(10)", True),
    ("SETTER.__class__.set(SETTER, scale)\n    out = rated(10)", True),
    ("globals().get('set_rate')(scale)\n    out = rated(10)", True),
    ("globals()['set_rate'](scale)\n    out = rated(10)", True),
    ("[f for k, f in HANDLERS.items()][0](scale)\n    out = rated(10)", True),
    ("globals()[setter_name()](scale)\n    out = rated(10)", True),
    ("eval('set_rate')(scale)\n    out = rated(10)", True),
    ("cfg.__dict__['configure'](scale)\n    out = cfg.from_config(10)", True),
    ("vars(cfg)['configure'](scale)\n    out = cfg.from_config(10)", True),
    ("f = getattr(cfg, 'con' + 'figure')\n    f(scale)\n    out = cfg.from_config(10)", True),
    ("SETTER.set(scale)\n    out = rated(10)", True),
    ("make().set(scale)\n    out = rated(10)", True),
    ("from cfg import configure as conf\n    conf(scale)\n    out = cfg.from_config(10)", True),
    ("exec('set_rate(scale)')\n    out = rated(10)", True),
    ("with_rate = [set_rate]\n    for f in with_rate:\n        f(scale)\n    out = rated(10)", True),
    ("s = setter_of()\n    s.set(scale)\n    out = rated(10)", True),  # a step's output
    ("named = dict(locals())\n    set_rate(named['scale'])\n    out = rated(10)", True),
    ("SETTER.rate = scale\n    out = rated(10)", True),  # a property's setter
    ("s = setter_of()\n    s.rate = scale\n    out = rated(10)", True),
    ("global ADDER\n    ADDER += scale\n    out = rated(10)", True),
    ("apply(pick('rate'), scale)\n    out = rated(10)", True),  # handed to a helper calling it
    ("apply(fn=HANDLERS.get('rate'), rate=scale)\n    out = rated(10)", True),
    # an operator on an object whose class the text does not name
    ("s = make_summer()\n    s + scale\n    out = rated(10)", True),
    ("s = make_summer()\n    assert scale in s\n    out = rated(10)", True),
    # no function of the user's runs with the argument: replayed
    ("set_rate(2)\n    ys = sorted([scale])\n    ys.append(1)\n    out = rated(10)", False),
    ("set_rate(2)\n    t = str(scale)\n    t.upper()\n    out = rated(10)", False),
    ("set_rate(2)\n    apply(str, scale)\n    out = rated(10)", False),  # a function the text names
]


@pytest.mark.slow
def test_each_way_a_function_reached_at_run_time_fills_a_global_in_real_processes(tmp_path: Path) -> None:
    """As `test_each_way_a_global_is_filled_in_real_processes`."""
    resumed_each(tmp_path, BODIES, FLOW + EXTRA)
