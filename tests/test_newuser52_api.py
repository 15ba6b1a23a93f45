"""The 52nd new-user walk, the library's side: what a user types on a
first try, from the README and docs/."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable
from durable._errortext import PACKAGE


def test_an_option_passed_as_an_argument_names_with_options(tmp_path: Path) -> None:
    """Before: `w(1, run_id="r1")` said only "w(): got an unexpected keyword
    argument 'run_id'", and `w.resume(r, restart=True)` that w has no
    parameter restart and to answer a wait_for() with it."""
    executed: list[int] = []

    @durable.workflow(store=str(tmp_path))
    def w(x: int) -> int:
        executed.append(x)
        return x

    with pytest.raises(TypeError) as e:
        w(1, run_id="r1")
    assert str(e.value).endswith("w(): got an unexpected keyword argument 'run_id'; run_id is an option, "
                                 "not an argument: w.with_options(run_id=...)(...)")
    with pytest.raises(TypeError) as e:
        w.run(1, store=str(tmp_path), wait=3)
    assert "store and wait are options, not arguments: w.with_options(store=..., wait=...)(...)" in str(e.value)
    with pytest.raises(durable.ConfigurationError) as c:
        w.resume("r1", restart=True)
    assert "restart is an option, not an argument: w.with_options(restart=...).resume(...)" in str(c.value)
    assert executed == []
    assert w.with_options(run_id="r1")(1) == 1 and executed == [1]


def _ours(error: BaseException) -> list[str]:
    return [f.name for f in traceback.extract_tb(error.__traceback__) if f.filename.startswith(PACKAGE)]


@pytest.mark.parametrize("decorator", ["step", "workflow"])
def test_a_decorator_given_options_shows_its_error_from_the_users_line(
    decorator: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `@durable.step(retries=2)` over a function it refuses (a
    generator function, one typed at the `python -` prompt) showed durable's
    frames above the message (decorate, memo_fingerprint, _analyse, ...);
    `@durable.step` alone showed one."""
    monkeypatch.delenv("DURABLE_TRACEBACK", raising=False)  # as a user runs: conftest keeps every frame

    def numbers() -> Iterator[int]:
        yield 1

    bare, given = getattr(durable, decorator), getattr(durable, decorator)(name="n")
    errors = []
    for decorate in (bare, given):
        with pytest.raises(durable.ConfigurationError) as e:
            decorate(numbers)
        errors.append(e.value)
    assert [len(_ours(e)) for e in errors] == [1, 1], [_ours(e) for e in errors]


def test_a_run_listed_passed_for_its_id_says_to_pass_its_run_id(tmp_path: Path) -> None:
    """Before: `wf.history(wf.runs()[0])` was a StorageError, "store ...
    failed: reading w/RunInfo(workflow='...', ...)", as if the store had
    failed; the store was never at fault."""

    @durable.workflow(store=str(tmp_path))
    def w() -> int:
        return 1

    assert w.run().value == 1
    (info,) = w.runs()
    for call in (w.history, w.resume, w.delete):
        with pytest.raises(durable.ConfigurationError) as e:
            call(info)  # type: ignore[arg-type]
        assert str(e.value) == "invalid run id: it must be a string, not RunInfo (pass its .run_id)", call
    assert len(w.history(info.run_id)) == 1 and [i.run_id for i in w.runs()] == [info.run_id]
