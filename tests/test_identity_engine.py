"""The replay rule in a run (DESIGN §2 "Identity of a call"): a record is
replayed only for the same bound arguments; anything else runs again under
on_change="rerun" and is refused under "refuse", never replayed stale."""

from __future__ import annotations

import asyncio
import copy
import functools
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import durable
from durable._core.replay import load_context
from durable._storage.keys import record_name
from durable._storage.records import seal
from durable.testing import FakeClock
from tests import forkcli
from tests.conftest import rewrite_record
from tests.identity_values import CHANGES, Box, Params

ROOT = Path(__file__).resolve().parents[1]
CRASH = "DURABLE_TEST_CRASH_AFTER_STEP"  # read at call time: not part of any fingerprint


class Scaler:
    # At module level: a class pickled by value (with the workflow's recorded
    # arguments) would get copies of its methods' globals when read back.
    def __init__(self, k: int, log: str) -> None:
        self.k, self.log = k, log

    @durable.step(name="scale")
    def scale(self, x: int) -> int:
        with open(self.log, "a") as f:
            f.write(f"{self.k}\n")
        return self.k * x


@durable.step(name="double")
def double(x: int) -> int:
    return 2 * x


def use_flow(store: durable.Store, policy: str, calls: list[Any]) -> Any:
    @durable.step(name="use")
    def use(v: Any, label: str = "v") -> int:
        calls.append(label)
        return len(calls)

    @durable.workflow(name="flow", store=store, run_id="r", on_change=policy)
    def flow(v: Any) -> int:
        out = use(v)
        if os.environ.get(CRASH):
            raise RuntimeError("crash after the step")
        return out

    return flow


def crash_once(flow: Any, value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CRASH, "1")
    with pytest.raises(RuntimeError, match="crash after the step"):
        flow(value)
    monkeypatch.delenv(CRASH)


@pytest.mark.parametrize("case", CHANGES)
def test_a_changed_argument_runs_again_under_rerun(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    recorded, now = CHANGES[case]()
    calls: list[Any] = []
    flow = use_flow(store, "rerun", calls)
    crash_once(flow, recorded, monkeypatch)
    assert flow(now) == 2 and len(calls) == 2


@pytest.mark.parametrize("case", CHANGES)
def test_a_changed_argument_is_refused_and_an_equal_one_replays(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    recorded, now = CHANGES[case]()
    calls: list[Any] = []
    flow = use_flow(store, "refuse", calls)
    crash_once(flow, recorded, monkeypatch)
    with pytest.raises(durable.DefinitionChangedError, match="arguments changed"):
        flow(now)
    assert len(calls) == 1
    assert flow(copy.deepcopy(recorded)) == 1 and len(calls) == 1


def test_positional_keyword_and_default_are_one_call(store: durable.Store) -> None:
    calls: list[str] = []

    @durable.step(name="use")
    def use(v: int, label: str = "v") -> int:
        calls.append(label)
        return v + len(calls)

    @durable.workflow(name="flow", store=store, run_id="r", on_change="rerun")
    def positional() -> int:
        return use(1) + use(2, "w")

    @durable.workflow(name="flow", store=store, run_id="r", on_change="rerun")
    def by_keyword() -> int:  # the same calls, rewritten
        return use(v=1, label="v") + use(label="w", v=2)

    assert positional() == 2 + 4
    assert positional.fingerprint != by_keyword.fingerprint
    run = by_keyword.run()
    assert (run.value, run.steps_replayed, run.steps_executed) == (6, 2, 0)
    assert calls == ["v", "w"]


def test_an_async_step_is_bound_the_same_way(store: durable.Store) -> None:
    calls: list[int] = []

    @durable.step(name="fetch")
    async def fetch(v: int, label: str = "v") -> int:
        calls.append(v)
        return v

    @durable.workflow(name="flow", store=store, run_id="r", on_change="rerun")
    async def positional() -> int:
        return await fetch(1) + await fetch(2)

    @durable.workflow(name="flow", store=store, run_id="r", on_change="rerun")
    async def by_keyword() -> int:
        return await fetch(v=1, label="v") + await fetch(v=2)

    assert asyncio.run(positional()) == 3
    run = asyncio.run(by_keyword.run())
    assert (run.value, run.steps_replayed, run.steps_executed) == (3, 2, 0)
    assert calls == [1, 2]


def test_a_method_step_counts_its_self(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = str(tmp_path / "log")

    @durable.workflow(name="flow", store=store, run_id="r", on_change="rerun")
    def flow(s: Scaler) -> int:
        out = s.scale(10)
        if os.environ.get(CRASH):
            raise RuntimeError("crash after the step")
        return out

    crash_once(flow, Scaler(2, log), monkeypatch)
    crash_once(flow, Scaler(2, log), monkeypatch)  # an equal self: replayed
    assert Path(log).read_text().split() == ["2"]
    assert flow(Scaler(3, log)) == 30
    assert Path(log).read_text().split() == ["2", "3"]


def test_a_redacted_argument_is_a_marker_and_the_others_still_count(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    tokens = iter(range(100))

    @durable.step(name="token")
    def token() -> durable.Redacted[str]:
        return durable.redact(f"token-{next(tokens)}")  # a fresh one on every run

    @durable.step(name="use")
    def use(tok: durable.Redacted[str], n: int) -> int:
        calls.append(n)
        return n

    @durable.workflow(name="flow", store=store, run_id="r", on_change="rerun")
    def flow(n: int) -> int:
        out = use(token(), n)
        if os.environ.get(CRASH):
            raise RuntimeError("crash after the step")
        return out

    crash_once(flow, 1, monkeypatch)
    crash_once(flow, 1, monkeypatch)  # another token, the same call: replayed
    assert calls == [1]
    assert flow(2) == 2 and calls == [1, 2]  # n changed: executed again


@pytest.mark.parametrize(
    "make", [lambda i: np.array([i, i]), lambda i: Box({"i": i})], ids=["numpy", "object"]
)
def test_a_changed_loop_item_runs_and_never_gets_another_items_result(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch, make: Callable[[int], Any]
) -> None:
    calls: list[str] = []

    def describe(item: Any) -> str:
        return repr(item.content if isinstance(item, Box) else item.tolist())

    @durable.step(name="work")
    def work(item: Any) -> str:
        calls.append(describe(item))
        if os.environ.get(CRASH) == describe(item):
            raise ValueError("this item fails")
        return describe(item)

    @durable.workflow(name="items", store=store, run_id="r")
    def items(values: list[Any]) -> list[str]:
        return durable.loop_over(work, values, checkpoint_items=True)

    first = [make(0), make(1), make(2)]
    monkeypatch.setenv(CRASH, describe(first[2]))
    with pytest.raises(ValueError, match="this item fails"):
        items(first)
    monkeypatch.delenv(CRASH)
    assert len(calls) == 3
    second = [make(10), make(1), make(2)]  # item 0 differs; item 1 is kept
    assert items(second) == [describe(v) for v in second]
    assert calls[3:] == [describe(second[0]), describe(second[2])]


def test_the_arguments_a_partial_binds_count_in_a_loop_block(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`loop_over(partial(fn, cfg=cfg), items)`: cfg is an argument of every
    call, by value (a dict's content, which the fingerprint does not see)."""
    calls: list[tuple[int, int]] = []

    @durable.step(name="weigh")
    def weigh(x: int, cfg: dict[str, int]) -> int:
        calls.append((x, cfg["w"]))
        if os.environ.get(CRASH) == str(x):
            raise ValueError("this item fails")
        return x * cfg["w"]

    @durable.workflow(name="weighted", store=store, run_id="r")
    def weighted(cfg: dict[str, int], stop: bool = True) -> list[int]:
        fn = functools.partial(weigh, cfg=cfg)
        out = durable.loop_over(fn, [1, 2, 3], checkpoint_items=True)
        if stop:
            durable.suspend("look at the weights")
        return out

    monkeypatch.setenv(CRASH, "3")
    with pytest.raises(ValueError, match="this item fails"):
        weighted({"w": 2})
    monkeypatch.delenv(CRASH)
    assert calls == [(1, 2), (2, 2), (3, 2)]
    # items 1 and 2 were kept for w=2: with w=10 none of them is this call's result
    with pytest.raises(durable.Suspended):
        weighted({"w": 10})
    assert calls[3:] == [(1, 10), (2, 10), (3, 10)]
    # the block recorded for w=10 is not the block for w=2
    with pytest.raises(durable.DefinitionChangedError, match="arguments changed"):
        weighted.resume("r", cfg={"w": 2}, stop=False)
    assert weighted.resume("r", stop=False).value == [10, 20, 30] and len(calls) == 6
    run = weighted.with_options(on_change="rerun").resume("r", cfg={"w": 3})
    assert run.value == [3, 6, 9] and calls[6:] == [(1, 3), (2, 3), (3, 3)]


def test_the_object_of_a_bound_method_counts_in_a_loop_block(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`loop_over(obj.method, items)`: the state of obj is an argument of
    every call, as a method step's self is (the block and its kept items)."""
    calls: list[tuple[int, int]] = []

    class Weigher:
        def __init__(self, w: int) -> None:
            self.w = w

        def weigh(self, x: int) -> int:
            calls.append((x, self.w))
            if os.environ.get(CRASH) == str(x):
                raise ValueError("this item fails")
            return x * self.w

    @durable.workflow(name="weighted", store=store, run_id="r")
    def weighted(w: int, stop: bool = True) -> list[int]:
        out = durable.loop_over(Weigher(w).weigh, [1, 2, 3], checkpoint_items=True)
        if stop:
            durable.suspend("look at the weights")
        return out

    monkeypatch.setenv(CRASH, "3")
    with pytest.raises(ValueError, match="this item fails"):
        weighted(2)
    monkeypatch.delenv(CRASH)
    assert calls == [(1, 2), (2, 2), (3, 2)]
    # items 1 and 2 were kept for w=2: with w=10 none of them is this call's result
    with pytest.raises(durable.Suspended):
        weighted(10)
    assert calls[3:] == [(1, 10), (2, 10), (3, 10)]
    with pytest.raises(durable.DefinitionChangedError, match="arguments changed"):
        weighted.resume("r", w=2, stop=False)
    assert weighted.resume("r", stop=False).value == [10, 20, 30] and len(calls) == 6


def test_a_block_without_a_partial_is_digested_by_its_items(store: durable.Store) -> None:
    from durable._core.identity import value_digest

    @durable.workflow(name="plain", store=store, run_id="r")
    def plain() -> list[int]:
        return durable.loop_over(double, [1, 2, 3])

    assert plain() == [2, 4, 6]
    records = load_context(store, "plain", "r", "refuse").records
    assert records[0].args_digest == value_digest([1, 2, 3])


def test_a_record_without_an_argument_digest_counts_as_changed(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    flow = use_flow(store, "refuse", calls)
    crash_once(flow, 5, monkeypatch)
    rec = load_context(store, "flow", "r", "refuse").records[0]
    rec.args_digest = None  # as an earlier version wrote for some arguments
    data = seal(rec.to_bytes(), store.signing_key)
    rewrite_record(store, ("flow", "r"), record_name(0), data, store.signing_key)  # in its segment
    with pytest.raises(durable.DefinitionChangedError):
        flow(5)
    rerun = use_flow(store, "rerun", calls)
    assert rerun(5) == 2 and len(calls) == 2


def test_a_call_that_does_not_bind_fails_at_once_without_retries(
    store: durable.Store, clock: FakeClock
) -> None:
    calls: list[int] = []

    @durable.step(name="two", retries=3)
    def two(x: int) -> int:
        calls.append(x)
        return x

    @durable.workflow(name="flow", store=store, run_id="r")
    def flow() -> int:
        return two(1, 2)  # type: ignore[call-arg]

    with pytest.raises(TypeError, match=r"step two\(x: .*too many positional arguments"):
        flow()
    assert calls == [] and clock.slept == []
    assert [s.attempts for s in flow.history("r")[1:]] == []


def test_an_argument_without_a_digest_is_never_replayed(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    @durable.step(name="locked")
    def locked(lock: Any, n: int) -> int:
        calls.append(n)
        return n

    def make(policy: str) -> Any:
        @durable.workflow(name="flow", store=store, run_id="r", on_change=policy)
        def flow(n: int) -> int:
            out = locked(threading.Lock(), n)  # a lock cannot be digested
            if os.environ.get(CRASH):
                raise RuntimeError("crash after the step")
            return out

        return flow

    crash_once(make("refuse"), 1, monkeypatch)
    with pytest.raises(durable.DefinitionChangedError) as refused:
        make("refuse")(1)
    # named, with why, and what to pass instead: not two random digests
    message = str(refused.value)
    assert "argument 1 of locked (<unlocked _thread.lock" in message
    assert "cannot pickle '_thread.lock' object) cannot be digested" in message
    assert "pass what identifies it" in message and "!" not in message.split("Ways out")[0]
    assert make("rerun")(1) == 1 and calls == [1, 1]


SCRIPT = """
import sys
import numpy as np
import pandas as pd
import durable

@durable.step
def total(arr, frame):
    with open(sys.argv[2], "a") as log:
        log.write("total\\n")
    return float(arr.sum()) + float(frame["a"].sum())

@durable.workflow(store=sys.argv[1])
def stats(arr, frame):
    return total(arr, frame)

for variant in sys.argv[3:]:
    arr = np.arange(10.0)
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}, index=["p", "q"])
    if variant == "array":
        arr[3] = 99.0
    if variant == "frame":
        frame.loc["q", "b"] = "z"
    run = stats.run(arr, frame)
    print(run.run_id, run.value)
"""


def test_a_derived_run_id_for_arrays_and_frames_is_the_same_in_every_process(
    tmp_path: Path,
) -> None:
    script, log = tmp_path / "stats.py", tmp_path / "log"
    script.write_text(SCRIPT)

    def run(seed: str, *variants: str) -> list[str]:
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=seed)
        cmd = [sys.executable, str(script), str(tmp_path / "store"), str(log), *variants]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.split("\n")[:-1]

    # Two processes in two hash seeds (each child pays numpy's and pandas's
    # imports): the second derives the first's run id, then the changed ones.
    [first] = run("0", "same")
    assert first.startswith("stats.stats-") and first.endswith(" 48.0")
    again, *changed = run("1", "same", "array", "frame")
    assert again == first
    # one execution each for the first, the changed array and the changed
    # frame: the same call in the other process replayed
    assert log.read_text().split() == ["total"] * 3
    assert len({first, *changed}) == 3


HELPER_FLOW = """
import os, sys
import durable
import helpers


@durable.step
def apply(fn, x):
    with open(sys.argv[2], "a") as log:
        log.write("apply\\n")
    return fn(x)


@durable.workflow(store=sys.argv[1], run_id="r", on_change="rerun")
def flow(x):
    out = apply(helpers.transform, x)
    if os.environ.get("CRASH"):
        os._exit(3)
    return out


print(flow(1))
"""


MODEL_FLOW = """
import os, sys
import durable
import helpers


@durable.step
def predict(model, x):
    with open(sys.argv[2], "a") as log:
        log.write("predict\\n")
    return model.predict(x)


@durable.workflow(store=sys.argv[1], run_id="r", on_change="rerun")
def flow(model, x):
    out = predict(model, x)
    if os.environ.get("CRASH"):
        os._exit(3)
    return out


print(flow(helpers.Model(2), 5))
"""


def _edited_between_runs(
    tmp_path: Path, flow: str, helpers: Callable[[str], str]
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Runs `flow` (argv: store, log) in a child process after writing
    `helpers.py` as `helpers(body)` says: each call may edit it first."""
    (tmp_path / "flow.py").write_text(flow)

    def run(body: str, **extra: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "helpers.py").write_text(helpers(body))
        return _flow(tmp_path, **extra)

    return run


def _flow(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """`python flow.py STORE LOG` in a process of its own, forked from an
    interpreter that imported durable once (`forkcli`: two servers in two
    hash seeds take turns, so one run and the next import `flow.py` and
    its helpers afresh in other seeds, as two fresh Pythons do)."""
    argv = [str(tmp_path / "flow.py"), str(tmp_path / "store"), str(tmp_path / "log")]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}", **extra}
    if forkcli.forkable(argv, env):
        return forkcli.run(argv, tmp_path, env, 120)
    return subprocess.run(
        [sys.executable, *argv], env=env, capture_output=True, text=True, timeout=120
    )


def _replayed_until_edited(run: Any, log: Path) -> None:
    """The same code in a second process replays; the edited code runs again."""
    assert run("x + 1", CRASH="1").returncode == 3
    assert run("x + 1", CRASH="1").returncode == 3  # the same code: replayed
    assert log.read_text().split() == ["apply"]
    out = run("x + 100")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "101" and log.read_text().split() == ["apply", "apply"]


@pytest.mark.parametrize("kind", ["class", "dataclass"])
def test_an_object_passed_as_an_argument_counts_the_code_of_its_class(
    tmp_path: Path, kind: str
) -> None:
    """The step runs `model.predict(x)` and names neither the class nor the
    method: an edit to the method is a changed call (the object counted by
    its class's name and its state: the old output came back)."""
    head = (
        "import dataclasses\n@dataclasses.dataclass\nclass Model:\n    k: int\n"
        if kind == "dataclass"
        else "class Model:\n    def __init__(self, k):\n        self.k = k\n"
    )
    log = tmp_path / "log"
    run = _edited_between_runs(
        tmp_path, MODEL_FLOW, lambda body: f"{head}\n    def predict(self, x):\n        return {body}\n"
    )
    assert run("x * self.k", CRASH="1").returncode == 3
    assert run("x * self.k", CRASH="1").returncode == 3  # the same code: replayed
    assert log.read_text().split() == ["predict"]
    out = run("x * self.k + 1000")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1010" and log.read_text().split() == ["predict"] * 2


def test_a_function_passed_as_an_argument_counts_by_its_code(tmp_path: Path) -> None:
    """A function is an argument like any other: the step it is passed to
    runs it, and the step's fingerprint does not see its code. Edited
    between two processes, the call is changed (it counted by name only:
    the old output came back)."""
    log = tmp_path / "log"
    run = _edited_between_runs(
        tmp_path, HELPER_FLOW, lambda body: f"def transform(x):\n    return {body}\n"
    )
    _replayed_until_edited(run, log)


def test_a_refusal_says_when_a_changed_argument_looks_the_same(store: durable.Store) -> None:
    calls: list[Any] = []

    @durable.workflow(name="shown", store=store, run_id="r")
    def shown(p: Params) -> int:
        calls.append(p.scale)
        return p.scale

    assert shown(Params(2, x=10)) == 2
    with pytest.raises(durable.DefinitionChangedError, match="looks the same, but its content"):
        shown(Params(3, x=10))  # its items, all a preview shows, are the same
    assert calls == [2]


REMADE_MODULE = '''
import dataclasses


def remade(f):
    """As hypothesis's @given does: a wrapper whose code claims the file
    and first line of the function it replaces."""
    def wrapper(*args):
        return f(*args) + 1
    wrapper.__code__ = wrapper.__code__.replace(
        co_name=f.__code__.co_name, co_firstlineno=f.__code__.co_firstlineno
    )
    return wrapper


@remade
def check(x):
    return x


@dataclasses.dataclass
class Point:
    x: int
    LIMIT = 3


class Scaler:
    RATE = 2

    def scale(self, x):
        return x * self.RATE
'''


def test_a_class_counts_in_a_module_with_a_function_a_decorator_remade(
    store: durable.Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module holding a function whose code a decorator replaced (a test
    module with hypothesis's `@given`) does not match its text function by
    function; a class in it still counts, and the same call replays (its
    class statement could not be read: the call was changed every time)."""
    (tmp_path / "remade_mod.py").write_text(REMADE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import remade_mod

    calls: list[int] = []

    @durable.step
    def use(p: Any, s: Any) -> int:
        calls.append(p.x)
        return int(s.scale(p.x))

    @durable.workflow(name="remade", store=store, run_id="r")
    def flow(stop: bool = True) -> int:
        out = use(remade_mod.Point(2), remade_mod.Scaler())
        if stop:
            durable.suspend("look")
        return out

    with pytest.raises(durable.Suspended):
        flow()
    assert flow.resume("r", stop=False).value == 4 and calls == [2]


HELD_MODEL = """
import scoring


class Model:
    scorer = scoring.Scorer()
    scorer_class = scoring.Scorer
    handlers = {"plain": scoring.plain}

    def __init__(self, k):
        self.k = k

    def predict(self, x):
        return self.scorer.score(x) + self.scorer_class().score(self.k) + self.handlers["plain"](x)
"""


@pytest.mark.parametrize("edited", ["object", "function"])
def test_what_a_class_attribute_holds_counts_with_the_class(tmp_path: Path, edited: str) -> None:
    """`scorer = Scorer()`, `scorer_class = Scorer`, `handlers = {...}`: a
    method calls their code through the class attribute, and the class
    statement names them only. Edited in their own module between two
    processes, the call is changed (the old output came back)."""
    (tmp_path / "flow.py").write_text(MODEL_FLOW)
    (tmp_path / "helpers.py").write_text(HELD_MODEL)
    scoring, log = tmp_path / "scoring.py", tmp_path / "log"

    def run(score: str, plain: str, **extra: str) -> subprocess.CompletedProcess[str]:
        scoring.write_text(
            f"class Scorer:\n    def score(self, x):\n        return {score}\n\n\n"
            f"def plain(x):\n    return {plain}\n"
        )
        return _flow(tmp_path, **extra)

    assert run("x", "0", CRASH="1").returncode == 3
    assert run("x", "0", CRASH="1").returncode == 3  # the same code: replayed
    assert log.read_text().split() == ["predict"]
    out = run("x * 100", "0") if edited == "object" else run("x", "1000")
    assert out.returncode == 0, out.stderr
    expected = "700" if edited == "object" else "1007"  # Model(2), x = 5
    assert out.stdout.strip() == expected and log.read_text().split() == ["predict"] * 2


# `transform` as a step whose helper is defined below it (not there when the
# step was decorated), a lambda and a function made by a factory: each calls
# `helper`, which the edit changes.
CALLS_A_HELPER = {
    "step": "import durable\n\n\n@durable.step\ndef transform(x):\n    return helper(x)\n\n\n"
    "def helper(x):\n    return {body}\n",
    "lambda": "def helper(x):\n    return {body}\n\n\ntransform = lambda x: helper(x)  # noqa: E731\n",
    "factory": "def helper(x):\n    return {body}\n\n\ndef make(k):\n    def f(x):\n"
    "        return helper(x) * k\n    return f\n\n\ntransform = make(1)\n",
    # Behind a wrapper of the standard library's: pickled by name, or its code not the user's.
    "lru_cache": "import functools\n\n\ndef helper(x):\n    return {body}\n\n\n"
    "@functools.lru_cache\ndef transform(x):\n    return helper(x)\n",
    "singledispatch": "import functools\n\n\ndef helper(x):\n    return {body}\n\n\n"
    "@functools.singledispatch\ndef transform(x):\n    return helper(x)\n",
}


@pytest.mark.parametrize("kind", sorted(CALLS_A_HELPER))
def test_a_function_passed_as_an_argument_counts_the_helpers_it_calls(
    tmp_path: Path, kind: str
) -> None:
    """The code a function passed as an argument runs is its helpers' too:
    edited between two processes, the call is changed. (A step counted by
    its fingerprint as decorated, without the helper defined below it; a
    lambda or a factory's function by its pickled code, which names an
    importable helper only: the old output came back.)"""
    log = tmp_path / "log"
    run = _edited_between_runs(
        tmp_path, HELPER_FLOW, lambda body: CALLS_A_HELPER[kind].replace("{body}", body)
    )
    _replayed_until_edited(run, log)


# A method wrapped by a decorator that is no function: the helper it calls
# (`compute`, which the edit changes) is the method's code too.
WRAPPED_METHOD = {
    "cached_property": "    @functools.cached_property\n    def weights(self):\n"
    "        return compute()\n\n    def predict(self, x):\n        return x * self.k * self.weights\n",
    "lru_cache": "    @functools.lru_cache  # noqa: B019\n    def weights(self):\n"
    "        return compute()\n\n    def predict(self, x):\n        return x * self.k * self.weights()\n",
    "partialmethod": "    predict = functools.partialmethod(lambda self, n, x: x * self.k * compute() * n, 1)\n",
    # A library's decorator made with `functools.wraps`: the wrapper's code is not the user's.
    "contextmanager": "    @contextlib.contextmanager\n    def weights(self):\n        yield compute()\n\n"
    "    def predict(self, x):\n        with self.weights() as w:\n            return x * self.k * w\n",
}


@pytest.mark.parametrize("kind", sorted(WRAPPED_METHOD))
def test_a_method_behind_a_decorator_counts_the_helpers_it_calls(
    tmp_path: Path, kind: str
) -> None:
    """`functools.cached_property`, `lru_cache` and `partialmethod` hold the
    method's function in an object that is not one, `contextmanager` in a
    function of the library's: it counted by the `class` statement's text
    alone, so an edit to a helper it calls replayed the old output."""
    log = tmp_path / "log"
    head = "import contextlib\nimport functools\n\n\ndef compute():\n    return {body}\n\n\nclass Model:\n"
    init = "    def __init__(self, k):\n        self.k = k\n\n"
    run = _edited_between_runs(
        tmp_path, MODEL_FLOW, lambda body: head.replace("{body}", body) + init + WRAPPED_METHOD[kind]
    )
    assert run("2", CRASH="1").returncode == 3
    assert run("2", CRASH="1").returncode == 3  # the same code: replayed
    assert log.read_text().split() == ["predict"]
    out = run("200")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2000" and log.read_text().split() == ["predict"] * 2


METACLASS_MODEL = """
class Meta(type):
    @property
    def weight(cls):
        return {body}


class Model(metaclass=Meta):
    def __init__(self, k):
        self.k = k

    def predict(self, x):
        return x * self.k * type(self).weight
"""


def test_a_metaclass_counts_with_the_class(tmp_path: Path) -> None:
    """A method reads `type(self).weight`, a property of the class's
    metaclass: the metaclass's code runs for the class, as a base's does.
    Edited between two processes, the call is changed (the class counted
    its own MRO only: the old output came back); an edit beside it is not."""
    log = tmp_path / "log"
    run = _edited_between_runs(
        tmp_path, MODEL_FLOW, lambda body: METACLASS_MODEL.replace("{body}", body)
    )
    assert run("2", CRASH="1").returncode == 3
    beside = "2\n\n\ndef unrelated():\n    return 1"
    assert run(beside, CRASH="1").returncode == 3  # replayed
    assert log.read_text().split() == ["predict"]
    out = run("200")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2000" and log.read_text().split() == ["predict"] * 2


# A `class` statement that reads a name of another module (`config`, which
# the edit changes): the class counts by its statement's text, which names
# the value only. (name: the model's first line, its class body, what `predict` returns)
CLASS_READS = {
    "constant": ("", "RATE = config.RATE", "x * self.RATE"),
    "from-import": ("from config import RATE\n", "K = RATE * 10", "x * self.K"),
    "module": ("", "backend = config", "self.backend.scale(x)"),
    "bound-method": ("", "score = config.Scorer().score", "self.score(x)"),
    # A class decorator of `config` that sets the class attribute.
    "decorator": ("", "pass", "x * self.SCALE"),
}
CONFIG = """
OTHER = 1
RATE = {rate}


def scale(x):
    return x * RATE


class Scorer:
    def score(self, x):
        return x * RATE


def scaled(cls):
    cls.SCALE = RATE
    return cls
"""


@pytest.mark.parametrize("kind", sorted(CLASS_READS))
def test_what_a_class_statement_reads_counts_with_the_class(tmp_path: Path, kind: str) -> None:
    """Edited between two processes, what the class statement read is a
    changed call (the old output came back: 10 for 15, 100 for 150); an
    edit to another name of `config` still replays where the statement
    reads one name of it (`from config import RATE`)."""
    first, body, returns = CLASS_READS[kind]
    decorator = "@config.scaled\n" if kind == "decorator" else ""
    model = f"import config\n{first}\n\n{decorator}class Model:\n    {body}\n\n"
    model += f"    def __init__(self, k):\n        self.k = k\n\n    def predict(self, x):\n        return {returns}\n"
    config, log = tmp_path / "config.py", tmp_path / "log"

    def helpers(rate: str) -> str:
        config.write_text(CONFIG.replace("{rate}", rate))
        return model

    run = _edited_between_runs(tmp_path, MODEL_FLOW, helpers)
    assert run("2", CRASH="1").returncode == 3
    if kind == "from-import":
        assert run("2\nOTHER = 5", CRASH="1").returncode == 3  # replayed
    out = run("3")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("150" if kind == "from-import" else "15"), out.stdout
    assert log.read_text().split() == ["predict", "predict"]


def test_a_metaclass_method_rebound_in_the_process_counts(
    store: durable.Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same change made between two calls of one process: a property
    of the metaclass rebound (the class counted its own MRO: 10 came back)."""
    (tmp_path / "meta_rebound.py").write_text(METACLASS_MODEL.replace("{body}", "2"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import meta_rebound

    calls: list[int] = []

    @durable.step
    def use(model: Any, x: int) -> int:
        calls.append(x)
        return int(model.predict(x))

    @durable.workflow(name="rebound", store=store, run_id="r", on_change="rerun")
    def flow(stop: bool = True) -> int:
        out = use(meta_rebound.Model(1), 5)
        if stop:
            durable.suspend("look")
        return out

    with pytest.raises(durable.Suspended):
        flow()
    monkeypatch.setattr(meta_rebound.Meta, "weight", property(lambda cls: 3))
    assert flow.resume("r", stop=False).value == 15 and calls == [5, 5]
