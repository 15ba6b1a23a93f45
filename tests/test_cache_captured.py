"""A cached step made by a factory computes from what its closure captured:
the cache key counts those values as it counts arguments (the fingerprint
counts a list, dict or object there by its type only). Every test counts
executions of the step body."""

from __future__ import annotations

import functools
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import durable

from .clikit import Poke

CALLS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def plain_store(monkeypatch: pytest.MonkeyPatch) -> durable.Store:
    url = f"memory://cache-captured-{uuid.uuid4().hex}"
    monkeypatch.setenv("DURABLE_STORE", url)
    CALLS.clear()
    return durable.open_store(url)


def scale_by(weights: list[int]) -> Callable[[int], list[int]]:
    @durable.step(cache=True, name="scale")
    def scale(x: int) -> list[int]:
        CALLS["scale"] += 1
        return [x * w for w in weights]

    return scale


class Model:
    def __init__(self, k: int) -> None:
        self.k = k


def predictor(model: Model) -> Callable[[int], int]:
    @durable.step(cache=True, name="predict")
    def predict(x: int) -> int:
        CALLS["predict"] += 1
        return x * model.k

    return predict


def test_a_step_made_with_other_captured_data_computes_again() -> None:
    assert scale_by([1, 2])(10) == [10, 20]
    assert scale_by([3, 4])(10) == [30, 40]  # not the output made with [1, 2]
    assert scale_by([1, 2])(10) == [10, 20]  # the first entry still serves its own
    assert CALLS["scale"] == 2
    assert predictor(Model(1))(10) == 10
    assert predictor(Model(5))(10) == 50
    assert predictor(Model(5))(10) == 50
    assert CALLS["predict"] == 2


def test_a_run_takes_no_entry_made_with_other_captured_data(plain_store: durable.Store) -> None:
    assert scale_by([1, 2])(10) == [10, 20]

    @durable.workflow(store=plain_store, run_id="captured")
    def flow(x: int) -> list[int]:
        return scale_by([7, 8])(x)

    assert flow(10) == [70, 80]
    assert CALLS["scale"] == 2


def test_data_captured_by_a_helper_the_step_holds_counts_too() -> None:
    def make(offset: list[int]) -> Callable[[int], int]:
        def shift(x: int) -> int:
            return x + offset[0]

        @durable.step(cache=True, name="shifted")
        def shifted(x: int) -> int:
            CALLS["shifted"] += 1
            return shift(x)

        return shifted

    assert make([1])(1) == 2
    assert make([5])(1) == 6
    assert make([5])(1) == 6
    assert CALLS["shifted"] == 2


def test_a_captured_secret_is_never_served_to_another_secret() -> None:
    def signer(token: durable.Redacted[str]) -> Callable[[str], str]:
        @durable.step(cache=True, name="sign")
        def sign(text: str) -> str:
            CALLS["sign"] += 1
            return f"{text}:{token.value}"

        return sign

    assert signer(durable.redact("A"))("x") == "x:A"
    assert signer(durable.redact("B"))("x") == "x:B"
    assert signer(durable.redact("B"))("x") == "x:B"  # nor cached at all
    assert CALLS["sign"] == 3


def test_a_nested_step_that_calls_itself_is_still_cached() -> None:
    def make() -> Callable[[int], int]:
        @durable.step(cache=True, name="fact")
        def fact(k: int) -> int:
            CALLS["fact"] += 1
            return 1 if k <= 1 else k * fact(k - 1)

        return fact

    fact = make()
    assert fact(4) == 24 and CALLS["fact"] == 4
    assert fact(4) == 24 and CALLS["fact"] == 4


def test_a_step_that_counts_its_calls_in_its_closure_is_served() -> None:
    """Before: the list it appends to was part of the key, so each call made
    a key of its own and ran again (calls == [1, 1]); joblib.Memory's own
    tests count executions this way."""
    calls: list[int] = []

    @durable.step(cache=True, name="double")
    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    assert double(1) == 2
    assert double(1) == 2
    assert calls == [1]


def test_a_cell_the_step_reads_as_well_stays_in_the_key() -> None:
    seen: list[int] = []

    @durable.step(cache=True, name="count")
    def count(x: int) -> int:
        seen.append(x)
        return len(seen)

    assert count(1) == 1
    assert count(1) == 2  # what it returns depends on the list: computed again


def ticket_counter() -> Callable[[int], int]:
    """A fresh factory's step, its state as a new process has it."""
    state = {"n": 0}

    @durable.step(cache=True, name="ticket")
    def ticket(x: int) -> int:
        CALLS["ticket"] += 1
        state["n"] += 1
        return x * 100 + state["n"]

    return ticket


def test_a_step_that_changed_a_captured_value_it_reads_is_not_cached(
    plain_store: durable.Store,
) -> None:
    """The key holds state as it was before the call; a hit could not redo
    the change. Before, a second process (a fresh factory) was served 501
    for each call where running the step gives 501, 502, 503: called
    plainly, and in a run of its own."""
    for _ in range(2):
        ticket = ticket_counter()
        with pytest.warns(UserWarning, match="changed a value its closure captured"):
            assert [ticket(5), ticket(5), ticket(5)] == [501, 502, 503]
    assert CALLS["ticket"] == 6

    def flow_of() -> durable.Workflow[[int], list[int]]:
        ticket = ticket_counter()

        @durable.workflow(store=plain_store)
        def flow(run: int) -> list[int]:
            return [ticket(5), ticket(5)]

        return flow

    for run in range(2):
        with pytest.warns(UserWarning, match="changed a value its closure captured"):
            assert flow_of()(run) == [501, 502]
    assert CALLS["ticket"] == 10


TICKET_SCRIPT = '''
import sys
import durable

def make():
    state = {"n": 0}

    @durable.step(cache=True, name="ticket")
    def ticket(x: int) -> int:
        with open(sys.argv[1], "a") as f:
            f.write("ran\\n")
        state["n"] += 1
        return x * 100 + state["n"]

    return ticket

ticket = make()
print([ticket(5), ticket(5), ticket(5)])
'''


def test_a_second_process_is_not_served_what_a_changed_captured_value_made(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """Before: the second process printed [501, 501, 501]."""
    script, log = tmp_path / "ticket.py", tmp_path / "log"
    script.write_text(TICKET_SCRIPT)
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-W", "ignore", str(script), str(log)],
            env=child_env, cwd=tmp_path, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "[501, 502, 503]"
    assert log.read_text().split() == ["ran"] * 6


def test_a_captured_value_changing_as_it_is_read_again_counts_as_changed() -> None:
    """The read after the call fails as Python's own iteration does
    ("dictionary changed size during iteration"): the output is returned and
    not cached. Without the catch that RuntimeError came out of the call."""
    state: dict[object, object] = {}
    state["poke"] = Poke(state)

    @durable.step(cache=True, name="filled")
    def filled(x: int) -> int:
        CALLS["filled"] += 1
        state["filling"] = True
        return x + len(state)

    with pytest.warns(UserWarning, match="changed a value its closure captured"):
        assert filled(1) == 3


def scaled(k: int) -> Callable[[Callable[[int], int]], Callable[[int], int]]:
    """A decorator factory put over a step: the factor is its own capture."""

    def decorate(f: Callable[[int], int]) -> Callable[[int], int]:
        @functools.wraps(f)
        def wrapper(x: int) -> int:
            return k * f(x)

        return wrapper

    return decorate


def user_of(k: int) -> Callable[[int], int]:
    @scaled(k)
    @durable.step
    def inc(x: int) -> int:
        return x + 1

    @durable.step(cache=True, name="use")
    def use(x: int) -> int:
        CALLS["use"] += 1
        return inc(x)

    return use


def test_what_a_decorator_over_a_held_step_captured_counts() -> None:
    """A cached step holding a step under a decorator with functools.wraps
    (which copies the step's attributes onto the decorator's function): the
    decorator's captured factor is in the key. Before, the step behind it
    was followed instead, and user_of(3)(1) was served user_of(2)(1)'s 4."""
    assert user_of(2)(1) == 4
    assert user_of(3)(1) == 6
    assert user_of(2)(1) == 4
    assert CALLS["use"] == 2


def scaled_by_default(k: int) -> Callable[[Callable[[int], int]], Callable[[int], int]]:
    """As `scaled`, with the factor held as the wrapper's default value."""

    def decorate(f: Callable[[int], int]) -> Callable[[int], int]:
        @functools.wraps(f)
        def wrapper(x: int, _k: int = k) -> int:
            return _k * f(x)

        return wrapper

    return decorate


def user_by_default(k: int) -> Callable[[int], int]:
    @scaled_by_default(k)
    @durable.step
    def inc(x: int) -> int:
        return x + 1

    @durable.step(cache=True, name="use_by_default")
    def use(x: int) -> int:
        CALLS["use_by_default"] += 1
        return inc(x)

    return use


def test_a_default_of_a_decorator_over_a_held_step_counts() -> None:
    """The wrapper's defaults are no argument of the cached step and the
    fingerprint follows `__wrapped__` to the step: user_by_default(3)(1)
    was served user_by_default(2)(1)'s 4 (running gives 6)."""
    assert user_by_default(2)(1) == 4
    assert user_by_default(3)(1) == 6
    assert user_by_default(2)(1) == 4
    assert CALLS["use_by_default"] == 2
