"""perf46: a step a run found plain (it binds nothing, reads no argument of
the run, writes nothing another step reads) is identified at its later
calls of the run by its digest alone (`StepRecord.plain_in`,
`steps.replay_or_prepare`). Each check of that shortcut, and each check a
replay makes, is seen failing here when it is left out."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core import written
from durable._core.bound import held_by
from durable._core.context import current_state
from durable._core.spec import StepSpec, _others_may_run
from durable.errors import CorruptRecordError, DefinitionChangedError, NondeterminismError

STATE: dict[str, int] = {}
RATE = 2


def _quiet(x: int) -> int:
    print(f"quiet {x}")  # counted by capsys: no module state written
    return x


def _writes(x: int) -> int:
    STATE["k"] = x
    print(f"writes {x}")  # counted by capsys: no module state written
    return x


quiet = durable.step(name="quiet")(_quiet)


@durable.step(name="reads")
def reads() -> int:
    return STATE.get("k", 0)


@durable.step(name="scaled")
def scaled(x: int) -> int:
    print(f"scaled {x}")  # counted by capsys: no module state written
    return x * RATE


@durable.step(name="other")
def other(x: int) -> int:
    print(f"other {x}")  # counted by capsys: no module state written
    return x


def _spec(step: object) -> StepSpec:
    cells = [c.cell_contents for c in step.__closure__ or ()]  # type: ignore[attr-defined]
    (spec,) = [c for c in cells if isinstance(c, StepSpec)]
    return spec


def _calls(code: types.CodeType, body: Callable[[], Any]) -> tuple[int, Any]:
    """How many times `code` runs while `body` does, and what it returned."""
    count = [0]

    def seen(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is code:
            count[0] += 1

    sys.setprofile(seen)
    try:
        value = body()
    finally:
        sys.setprofile(None)
    return count[0], value


def ran(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


@pytest.fixture(autouse=True)
def _clean() -> Any:
    STATE.clear()
    code = _quiet.__code__
    yield
    _quiet.__code__ = code
    _quiet.__dict__.pop("__wrapped__", None)
    for key in [k for k in written.WRITERS if k[0] == "quiet"]:  # (name, fingerprint)
        written.WRITERS.pop(key)


def test_a_plain_step_is_identified_once_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    @durable.workflow(store=durable.open_store(tmp_path / "s", durability="none"), run_id="r")
    def flow(n: int = 5) -> int:
        return sum(quiet(i) for i in range(n))

    # The run's argument makes `held_by` look; the first call of the step decides for the run.
    assert _calls(held_by.__code__, flow) == (1, 10)  # was 5: once a call
    assert _calls(written.with_written.__code__, lambda: flow.resume("r").value) == (0, 10)
    assert ran(capsys) == [f"quiet {i}" for i in range(5)]


def _swapped(swap: Callable[[], None], undo: Callable[[], None]) -> Callable[[int], int]:
    """A body calling `quiet` again after `swap` made it write what `reads` reads."""

    def body(done: int = 0) -> int:
        quiet(1)  # found plain: the run's later calls are identified by their digest alone
        swap()
        try:
            total = quiet(2) + reads()
        finally:
            undo()
        if not done:
            durable.suspend("later")
        return total

    return body


def _swap_code() -> None:
    _quiet.__code__ = _writes.__code__


_QUIET_CODE = _quiet.__code__


@pytest.mark.parametrize(
    ("swap", "undo", "second"),
    [
        (_swap_code, lambda: setattr(_quiet, "__code__", _QUIET_CODE), "writes 2"),
        # What runs is the function's own code; what it writes is looked for in what it wraps.
        (
            lambda: setattr(_quiet, "__wrapped__", _writes),
            lambda: delattr(_quiet, "__wrapped__"),
            "quiet 2",
        ),
    ],
    ids=["code", "wrapped"],
)
def test_a_function_changed_in_a_run_is_looked_at_again(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    swap: Callable[[], None],
    undo: Callable[[], None],
    second: str,
) -> None:
    flow = _flow(tmp_path, _swapped(swap, undo))
    if _others_may_run():  # another thread (pytest-xdist's, an S3 client's) may have swapped it
        with pytest.raises(durable.DefinitionChangedError, match="changed while run 'r' went on"):
            flow()  # (stale58) was recorded, and the resume with the code undone replayed `writes 2`
        assert ran(capsys) == ["quiet 1", second]  # refused as it ended: nothing recorded
        return
    # Only the run's own body swapped it, which its resume does again before the call.
    with pytest.raises(durable.Suspended):
        flow()
    # Its record counts what it wrote (`with_written`), and so does its replay's check.
    assert [v for (name, _), v in written.WRITERS.items() if name == "quiet"] == [("STATE",)]
    value = flow.resume("r", done=1).value  # was refused: "arguments changed"
    assert (value, ran(capsys)) == (
        (4, ["quiet 1", second]) if second == "writes 2" else (2, ["quiet 1", second])
    )


def _forged() -> bool:
    """On the run's first attempt (no record yet), as if another step's
    entry sat at `other`'s id, with another fingerprint: whether it did."""
    state = current_state()
    assert state is not None
    if state.records:
        return False
    state.plain[id(_spec(other))] = (_spec(quiet), _spec(other).fn.__code__, "0" * 12)
    return True


def test_an_entry_of_another_step_is_never_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    @durable.workflow(store=durable.open_store(tmp_path / "s", durability="none"), run_id="r")
    def flow() -> int:
        first = _forged()
        total = other(1) + other(2)
        if first:
            durable.suspend("later")
        return total

    with pytest.raises(durable.Suspended):
        flow()
    assert flow() == 3  # replayed: recorded under its own fingerprint
    assert ran(capsys) == ["other 1", "other 2"]


def _flow(tmp_path: Path, body: Callable[[int], int]) -> Any:
    return durable.workflow(
        store=durable.open_store(tmp_path / "s", durability="none"), run_id="r", name="perf46"
    )(body)


def test_a_replay_refuses_a_changed_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = [1, 2]

    def body(done: int = 0) -> int:
        total = sum(quiet(x) for x in calls)
        if not done:
            durable.suspend("later")
        return total

    flow = _flow(tmp_path, body)
    with pytest.raises(durable.Suspended):
        flow()
    calls[1] = 3
    with pytest.raises(DefinitionChangedError, match="argument"):
        flow.resume("r", done=1)
    assert ran(capsys) == ["quiet 1", "quiet 2"]


def test_a_replay_refuses_another_step_at_a_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    which = [0, 0]

    def body(done: int = 0) -> int:
        total = quiet(1) + (quiet, other)[which[1]](2)
        if not done:
            durable.suspend("later")
        return total

    flow = _flow(tmp_path, body)
    with pytest.raises(durable.Suspended):
        flow()
    which[1] = 1
    with pytest.raises(NondeterminismError):
        flow.resume("r", done=1)
    assert ran(capsys) == ["quiet 1", "quiet 2"]


def test_a_replay_refuses_a_changed_global_a_step_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def body(done: int = 0) -> int:
        total = scaled(1) + scaled(2)
        if not done:
            durable.suspend("later")
        return total

    flow = _flow(tmp_path, body)
    with pytest.raises(durable.Suspended):
        flow()
    monkeypatch.setattr(sys.modules[__name__], "RATE", 3)
    with pytest.raises(DefinitionChangedError, match="scaled"):
        flow.resume("r", done=1)
    assert ran(capsys) == ["scaled 1", "scaled 2"]


def test_a_replay_refuses_a_damaged_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def body(done: int = 0) -> int:
        total = quiet(1) + quiet(2)
        if not done:
            durable.suspend("later")
        return total

    flow = _flow(tmp_path, body)
    with pytest.raises(durable.Suspended):
        flow()
    store = durable.open_store(tmp_path / "s")
    raw = store.load_sealed("perf46", "r", {})
    sealed = {**raw}.get("steps/00000001")
    if sealed is None:  # a local log hands body steps' records by position
        found: dict[Any, bytes] = {}
        store.load_sealed("perf46", "r", found)
        sealed = found[1]
    # Written whole (the log's entry is intact), its own sealed bytes bad.
    damaged = bytearray(sealed)
    damaged[damaged.rindex(b"quiet") + 1] ^= 0x20
    store.replace_record("perf46", "r", "steps/00000001", bytes(damaged))
    with pytest.raises(CorruptRecordError, match="checksum"):
        flow.resume("r", done=1)
    assert ran(capsys) == ["quiet 1", "quiet 2"]


def test_a_replay_refuses_a_changed_step_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def body(done: int = 0) -> int:
        total = quiet(1) + quiet(2)
        if not done:
            durable.suspend("later")
        return total

    flow = _flow(tmp_path, body)
    with pytest.raises(durable.Suspended):
        flow()
    _quiet.__code__ = _doubled.__code__
    with pytest.raises(DefinitionChangedError, match="quiet"):
        flow.resume("r", done=1)
    assert ran(capsys) == ["quiet 1", "quiet 2"]


def _doubled(x: int) -> int:
    print(f"doubled {x}")  # counted by capsys: no module state written
    return 2 * x
