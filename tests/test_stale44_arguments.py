"""The arguments a resume runs with. A workflow argument the run could not
record (not plain data under `allow_pickle=False`, or one that cannot be
pickled) must be passed again on resume: without it, the parameter's
default took its place, silently, so the resumed run computed what another
call would have (refused by the steps under "refuse", re-executed with the
default under "rerun"). A left-out argument the run was called with at its
default is the same value: the resume uses it."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

import pytest

import durable


@dataclasses.dataclass
class Cfg:
    k: int = 1


def _flow(store: durable.Store, calls: list[tuple[str, int]], fail: list[bool]) -> durable.Workflow:  # type: ignore[type-arg]
    @durable.step(name="scale")
    def scale(x: int, k: int) -> int:
        calls.append(("scale", x * k))
        return x * k

    @durable.step(name="check")
    def check(v: int) -> int:
        calls.append(("check", v))
        if fail[0]:
            raise RuntimeError("not yet")
        return v

    @durable.workflow(name="left_out", store=store, on_change="rerun")
    def left_out(x: int, cfg: Cfg = Cfg()) -> int:  # noqa: B008
        return check(scale(x, cfg.k)) + cfg.k

    return left_out


def test_a_resume_without_an_argument_the_run_could_not_record_is_refused(tmp_path: Path) -> None:
    store = durable.open_store(str(tmp_path), allow_pickle=False)
    calls: list[tuple[str, int]] = []
    fail = [True]
    wf = _flow(store, calls, fail)
    with pytest.raises(RuntimeError):
        wf.with_options(run_id="r").run(10, Cfg(5))
    fail[0] = False
    # The default Cfg(1) is not the Cfg(5) the run was called with.
    with pytest.raises(durable.ConfigurationError, match=r"needs argument\(s\) cfg: the run did not record"):
        wf.resume("r")
    assert calls == [("scale", 50), ("check", 50)]  # nothing ran
    assert wf.resume("r", cfg=Cfg(5)).value == 55
    assert calls == [("scale", 50), ("check", 50), ("check", 50)]


def test_a_left_out_argument_at_its_default_resumes(tmp_path: Path) -> None:
    store = durable.open_store(str(tmp_path), allow_pickle=False)
    calls: list[tuple[str, int]] = []
    fail = [True]
    wf = _flow(store, calls, fail)
    with pytest.raises(RuntimeError):
        wf.with_options(run_id="r").run(10)
    fail[0] = False
    assert wf.resume("r").value == 11
    assert calls == [("scale", 10), ("check", 10), ("check", 10)]


class Client:
    """Holds a lock: it cannot be pickled, so the run cannot record it."""

    def __init__(self, k: int) -> None:
        self.k, self.lock = k, threading.Lock()


def test_an_argument_that_cannot_be_pickled_must_be_passed_again(store: durable.Store) -> None:
    calls: list[int] = []

    @durable.step(name="use")
    def use(x: int, k: int) -> int:
        calls.append(x * k)
        return x * k

    @durable.workflow(name="client_flow", store=store, on_change="rerun")
    def client_flow(x: int, client: Client | None = None) -> int:
        return use(x, client.k if client is not None else 1)

    assert client_flow.with_options(run_id="c").run(3, Client(7)).value == 21
    with pytest.raises(durable.ConfigurationError, match=r"needs argument\(s\) client"):
        client_flow.resume("c")  # not answered with 3, nor with 21 computed for another client
    assert calls == [21]
    # Its lock counts by its type: a client of the same state is the same call.
    assert client_flow.resume("c", client=Client(7)).value == 21
    assert client_flow.resume("c", client=Client(2)).value == 6
    assert calls == [21, 6]


SETTINGS = """
import threading

THRESHOLD = 1
NAMES = ["a"]
LOCK = threading.Lock()  # no digest: counts by its type


def describe():
    return "settings"
"""


def test_a_module_passed_as_an_argument_counts_the_data_it_holds_now(
    store: durable.Store, load: Any
) -> None:
    """`check(settings, x)` reading `cfg.THRESHOLD`: `main()` set it since
    (`settings.THRESHOLD = 2`), which the module's text and code do not
    show. Counted by them alone, the completed run (same derived id)
    answered the new call with what the old value computed."""
    settings = load("stale44_settings", SETTINGS)
    calls: list[int] = []

    @durable.step(name="check")
    def check(cfg: Any, x: int) -> int:
        calls.append(x)
        return x * cfg.THRESHOLD + len(cfg.NAMES)

    @durable.workflow(name="with_module", store=store)
    def with_module(cfg: Any, x: int) -> int:
        return check(cfg, x)

    assert with_module(settings, 10) == 11
    assert with_module(settings, 10) == 11 and calls == [10]  # the same call: answered
    settings.THRESHOLD = 2
    assert with_module(settings, 10) == 21  # another run (its derived id), not 11
    settings.NAMES.append("b")
    assert with_module(settings, 10) == 22
    assert calls == [10, 10, 10]
    settings.LOCK = threading.Lock()  # another lock: the same data
    assert with_module(settings, 10) == 22 and calls == [10, 10, 10]


SHARED = Client(3)  # a default without a digest: the run cannot record it


def test_a_default_that_cannot_be_recorded_still_stands_for_itself(store: durable.Store) -> None:
    """A run called with such a default resumes with it: it is the value
    the call had (its digest, a fresh token, could not tell so)."""
    calls: list[int] = []
    fail = [True]

    @durable.step(name="use")
    def use(x: int, k: int) -> int:
        calls.append(x * k)
        if fail[0]:
            raise RuntimeError("not yet")
        return x * k

    @durable.workflow(name="defaulted_flow", store=store)
    def defaulted_flow(x: int, client: Client = SHARED) -> int:
        return use(x, client.k)

    with pytest.raises(RuntimeError):
        defaulted_flow.with_options(run_id="d").run(2)
    fail[0] = False
    assert defaulted_flow.resume("d").value == 6
    assert calls == [6, 6]
    # Called with another client, the run cannot be resumed without it.
    fail[0] = True
    with pytest.raises(RuntimeError):
        defaulted_flow.with_options(run_id="e").run(2, Client(5))
    fail[0] = False
    with pytest.raises(durable.ConfigurationError, match=r"needs argument\(s\) client"):
        defaulted_flow.resume("e")
    assert calls == [6, 6, 10]
