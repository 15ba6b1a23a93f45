"""A global filled from a run argument in ways the body's own statements do
not show: by a function the body calls, in another module than the step
reading it, or held by a step a factory made at import. A resume given
another value for the argument is a changed call, never a replay of the
output computed from the old one."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable
from tests import bodyfill_helpers as helpers
from tests.bodyfill_helpers import CONFIG as SHARED
from tests.scripts import run_in
from tests.test_closure_arguments import refused_on_resume

RATES: dict[str, Any] = {}
FACTORS: list[int] = []
SEEN: list[str] = []
SCALE = 1.0


def set_rate(rate: int) -> None:
    RATES["k"] = rate


def logged(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any) -> Any:
        return fn(*args)

    return wrapper


@logged
def set_rate_logged(rate: int) -> None:
    RATES["k"] = rate


def set_scale(scale: float) -> None:
    global SCALE
    SCALE = scale


@durable.step
def rated(n: int) -> int:
    SEEN.append("rated")
    return n * RATES["k"]


@durable.step
def scaled(n: int) -> int:
    SEEN.append("scaled")
    return int(n * SCALE)


def make_product(factors: list[int]) -> Callable[[], int]:
    def product() -> int:
        SEEN.append("product")
        out = 1
        for f in factors:
            out *= f
        return out

    return durable.step(product, name="product")


product_of_factors = make_product(FACTORS)  # made at import, holding the global the body fills


@pytest.fixture(autouse=True)
def _fresh() -> None:
    SEEN.clear()
    helpers.SEEN.clear()
    RATES.clear()
    FACTORS.clear()


def test_a_global_a_function_of_the_body_fills(store: durable.Store) -> None:
    @durable.workflow(run_id="f1", store=store)
    def report(rate: int, ready: bool = False) -> int:
        set_rate(rate)
        out: int = rated(10)
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(report, "f1", 2, rate=3)  # was: 20, running gives 30
    assert SEEN == ["rated"]
    assert report.resume("f1", rate=2, ready=True).value == 20  # the same rate: replayed
    assert SEEN == ["rated"]


def test_a_global_a_decorated_function_of_the_body_fills(store: durable.Store) -> None:
    @durable.workflow(run_id="f8", store=store)
    def report(rate: int, ready: bool = False) -> int:
        set_rate_logged(rate)  # the wrapper passes it on: the function it wraps fills
        out: int = rated(10)
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(report, "f8", 2, rate=3)  # running gives 30
    assert SEEN == ["rated"]


def test_a_global_a_function_of_the_body_rebinds(store: durable.Store) -> None:
    @durable.workflow(run_id="f2", store=store)
    def report(scale: float, ready: bool = False) -> int:
        set_scale(scale)
        out: int = scaled(10)
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(report, "f2", 2.0, scale=3.0)  # running gives 30
    assert SEEN == ["scaled"]


def test_a_global_of_another_module_filled_by_its_function(store: durable.Store) -> None:
    @durable.workflow(run_id="f3", store=store)
    def report(scale: float, ready: bool = False) -> int:
        helpers.configure(scale)
        out: int = helpers.configured_sum([1, 2, 3])
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(report, "f3", 2.0, scale=10.0)  # was: 12, running gives 60
    assert helpers.SEEN == ["configured_sum"]
    assert report.resume("f3", scale=2.0, ready=True).value == 12
    assert helpers.SEEN == ["configured_sum"]


def test_a_global_the_body_fills_read_by_a_step_of_another_module(store: durable.Store) -> None:
    @durable.workflow(run_id="f4", store=store)
    def report(scale: float, ready: bool = False) -> int:
        SHARED["scale"] = scale  # the helpers module's CONFIG, by another name
        out: int = helpers.configured_sum([1, 2, 3])
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(report, "f4", 2.0, scale=10.0)
    assert helpers.SEEN == ["configured_sum"]


def test_a_global_the_body_fills_held_by_a_step_made_at_import(store: durable.Store) -> None:
    @durable.workflow(run_id="f5", store=store)
    def report(factors: list[int], ready: bool = False) -> int:
        FACTORS[:] = factors
        out: int = product_of_factors()
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(report, "f5", [2, 3], factors=[2, 5])  # was: 6, running gives 10
    assert SEEN == ["product"]
    assert report.resume("f5", factors=[2, 3], ready=True).value == 6
    assert SEEN == ["product"]


def test_a_function_of_the_body_that_fills_nothing_changes_nothing(store: durable.Store) -> None:
    @durable.workflow(run_id="f6", store=store)
    def report(rate: int, ready: bool = False) -> int:
        set_rate(2)  # the same on every call
        out: int = rated(10)
        if not ready:
            durable.suspend("waiting")
        return out + rate

    with pytest.raises(durable.Suspended):
        report(1)
    assert report.resume("f6", rate=5, ready=True).value == 25
    assert SEEN == ["rated"]


def make_async_child(ys: list[int]) -> Any:
    @durable.workflow(name="async_made_child")
    async def async_made_child() -> int:
        SEEN.append("child")
        return sum(ys)

    return async_made_child


def test_an_async_child_workflow_a_factory_makes_in_the_body(store: durable.Store) -> None:
    @durable.workflow(run_id="f7", store=store)
    async def parent(xs: list[int], ready: bool = False) -> int:
        child = make_async_child(sorted(xs))
        out: int = await child()
        if not ready:
            durable.suspend("waiting")
        return out

    with pytest.raises(durable.Suspended):
        asyncio.run(parent([1, 2]))
    with pytest.raises(durable.DefinitionChangedError):  # was: 3, running gives 6
        asyncio.run(parent.resume("f7", xs=[1, 2, 3], ready=True))
    assert SEEN == ["child"]
    assert asyncio.run(parent.resume("f7", xs=[1, 2], ready=True)).value == 3
    assert SEEN == ["child"]


SETTINGS_MODULE = """
import os
import durable

CONFIG = {}
SCALE = 1

def configure(scale):
    CONFIG["scale"] = scale

def set_scale(scale):
    global SCALE
    SCALE = scale

def _count():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("step\\n")

@durable.step
def from_config(n):
    _count()
    return n * CONFIG["scale"]

@durable.step
def from_scale(n):
    _count()
    return n * SCALE

class Settings:
    rate = 1

    @classmethod
    def load(cls, rate):
        cls.rate = rate

class Registry:
    def __init__(self):
        self.rate = 1

    def register(self, rate):
        self.rate = rate

REG = Registry()

@durable.step
def from_settings(n):
    _count()
    return n * Settings.rate

@durable.step
def from_registry(n):
    _count()
    return n * REG.rate

@durable.step
def from_env(n):
    _count()
    return n * int(os.environ["SCALE"])
"""


BODIES = [
    "cfg.configure(scale)\n    out = cfg.from_config(10)",  # a function of another module
    "cfg.set_scale(scale)\n    out = cfg.from_scale(10)",  # which rebinds its global
    "cfg.CONFIG['scale'] = scale\n    out = cfg.from_config(10)",  # through the module
    "cfg.SCALE = scale\n    out = cfg.from_scale(10)",
    "CFG['scale'] = scale\n    out = cfg.from_config(10)",  # under another name
    "import cfg as c2\n    c2.SCALE = scale\n    out = c2.from_scale(10)",  # imported in the body
    "globals()['LOCAL']['scale'] = scale\n    out = local(10)",
    "globals().update(LOCAL={'scale': scale})\n    out = local(10)",
    "cfg.Settings.load(scale)\n    out = cfg.from_settings(10)",  # a classmethod sets it
    "cfg.REG.register(scale)\n    out = cfg.from_registry(10)",  # a method of an object
    "os.environ['SCALE'] = str(scale)\n    out = cfg.from_env(10)",  # the environment
    "Local.load(scale)\n    out = from_local(10)",  # a classmethod of the script's class
]


def test_each_way_a_global_is_filled_in_real_processes(tmp_path: Path) -> None:
    """A script with a workflow for each of `BODIES` suspends each after its
    step with scale=2; a new process resumes each with scale=3: refused
    (running gives 30, not 20); a third with scale=2 replays: each step ran once.
    One script for all: three processes, not three for each."""
    (tmp_path / "cfg.py").write_text(SETTINGS_MODULE)
    flows = "".join(
        f"""
@durable.workflow(run_id="r{i}")
def wf{i}(scale, ready=False):
    {body}
    if not ready:
        durable.suspend("waiting")
    return out
"""
        for i, body in enumerate(BODIES)
    )
    (tmp_path / "flow.py").write_text(
        f"""
import os, sys
import durable
import cfg
from cfg import CONFIG as CFG

LOCAL = {{}}

@durable.step
def local(n):
    cfg._count()
    return n * LOCAL["scale"]

class Local(cfg.Settings):
    pass

@durable.step
def from_local(n):
    cfg._count()
    return n * Local.rate
{flows}
for i in range({len(BODIES)}):
    wf = globals()[f"wf{{i}}"]
    try:
        if sys.argv[1] == "start":
            wf(2)
        else:
            print(i, "value", wf.resume(f"r{{i}}", scale=int(sys.argv[2]), ready=True).value)
    except durable.Suspended:
        print(i, "suspended")
    except durable.DefinitionChangedError:
        print(i, "refused")
"""
    )

    def each(said: str) -> list[str]:
        return [f"{i} {said}" for i in range(len(BODIES))]

    assert run_in(tmp_path, "flow.py", "start").splitlines() == each("suspended")
    assert run_in(tmp_path, "flow.py", "resume", "3").splitlines() == each("refused")
    assert run_in(tmp_path, "flow.py", "resume", "2").splitlines() == each("value 20")
    assert (tmp_path / "count").read_text() == "step\n" * len(BODIES)


def test_a_body_whose_analysis_fails_counts_every_global(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An analysis that raises (a body read in a way not foreseen) leaves
    every step of the body's module computing from every argument."""
    from durable._fingerprint import derived

    def broken(fn: Any) -> Any:
        raise RecursionError("a body too deep to walk")

    monkeypatch.setattr(derived, "_analysed", broken)

    @durable.workflow(run_id="f12", store=store)
    def report(rate: int, ready: bool = False) -> int:
        set_rate(2)  # the same on every call: only the failed analysis counts it
        out: int = rated(10)
        if not ready:
            durable.suspend("waiting")
        return out + rate

    refused_on_resume(report, "f12", 1, rate=5)
    assert SEEN == ["rated"]
