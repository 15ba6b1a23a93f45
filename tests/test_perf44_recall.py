"""The shortcuts of perf44 on a completed run's re-call keep every check:
what a registry's lookup method holds is still walked (only objects that
hold nothing skip the walkers), and a resume with overrides checks the
signature once and still refuses an override the workflow has no
parameter for."""

from __future__ import annotations

import functools
import sys
import types
from pathlib import Path

import pytest

import durable
from durable._core.signature import signature_inputs
from durable._fingerprint.holds import held_callables, held_classes
from durable.errors import ConfigurationError


class Plugin:
    pass


def helper() -> int:
    return 1


REG = {"helper": helper, "plugin": Plugin}


@pytest.mark.parametrize(
    "value", [REG.get, REG.__getitem__, functools.partial(dict.get, REG), [REG], (REG,)]
)
def test_what_a_lookup_of_a_registry_holds_is_still_found(value: object) -> None:
    # `REG.get` is a `types.BuiltinFunctionType`, as `len` is: not a leaf.
    assert helper in held_callables(value)
    assert held_classes(value) == (Plugin,)


@pytest.mark.parametrize(
    "value", [helper, Plugin, sys, 3, 2.5, "s", b"b", None, True, object(), len]
)
def test_what_holds_nothing_gives_what_the_walkers_gave(value: object) -> None:
    assert (held_callables(value), held_classes(value)) == ([], ())


def _signature_checks() -> tuple[list[str], types.CodeType]:
    return [], signature_inputs.__code__


def test_a_resume_with_overrides_checks_the_signature_once(tmp_path: Path) -> None:
    runs: list[int] = []

    @durable.workflow(store=durable.open_store(tmp_path / "store"), run_id="r")
    def flow(x: int = 1, done: bool = False) -> int:
        runs.append(x)
        if not done:
            durable.suspend("later")
        return x

    with pytest.raises(durable.Suspended):
        flow(5)
    assert flow.resume("r", done=True).value == 5
    checks, code = _signature_checks()

    def count(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is code:
            checks.append(event)

    sys.setprofile(count)
    try:
        assert flow.resume("r", done=True).value == 5
    finally:
        sys.setprofile(None)
    assert (len(checks), runs) == (1, [5, 5])  # was 2: once before the manifest, once to merge
    with pytest.raises(ConfigurationError, match="has no parameter"):
        flow.resume("r", dne=True)
    assert runs == [5, 5]
