"""What a function a factory made holds (no module-level statement shows
it: the factory called in `main()` or a test) is read by content when a run
first fingerprints it (stale48): an object whose attributes raise (a proxy
outside its context, as `flask.current_app` is; an object whose `__dict__`
raises) or a lazy module object (its `__getattr__` imports or raises) made
the workflow's call itself raise that error, first run included. Nothing
tells such an object's contents now: it counts as changed in another
process (fail closed), and as itself in this one."""

from __future__ import annotations

import types
import uuid
from typing import Any

import pytest

import durable
from durable._fingerprint.outsidevalues import contents_now


class Proxy:
    """As werkzeug's LocalProxy outside an application context."""

    def __getattribute__(self, name: str) -> Any:
        if name == "__class__":
            return object.__getattribute__(self, name)
        raise RuntimeError("Working outside of application context.")


class NoDict:
    @property
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        raise RuntimeError("no dict")


class LazyModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"lazy: {name} needs the real import")


AWKWARD = {"proxy": Proxy, "no_dict": NoDict, "lazy_module": lambda: LazyModule("lazyns")}


@pytest.mark.parametrize("kind", sorted(AWKWARD))
def test_a_held_object_whose_attributes_raise_runs_and_replays(kind: str) -> None:
    held, ran = AWKWARD[kind](), []

    def mk(obj: object) -> Any:
        @durable.step
        def s(x: int) -> int:
            ran.append(x)
            return x + (obj is None)

        return s

    step, stop = mk(held), [True]

    @durable.workflow(store=f"memory://review46-{uuid.uuid4().hex}", run_id="r")
    def wf(x: int) -> int:
        out: int = step(x)
        if stop[0]:
            durable.suspend("waiting")
        return out

    with pytest.raises(durable.Suspended):
        wf(10)  # was: RuntimeError from the fingerprint of s
    stop[0] = False
    assert wf(10) == 10 and ran == [10]


def test_what_nothing_tells_counts_as_changed_not_as_its_type() -> None:
    first, second = contents_now(Proxy()), contents_now(Proxy())
    assert first and second and first != second
    assert not any("Proxy" in t for t in first)
