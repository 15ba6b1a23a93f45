"""The fifth round of the peers' own test cases, continued (see
tests/test_peer_ports_fifth.py): DBOS Transact (tests/test_dbos.py
decoration and plain calls, tests/test_workflow_introspection.py timings),
LangGraph (libs/checkpoint/tests/test_jsonplus.py: what a checkpoint gives
back) and joblib (joblib/test/test_memory.py cache validation)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import pathlib
import re
import uuid
from collections import Counter, OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable
from decimal import Decimal
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import pytest

import durable
from durable.testing import FakeClock

from .clikit import durable as cli

# -- DBOS: tests/test_dbos.py -------------------------------------------------


def test_dbos_double_decoration(store: durable.Store) -> None:
    """test_double_decoration: DBOS refuses a function decorated as two
    kinds of operation. A workflow made a workflow again is refused at
    decoration, naming the way to other options (its call failed with
    inspect's "no signature found for builtin"); so is a step over a step
    (the inner one's options, persist=False among them, were dropped); a
    workflow over a step runs the inner one as a plain call (DESIGN §2), once."""
    ran: list[int] = []

    def add_one(x: int) -> int:
        ran.append(x)
        return x + 1

    flow = durable.workflow(store=store)(add_one)
    with pytest.raises(durable.ConfigurationError, match="already a durable workflow"):
        durable.workflow(store=store)(flow)
    with pytest.raises(durable.ConfigurationError, match="with_options"):
        durable.workflow(flow)

    with pytest.raises(durable.ConfigurationError, match="already a durable step"):
        durable.step(durable.step(add_one))
    over_step = durable.workflow(store=store, run_id="over")(durable.step(add_one))
    assert over_step(5) == 6 and over_step(5) == 6
    assert ran == [5]


def test_dbos_temp_workflow_errors_run_once(store: durable.Store, clock: FakeClock) -> None:
    """test_temp_workflow_errors: a step with retries called outside any
    workflow raises its error after one try (DBOS's retried_step_counter
    == 1): outside a run a step is a plain call, retried by nothing."""
    tries: list[str] = []

    @durable.step(retries=3, retry_delay=1.0)
    def test_retried_step(var: str) -> str:
        tries.append(var)
        raise ValueError(var)

    with pytest.raises(ValueError, match="rval"):
        test_retried_step("rval")
    assert tries == ["rval"] and clock.slept == []


def test_dbos_status_wf(store: durable.Store) -> None:
    """test_singleexec.py test_status_wf: a workflow parameter named like
    a word of the API (DBOS: `status`; durable's: run_id, store, inputs) is
    an argument as any other, in calls and in resume overrides. `inputs`
    is also resume's own keyword (the answers to wait_for()): a value meant
    for the parameter is taken as answers, which no wait takes, and the
    argument keeps its recorded value; the run then says so, naming the
    parameter, where before the failed step ran again with the old value
    without a word (a LangGraph entrypoint's `inputs` with its
    interrupts' answers stays as it was: test_langgraph_imp_task_cancel)."""
    seen: list[str] = []

    @durable.step
    def stepf(s: str) -> str:
        seen.append(s)
        if s.startswith("bad"):
            raise ValueError(s)
        return s

    @durable.workflow(store=store)
    def status_workflow(
        status: str = "None", run_id: str = "r", store: str = "s", inputs: str = "i"
    ) -> str:
        return stepf(f"{status}/{run_id}/{store}/{inputs}")

    assert status_workflow() == "None/r/s/i"
    assert status_workflow(status="Starting", run_id="x", store="y", inputs="z") == "Starting/x/y/z"
    with pytest.raises(ValueError):
        status_workflow(status="bad")
    [failed] = [info.run_id for info in status_workflow.runs() if info.status == "failed"]
    rerun = status_workflow.with_options(on_change="rerun")
    with pytest.warns(UserWarning, match="parameter named 'inputs', which kept its recorded"):
        with pytest.raises(ValueError):
            rerun.resume(failed, inputs={"q": "new"})
    assert seen == ["None/r/s/i", "Starting/x/y/z", "bad/r/s/i", "bad/r/s/i"]
    assert rerun.resume(failed, status="good", run_id="rr").value == "good/rr/s/i"

    @durable.workflow(store=store, run_id="asks")
    def asks() -> str:
        return durable.wait_for("answer")

    with pytest.raises(durable.Suspended):
        asks()
    with pytest.warns(UserWarning, match=r"'asks' completed, .* \('answr'\): a misspelt name\?$"):
        assert asks.resume("asks", inputs={"answer": "a", "answr": "b"}).value == "a"


STATUS_FLOW = """
import durable


@durable.step
def stepf(s: str) -> str:
    if s == "bad":
        raise ValueError(s)
    return s


@durable.workflow
def flow(inputs: str = "i") -> str:
    return stepf(inputs)
"""


@pytest.mark.slow
def test_dbos_status_wf_from_the_command_line(tmp_path: Path) -> None:
    """test_status_wf through `durable run`: `--var inputs=...` on a resume
    of a workflow whose parameter is named `inputs` is a usage error
    (exit 2, nothing run) naming the clash with `--input`, where it failed
    with a TypeError from resume() ("got multiple values for keyword
    argument 'inputs'") reported as the run failing at its step."""
    (tmp_path / "flow.py").write_text(STATUS_FLOW)
    first = cli(tmp_path, "run", "flow.py:flow", "--run-id", "r1", "--var", "inputs=bad")
    assert first.returncode == 1, first.stderr
    again = cli(tmp_path, "run", "flow.py:flow", "--run-id", "r1", "--resume", "--var", "inputs=ok")
    assert again.returncode == 2, again.stderr
    assert "parameter named 'inputs'" in again.stderr and "TypeError" not in again.stderr


class Mixed:
    """test_mixed_methods' TestClass: an instance holding a lambda over its
    multiplier, and workflows as an instance, class and static method."""

    def __init__(self, multiplier: int) -> None:
        self.multiply: Callable[[int], int] = lambda x: x * multiplier

    @durable.workflow
    def instance_workflow(self, x: int) -> int:
        return self.multiply(x)

    @classmethod
    @durable.workflow
    def classmethod_workflow(cls, x: int) -> int:
        return x

    @staticmethod
    @durable.workflow
    def staticmethod_workflow(x: int) -> int:
        return x


def test_dbos_mixed_methods(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_classdecorators.py test_mixed_methods: the instance workflow
    multiplies by the instance's own multiplier (the lambda's captured
    value counts in the instance's state: 5 and 7 are two runs, never one
    served to the other); the class and static method workflows run once
    per argument. test_class_with_only_steps: a step method given a lambda,
    called twice, is two positions with the same output."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    five, seven = Mixed(5), Mixed(7)
    assert [five.instance_workflow(2), seven.instance_workflow(2)] == [10, 14]
    assert [Mixed(5).instance_workflow(2), Mixed(7).instance_workflow(2)] == [10, 14]
    assert len(Mixed.instance_workflow.runs()) == 2
    assert five.classmethod_workflow(2) == Mixed.classmethod_workflow(2) == 2
    assert five.staticmethod_workflow(3) == 3
    ran: list[int] = []

    class StepClass:
        def __init__(self, x: int) -> None:
            self.x = x

        @durable.step
        def step(self, x: int, expr: Callable[[int, int], int]) -> int:
            ran.append(x)
            return expr(self.x, x)

    inst = StepClass(5)

    @durable.workflow(run_id="only-steps")
    def test_workflow(add: bool) -> int:
        expr: Callable[[int, int], int] = (lambda x, y: x + y) if add else (lambda x, y: x * y)
        return inst.step(5, expr) + inst.step(5, expr)

    assert test_workflow(True) == 20 and test_workflow(True) == 20 and ran == [5, 5]
    assert [s.preview for s in test_workflow.history("only-steps")[1:]] == ["10", "10"]


# -- DBOS: tests/test_workflow_introspection.py -------------------------------


def test_dbos_sleep_timing_unchanged_on_replay(store: durable.Store, clock: FakeClock) -> None:
    """test_sleep_timing_unchanged_on_replay: a run that slept is recovered
    (here: a step after the sleep failed, and the run is called again); the
    body runs twice, the sleep is replayed, and its start and end in the
    history are the ones recorded, not the replay's."""
    runs: list[int] = []
    broken = [True]

    @durable.step
    def after() -> None:
        if broken and broken.pop():
            raise ConnectionError("down")

    @durable.workflow(store=store, run_id="slept")
    def workflow() -> None:
        runs.append(1)
        durable.sleep(1.0)
        after()

    with pytest.raises(ConnectionError):
        workflow()
    [before] = [s for s in workflow.history("slept") if s.kind == "sleep"]
    clock.now += 100
    workflow()
    [later] = [s for s in workflow.history("slept") if s.kind == "sleep"]
    assert len(runs) == 2 and clock.slept == [1.0]
    assert (later.started, later.ended) == (before.started, before.ended)
    assert later.ended == before.started + 1.0  # type: ignore[operator]


# -- LangGraph: libs/checkpoint/tests/test_jsonplus.py -------------------------


@dataclasses.dataclass
class InnerDataclass:
    hello: str


@dataclasses.dataclass(slots=True)
class MyDataclassWSlots:
    foo: str
    bar: int
    inner: InnerDataclass


class MyEnum(enum.Enum):
    FOO = "foo"


class Perm(enum.IntFlag):
    R = 1
    W = 2


class Tag(str):
    """A str subclass: msgpack would give it back as a plain str."""


Point = namedtuple("Point", "x y")


def _jsonplus_values() -> dict[str, Any]:
    """test_serde_jsonplus's to_serialize, and the types
    test_msgpack_safe_types_value_equality restores, plus the subclasses
    and keys a plain encoding would flatten."""
    stamp = dt.datetime(2024, 4, 19, 23, 4, 57, 51022, dt.timezone.max)
    return {
        "path": pathlib.Path("foo", "bar"), "re": re.compile(r"foo", re.DOTALL),
        "decimal": Decimal("1.10101"), "set": {1, 2, frozenset({1, 2})},
        "frozen_set": frozenset({1, 2, 3}), "ip4": IPv4Address("192.168.0.1"),
        "deque": deque([1, 2, 3]), "date": dt.date(2024, 4, 19),
        "time": dt.time(23, 4, 57, 51022, dt.timezone.max), "uid": uuid.UUID(int=1),
        "timestamp": stamp, "naive": stamp.replace(tzinfo=None),
        "delta": dt.timedelta(days=1, microseconds=3), "my_rich_dict": {(1, 2, 3): 45},
        "my_slotted_class": MyDataclassWSlots("bar", 2, InnerDataclass("hello")),
        "my_enum": MyEnum.FOO, "flags": Perm.R | Perm.W, "point": Point(1, (2, 3)),
        "ordered": OrderedDict([("b", 1), ("a", 2)]), "counter": Counter("abca"),
        "default": defaultdict(list, {"a": [1]}), "tag": {"k": [Tag("y")]},
        "a_bool": True, "a_none": None, "a_str_nuc": "foo\u0000", "a_str_uc": "foo ⛰️",
        "surrogate": "Hello\ud83d", "an_int": 1, "big": 2**80, "a_float": 1.1,
        "a_bytes": b"my bytes", "a_bytearray": bytearray([42]), "keys": {True: 1, 2: "b", None: 3},
        "empty": {"a": [], "b": {}, "c": ()}, "complex": 1 + 2j,
    }  # fmt: skip


def _shape(value: Any) -> Any:
    """A value's types all the way down, so that a replay that gives back
    a list for a tuple, a str for a Tag or 1 for True is told apart."""
    if isinstance(value, dict):
        return type(value), [(_shape(k), _shape(v)) for k, v in value.items()]
    if isinstance(value, (list, tuple, set, frozenset, deque)):
        return type(value), sorted(repr(_shape(v)) for v in value)
    return type(value)


def test_langgraph_serde_jsonplus_values_replay_as_they_were(store: durable.Store) -> None:
    """test_serde_jsonplus, test_msgpack_safe_types_value_equality: every
    value comes back from the checkpoint equal, of the same type (DESIGN §4:
    "Replay must return a value equal to, and of the same type as, the
    original"), down to the keys and items inside it."""
    values = _jsonplus_values()
    ran: list[str] = []

    @durable.step
    def node(key: str) -> Any:
        ran.append(key)
        return _jsonplus_values()[key]

    @durable.workflow(store=store, run_id="thread")
    def graph() -> dict[str, Any]:
        return {key: node(key) for key in values}

    graph()
    replayed = graph.with_options(on_change="refuse").resume("thread").value
    assert len(ran) == len(values)
    for key, want in values.items():
        got = durable.load(graph, "thread", list(values).index(key), store=store)
        for back in (got, replayed[key]):
            if isinstance(want, re.Pattern):
                assert (back.pattern, back.flags) == (want.pattern, want.flags)
            else:
                assert back == want and _shape(back) == _shape(want), key
    assert replayed["default"].default_factory is list



# -- joblib: joblib/test/test_memory.py ----------------------------------------


def test_joblib_cache_validation_callback(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    """TestCacheValidationCallback: test_memory_expires_after
    (expires_after(seconds=0.3), ignore=["d"]) is Cache(expire=0.3): the
    entry serves the second call and has expired by the third;
    test_invalid_cache_validation_callback (True) is refused. joblib's
    foo records that it ran in the ignored dict `d`: a call that changes an
    object it was given is not cached in durable (a hit could not redo the
    change; caching.md), with a warning, so each call runs. A callback of
    one's own (test_memory_only_cache_long_run) has no counterpart
    (caching.md, "Coming from joblib.Memory")."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    with pytest.raises(durable.ConfigurationError, match="not True"):
        durable.Cache(expire=True)
    ran: list[int] = []

    def foo(x: int, d: dict[str, bool], delay: float | None = None) -> int:
        ran.append(x)
        return x * 2

    f = durable.step(cache=durable.Cache(expire=0.3, ignore=["d"]))(foo)
    assert f(2, {"run": False}) == 4 and f(2, {"run": False}) == 4
    clock.now += 0.5
    assert f(2, {"run": False}) == 4 and ran == [2, 2]

    def marks(x: int, d: dict[str, bool]) -> int:
        d["run"] = True
        return x * 2

    g = durable.step(cache=durable.Cache(ignore=["d"]))(marks)
    d1, d2 = {"run": False}, {"run": False}
    with pytest.warns(UserWarning, match="changed an object it was given"):
        assert g(2, d1) == 4 and g(2, d2) == 4
    assert d1["run"] and d2["run"]  # joblib: d2 untouched, a hit
