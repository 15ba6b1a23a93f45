"""The 47th new-user walk, in the library: a decorator or option misused
(`@durable.step` on a generator function or a property, `@durable.workflow
("name")`, `configure(on_change="rerunn")`, a run id with a `/`, a store URL
of no protocol, a fork at no position) and a call
that does not bind (a workflow without its argument, a step with one too
many) are shown at the user's line with durable's message, not under the
frames of durable's code that found the mistake; a resume's unknown keyword
of a workflow without parameters says so."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._errortext import PACKAGE
from durable.testing import memory_store


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As a user runs: the project's tests keep every frame (conftest)."""
    monkeypatch.delenv("DURABLE_TRACEBACK", raising=False)
    yield


def _ours(error: BaseException) -> list[str]:
    """The functions of durable's files the traceback shows."""
    return [f.name for f in traceback.extract_tb(error.__traceback__) if f.filename.startswith(PACKAGE)]


def _async_generator() -> None:
    @durable.step
    async def agen(n: int) -> Any:
        yield n


def _generator() -> None:
    @durable.step
    def gen(n: int) -> Any:
        yield n


def _named() -> None:
    @durable.workflow("name")  # type: ignore[call-overload]
    def wf() -> int:
        return 1


def _property() -> None:
    class C:
        @durable.step  # type: ignore[misc]
        @property
        def p(self) -> int:
            return 1


def _configure() -> None:
    durable.configure(on_change="rerunn")  # type: ignore[arg-type]


def _run_id() -> None:
    @durable.workflow
    def wf() -> int:
        return 1

    wf.with_options(run_id="a/b")


def _open_store() -> None:
    durable.open_store("bad://x")


def _gc() -> None:
    durable.gc(keep_last=-1)


def _fork(tmp_path: Path) -> None:
    @durable.workflow(store=str(tmp_path / "s"), run_id="r1")
    def wf() -> int:
        return 1

    wf()
    wf.fork("r1", at="x")  # type: ignore[arg-type]


def _history(tmp_path: Path) -> None:
    @durable.workflow(store=str(tmp_path / "s"))
    def wf() -> int:
        return 1

    wf.history("nope")


MANAGED: dict[str, tuple[Callable[..., None], str]] = {
    "open_store": (_open_store, "fsspec knows no protocol 'bad'"),
    "gc": (_gc, "keep_last= takes a whole number >= 0, not -1"),
    "fork": (_fork, "the position to fork at"),
    "history": (_history, "no run 'nope' of workflow"),
}


@pytest.mark.parametrize("case", sorted(MANAGED))
def test_a_run_management_mistake_is_shown_at_the_users_line(case: str, tmp_path: Path, shown: None) -> None:
    """Before: `durable.open_store("bad://x")`, `gc(keep_last=-1)`,
    `wf.fork(run, at="x")`, `wf.history("nope")` showed two to four frames
    of durable's above the message."""
    make, said = MANAGED[case]
    with pytest.raises(durable.DurableError) as e:
        make(*([tmp_path] if case in ("fork", "history") else []))
    assert said in str(e.value), str(e.value)
    assert _ours(e.value) == ["shown"], _ours(e.value)  # the one line that raises it again


MISUSED: dict[str, tuple[Callable[[], None], str]] = {
    "async_generator": (_async_generator, "agen is an async generator function (it yields)"),
    "generator": (_generator, "gen is a generator function (it yields)"),
    "named": (_named, "pass name='name' (a keyword argument)"),
    "property": (_property, "C.p is a property, which is not callable: put @property above"),
    "configure": (_configure, "on_change must be one of 'refuse', 'rerun', not 'rerunn'"),
    "run_id": (_run_id, "invalid run id 'a/b'"),
}


@pytest.mark.parametrize("case", sorted(MISUSED))
def test_a_misused_decorator_or_option_is_shown_at_the_users_line(case: str, shown: None) -> None:
    """Before: four to nine frames of durable's files above the message
    (`checked`, `step`, `decorate`, `refuse_generators`; for a builtin or
    a class, the fingerprinter's), and an async generator was "a generator
    function", a property `<property object at 0x...> is not callable`."""
    make, said = MISUSED[case]
    with pytest.raises(durable.ConfigurationError) as e:
        make()
    assert said in str(e.value), str(e.value)
    assert _ours(e.value) == ["checked"], _ours(e.value)  # the one line that raises it again


def test_every_frame_stays_under_durable_traceback_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_TRACEBACK", "full")
    with pytest.raises(durable.ConfigurationError) as e:
        _async_generator()
    assert _ours(e.value)[-1] == "refuse_generators", _ours(e.value)


def test_a_workflow_call_that_does_not_bind_is_shown_at_the_users_line(tmp_path: Path, shown: None) -> None:
    """Before: `wf()` without its argument showed six frames of durable's
    (down to `_bind`), as if durable had failed; Python shows a plain
    function's at the call. (A step's: test_newuser41_api.)"""

    @durable.workflow(store=str(tmp_path / "s"))
    def needs(x: int) -> int:
        return x

    with pytest.raises(TypeError, match="missing a required argument: 'x'") as e:
        needs()  # type: ignore[call-arg]
    assert _ours(e.value) == ["__call__", "drive_sync"], _ours(e.value)  # the call, and its driver's re-raise
    assert not (tmp_path / "s").exists()


def test_a_resume_with_an_unknown_keyword_of_a_workflow_without_parameters(tmp_path: Path) -> None:
    """Before: "wf has no parameter(s) bogus; it takes . Nothing was executed"."""

    @durable.workflow(store=str(tmp_path / "s"), run_id="r1")
    def bare() -> int:
        durable.suspend("waiting")
        return 1

    with pytest.raises(durable.Suspended):
        bare()
    with pytest.raises(durable.ConfigurationError) as e:
        bare.resume("r1", bogus=1)
    assert "has no parameter(s) bogus; it takes no parameter. Nothing was executed" in str(e.value)


def test_child_runs_nested_past_a_names_length_say_what_to_do() -> None:
    """Before: a workflow calling itself ~95 deep was refused with "invalid
    run id 'rec.down-...0.0.0.': it is 201 characters long ... Choose a
    shorter one": the user chose no id; the child's is derived. The message
    says so and how to give one, and the way it names works."""
    store, calls = memory_store(), []
    outer = "d" * 180  # nested as deep as a derived id allows, in a few calls

    @durable.workflow(store=store)
    def down(n: int) -> int:
        calls.append(n)
        return n if n == 0 else down(n - 1)

    @durable.workflow(store=store, run_id=lambda n: f"up{n}")
    def up(n: int) -> int:
        calls.append(n)
        return n if n == 0 else up(n - 1)

    with pytest.raises(durable.ConfigurationError) as e:
        down.with_options(run_id=outer)(15)
    said = str(e.value)
    assert "a child run's id is its parent's, a dot and the position" in said, said
    assert "down.with_options(run_id=" in said and "Nothing was run at that position" in said, said
    assert calls == list(range(15, 4, -1))  # 180 characters and 10 times '.0': the 11th child's would be 202
    calls.clear()
    assert up.with_options(run_id=outer)(15) == 0  # its children named as the message says
    assert calls == list(range(15, -1, -1))


def test_a_resume_missing_a_parameter_added_since_says_so() -> None:
    """Before: "w needs argument(s) new: the run did not record them (they
    could not be serialised)": it recorded `old`, the parameter's old name."""
    store = memory_store()

    def first(old: int = 1) -> int:
        durable.suspend("waiting")
        return old

    def second(new: int) -> int:
        return new

    with pytest.raises(durable.Suspended):
        durable.workflow(name="w", store=store, run_id="r1")(first)(4)
    renamed = durable.workflow(name="w", store=store, on_change="rerun")(second)
    with pytest.raises(durable.ConfigurationError) as e:
        renamed.resume("r1")
    assert "needs argument(s) new: the run recorded no argument new, only old (a parameter renamed" in str(e.value)


FETCHED: list[int] = []


class Client:
    """A step's object holding what cannot be pickled."""

    def __init__(self) -> None:
        self.lock, self.base = threading.Lock(), 10

    @durable.step
    def fetch(self, i: int) -> int:
        FETCHED.append(i)
        return self.base + i


class Kept(Client):
    def __getstate__(self) -> dict[str, int]:  # as the refusal advises: what identifies it
        return {"base": self.base}


@pytest.mark.parametrize("cls", [Client, Kept])
def test_a_method_step_whose_instance_has_no_digest_says_what_to_give_it(cls: type[Client]) -> None:
    """Before: "argument 1 of Client.fetch (<Client object at 0x...>) cannot
    be digested ... pass a value that can be digested": a method's self is
    passed by no one; a __getstate__ is what makes it digestible."""
    store, fail = memory_store(), [True]
    client = cls()
    FETCHED.clear()

    @durable.step
    def end(x: int) -> int:
        if fail[0]:
            raise RuntimeError("down")
        return x

    @durable.workflow(store=store, run_id="r1")
    def main() -> int:
        return end(client.fetch(1))

    with pytest.raises(RuntimeError):
        main()
    fail[0] = False
    if cls is Kept:
        assert main() == 11 and FETCHED == [1]  # replayed
        return
    with pytest.raises(durable.DefinitionChangedError) as e:
        main()
    said = str(e.value)
    assert "the Client that Client.fetch is a method of (self: " in said, said
    assert "give Client a __getstate__ that leaves out what cannot be pickled" in said, said
    assert FETCHED == [1]
