"""A global filled from a run argument in ways the body's own statements do
not show: by a function the body calls, in another module than the step
reading it, or held by a step a factory made at import. A resume given
another value for the argument is a changed call, never a replay of the
output computed from the old one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.scripts import run_in
from tests.test_closure_arguments import refused_on_resume

SEEN: list[str] = []
RATE = {"k": 2}  # never changed: the in-process tests' fingerprints stay the same


@durable.step
def rated(n: int) -> int:
    SEEN.append("rated")
    return n * RATE["k"]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    SEEN.clear()


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

def _count():  # a count of each case's own (its own copy of this module)
    with open(os.environ["COUNT_FILE"] + "." + __name__, "a") as f:
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


# (body, whether a resume with another scale is refused: the last one fills
# its global from no argument, and replays)
BODIES = [
    ("set_rate(scale)\n    out = rated(10)", True),  # a function of the script fills it
    ("set_rate_logged(scale)\n    out = rated(10)", True),  # decorated (functools.wraps)
    ("FACTORS[:] = [scale]\n    out = product()", True),  # held by a step made at import
    ("cfg.configure(scale)\n    out = cfg.from_config(10)", True),  # of another module
    ("cfg.set_scale(scale)\n    out = cfg.from_scale(10)", True),  # which rebinds its global
    ("cfg.CONFIG['scale'] = scale\n    out = cfg.from_config(10)", True),  # through the module
    ("cfg.SCALE = scale\n    out = cfg.from_scale(10)", True),
    ("CFG['scale'] = scale\n    out = cfg.from_config(10)", True),  # under another name
    ("import cfg as c2\n    c2.SCALE = scale\n    out = c2.from_scale(10)", True),
    ("globals()['LOCAL']['scale'] = scale\n    out = local(10)", True),
    ("globals().update(LOCAL={'scale': scale})\n    out = local(10)", True),
    ("cfg.Settings.load(scale)\n    out = cfg.from_settings(10)", True),  # a classmethod
    ("cfg.REG.register(scale)\n    out = cfg.from_registry(10)", True),  # an object's method
    ("os.environ['SCALE'] = str(scale)\n    out = cfg.from_env(10)", True),  # the environment
    ("Local.load(scale)\n    out = from_local(10)", True),  # a classmethod of the script's class
    ("set_rate(2)\n    out = rated(10)", False),  # the same on every call
]

FLOW = """
import functools, os, sys
import durable
import cfg
from cfg import CONFIG as CFG

LOCAL, RATES, FACTORS = {}, {}, []

def set_rate(rate):
    RATES["k"] = rate

def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper

@logged
def set_rate_logged(rate):
    RATES["k"] = rate

@durable.step
def rated(n):
    cfg._count()
    return n * RATES["k"]

def make_product(factors):
    def product():
        cfg._count()
        out = 1
        for f in factors:
            out *= f * 10
        return out
    return durable.step(product, name="product")

product = make_product(FACTORS)

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
"""


@pytest.mark.slow
def test_each_way_a_global_is_filled_in_real_processes(tmp_path: Path) -> None:
    """For each of `BODIES`, its workflow is run with scale=2 (it suspends
    after its step), then resumed in a new process with scale=3: refused
    (running gives 30, not 20), or for a global filled from no argument
    replayed; for two, a third resumes it with scale=2: replayed. Each step
    ran once."""
    resumed_each(tmp_path, BODIES, FLOW, replayed_too=(0, 3))


def resumed_each(
    tmp_path: Path, bodies: list[tuple[str, bool]], flow: str, replayed_too: tuple[int, ...] = ()
) -> None:
    """Each body started with scale=2 then resumed with scale=3 (and those
    `replayed_too` with scale=2), all bodies in one process per phase, each
    in modules of its own (`flow{i}` and its `cfg{i}`): a global one case's
    body filled must not change another's definition."""
    for i, (body, _) in enumerate(bodies):
        (tmp_path / f"cfg{i}.py").write_text(SETTINGS_MODULE)
        (tmp_path / f"flow{i}.py").write_text((flow + f"""
@durable.workflow(run_id="r{i}")
def wf(scale, ready=False):
    {body}
    if not ready:
        durable.suspend("waiting")
    return out
""").replace("cfg", f"cfg{i}"))
    (tmp_path / "drive.py").write_text(DRIVE)

    def run(phase: str, scale: int, cases: Iterable[int]) -> list[str]:
        out = run_in(tmp_path, "drive.py", phase, str(scale), *map(str, cases))
        return out.splitlines()

    every = range(len(bodies))
    assert run("start", 2, every) == ["suspended"] * len(bodies)
    told = run("resume", 3, every)
    assert told == ["refused True" if refused else "value 20" for _, refused in bodies], " ".join(f"{i}:{t}" for i, t in enumerate(told))
    if replayed_too:
        assert run("resume", 2, replayed_too) == ["value 20"] * len(replayed_too)
    for i, (body, _) in enumerate(bodies):
        assert (tmp_path / f"count.cfg{i}").read_text() == "step\n", body


DRIVE = """
import importlib, sys
import durable

phase, scale = sys.argv[1], int(sys.argv[2])
for i in sys.argv[3:]:
    wf = importlib.import_module(f"flow{i}").wf
    try:
        if phase == "start":
            wf(scale)
        else:
            print("value", wf.resume(f"r{i}", scale=scale, ready=True).value)
    except durable.Suspended:
        print("suspended")
    except durable.DefinitionChangedError as e:
        print("refused", "arguments changed" in str(e))
"""


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
        out: int = rated(10)
        if not ready:
            durable.suspend("waiting")
        return out + rate

    refused_on_resume(report, "f12", 1, rate=5)
    assert SEEN == ["rated"]


FAR: dict[str, int] = {"k": 1}


def fill_far(rate: int) -> None:
    fill_farther(rate)


def fill_farther(rate: int) -> None:
    FAR["k"] = rate


@durable.step
def far(n: int) -> int:
    return n * FAR["k"]


def test_helpers_past_the_followed_ones_may_fill_any_global(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chain of helpers longer than the functions followed from one call:
    what is left unread may fill any global of the body's module."""
    from durable._fingerprint import fills

    monkeypatch.setattr(fills, "MOST", 1)  # `fill_far` is read, `fill_farther` is not

    @durable.workflow(run_id="f13", store=store)
    def report(rate: int, ready: bool = False) -> int:
        fill_far(rate)
        out: int = far(10)
        if not ready:
            durable.suspend("waiting")
        return out

    # running gives 30, not 20
    refused_on_resume(report, "f13", 2, match="arguments changed", rate=3)
