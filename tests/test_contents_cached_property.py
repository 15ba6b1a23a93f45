"""A `functools.cached_property` a program sets itself (`obj.prop = 5`,
before the property was computed or after) is a value of the object like
any attribute: a cached step reading it must not be served the output of
another value. One a step's body computes is derived from the rest and
changes nothing (a replayed step computes nothing); one computed outside
a step counts by its value, the same in every process. Each script runs
in a process of its own, edited in between; the body's executions are
counted."""

from __future__ import annotations

import functools
import subprocess
import textwrap
from pathlib import Path

import pytest

from durable._core.identity import value_digest
from durable._core.ownstate import after_body

from .test_cache_memo import first_line_of

_SCRIPT = """
import functools
import durable
ran = []


class Data:
    def __init__(self, n):
        self.n = n

    @functools.cached_property
    def prop(self):
        return self.n * 10


@durable.step(cache=True)
def use(d):
    ran.append(d.n)
    return d.prop


before = Data(1)
before.prop = 5
after = Data(2)
computed = after.prop
after.prop = 7
filled = Data(3)
print(use(before), use(after), use(filled), use(filled), len(ran))
"""


@pytest.mark.slow  # Python processes
def test_a_cached_property_set_on_an_argument_counts_by_its_value(tmp_path: Path) -> None:
    """Seen failing: after `before.prop = 6` and `after.prop = 8`, "5 7 30
    30 0" (both served the old value's output)."""
    script = tmp_path / "prop_script.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    store = tmp_path / "store"
    assert [first_line_of(script, store) for _ in range(2)] == ["5 7 30 30 3", "5 7 30 30 0"]
    script.write_text(script.read_text().replace("prop = 5", "prop = 6").replace("prop = 7", "prop = 8"))
    assert [first_line_of(script, store) for _ in range(2)] == ["6 8 30 30 2", "6 8 30 30 0"]


_FLOW = """
import functools, os, sys
import durable
ran = []


class Data:
    def __init__(self, n):
        self.n = n

    @functools.cached_property
    def prop(self):
        return self.n * 10


@durable.step
def fill(d):
    ran.append("fill")
    return d.prop


@durable.step
def crash(d):
    ran.append("crash")
    if os.environ.get("CRASH"):
        os._exit(3)
    return d.n


@durable.workflow(run_id="prop-1")
def flow(d):
    return fill(d) + crash(d)


print(flow(Data(4)), " ".join(ran))
"""


@pytest.mark.slow
def test_a_cached_property_a_replayed_step_filled_is_no_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fill` computes `d.prop` and its process dies in `crash`; resumed,
    `fill` replays (nothing computes `d.prop`): `crash`'s call is the same
    call, and the run completes, `fill` run once."""
    script = tmp_path / "flow_script.py"
    script.write_text(textwrap.dedent(_FLOW))
    monkeypatch.setenv("CRASH", "1")
    with pytest.raises(subprocess.CalledProcessError):
        first_line_of(script, tmp_path / "store")
    monkeypatch.delenv("CRASH")
    assert first_line_of(script, tmp_path / "store") == "44 crash"


class Budget(dict):  # type: ignore[type-arg]
    @functools.cached_property
    def total(self) -> int:
        return sum(self.values())


def test_a_cached_property_a_step_computed_is_not_state() -> None:
    """A replayed step does not compute it: the digest must not depend on
    it. One the program set does."""
    fresh, read = Budget(a=1, b=2), Budget(a=1, b=2)
    before = value_digest(read)
    assert read.total == 3  # as a step's body computes it: now in read.__dict__
    with after_body():  # the digest after that body
        assert value_digest(read) == before
    assert value_digest(fresh) == value_digest(read)
    assert value_digest(Budget(a=1, b=3)) != value_digest(fresh)
    fresh.total = 4
    assert value_digest(fresh) != value_digest(read)


def test_a_cached_property_whose_value_refers_to_its_object_is_freed_with_it() -> None:
    """What the digest remembers of a cached property holds neither its
    object nor its value alive: a value referring back to the object (a
    model given its owner) kept both, up to 4096 of them, for good."""
    import gc
    import weakref

    class Model:
        def __init__(self, owner: object) -> None:
            self.owner = owner

    class Job:
        @functools.cached_property
        def model(self) -> Model:
            return Model(self)

    job = Job()
    job.model  # noqa: B018 (computed outside a step: counts by its value)
    value_digest(job)
    gone = weakref.ref(job.model)
    del job
    gc.collect()
    assert gone() is None
