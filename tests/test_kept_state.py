"""State a step keeps in its closure (a counter it bumps, a list it appends
to) is the program's state, not an input: it does not count in the step's
fingerprint (DESIGN §3), so calling the run again replays. A cell the step
reads counts by value, as before."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import durable
from durable._fingerprint.kept import kept_state


def test_a_counter_a_step_bumps_does_not_make_the_run_look_changed(store: durable.Store) -> None:
    """The peers' suites (DBOS) count executions this way; it was refused
    with "closure values changed" once the counter had moved."""
    step_counter = 0
    calls: list[int] = []
    seen: dict[int, bool] = {}

    @durable.step
    def step_one(x: int) -> int:
        nonlocal step_counter
        step_counter += 1
        calls.append(x)
        seen[x] = True
        return x + 1

    @durable.workflow(store=store, run_id="w1")
    def wf(x: int) -> int:
        return step_one(x)

    assert wf(1) == 2
    assert wf(1) == 2  # replayed: the body's step did not run again
    assert (step_counter, calls, seen) == (1, [1], {1: True})


def test_a_cell_the_step_reads_still_counts(store: durable.Store) -> None:
    offset = 1

    @durable.step
    def shifted(x: int) -> int:
        return x + offset

    @durable.workflow(store=store, run_id="w2")
    def wf(x: int) -> int:
        return shifted(x)

    assert wf(1) == 2
    offset = 10
    with pytest.raises(durable.DefinitionChangedError, match="closure values changed"):
        wf(1)


def _cells() -> list[object]:
    n = 0
    calls: list[int] = []
    cfg = {"k": 2}

    def bumps() -> None:
        nonlocal n
        n += 1
        calls.append(1)
        cfg["seen"] = 1

    def reads() -> int:
        calls.append(1)
        return len(calls) + cfg["k"]

    def returns() -> int:
        nonlocal n
        n += 1
        return n

    return [bumps, reads, returns]


@pytest.mark.parametrize(
    ("index", "kept"),
    [(0, {"n", "calls", "cfg"}), (1, set()), (2, set())],
    ids=["only-writes", "reads-what-it-appends-to", "returns-its-counter"],
)
def test_only_names_a_function_never_reads_are_kept_state(index: int, kept: set[str]) -> None:
    fn = _cells()[index]
    assert set(kept_state(fn, fn.__code__)) == kept  # type: ignore[attr-defined]


def test_a_cell_read_through_locals_counts(store: durable.Store) -> None:
    """Before: `last` counted as kept state (no name reads it), so the
    second call replayed "Hi, bob" where the step now computes "bob, bob"."""
    last = "Hi"

    @durable.step
    def greet(name: str) -> str:
        nonlocal last
        msg = "{last}, {name}".format(**locals())
        last = name
        return msg

    @durable.workflow(store=store, run_id="w3")
    def wf(name: str) -> str:
        return greet(name)

    assert wf("bob") == "Hi, bob"
    with pytest.raises(durable.DefinitionChangedError, match="closure values changed"):
        wf("bob")


def _frames() -> list[object]:
    import sys

    n = 0

    class Model:
        def eval(self) -> None: ...

    model = Model()

    def through_a_frame() -> int:
        nonlocal n
        n += 1
        return len(sys._getframe().f_locals)

    def calls_a_method_named_eval() -> None:
        nonlocal n
        n += 1
        model.eval()  # reads `model`, not its own variables

    return [through_a_frame, calls_a_method_named_eval]


@pytest.mark.parametrize(("index", "kept"), [(0, set()), (1, {"n"})], ids=["frame", "method"])
def test_a_function_that_reads_its_frame_keeps_no_state(index: int, kept: set[str]) -> None:
    fn = _frames()[index]
    assert set(kept_state(fn, fn.__code__)) == kept  # type: ignore[attr-defined]


TAKEN = """
import durable

PENDING = []
PENDING.extend(["a", "b"])  # the module fills it: it changes it too

@durable.step(cache=True)
def take(x):
    try:
        PENDING.remove(x)  # a write, whose failure tells what PENDING held
    except ValueError:
        return "gone"
    return "took"
"""


def test_a_removal_that_can_fail_reads_what_it_removes_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`remove`, `pop`, `popitem` and `popleft` fail on what the object
    holds (ValueError, IndexError, KeyError): a step calling one computes
    from those contents. The second equal call finds "a" gone; it was
    served the first call's "took"."""
    (tmp_path / "kept_taken.py").write_text(TAKEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.delitem(sys.modules, "kept_taken", raising=False)
    import kept_taken  # type: ignore[import-not-found]

    try:
        assert [kept_taken.take("a"), kept_taken.take("a")] == ["took", "gone"]
    finally:
        sys.modules.pop("kept_taken", None)


def _takers() -> list[object]:
    queue: list[int] = []
    table: dict[int, int] = {}

    def pops() -> None:
        queue.pop()

    def pops_item() -> None:
        table.popitem()

    return [pops, pops_item]


@pytest.mark.parametrize("index", [0, 1], ids=["pop", "popitem"])
def test_a_cell_a_step_takes_from_is_read(index: int) -> None:
    fn = _takers()[index]
    assert set(kept_state(fn, fn.__code__)) == set()  # type: ignore[attr-defined]
