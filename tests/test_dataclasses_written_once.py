"""The events and the engine's own frozen dataclasses (`durable/_frozen.py`)
behave as `@dataclass(frozen=True)` makes them to whoever holds one: every
assignment or deletion raises `FrozenInstanceError` with its message; `==`,
`hash` and `repr` are its; `fields`, `replace`, `asdict`, `copy` and
`pickle` work; each class's signature is its. The methods that do it are
written once: `frozen=True` compiled five for each class in every process
that imported the engine (the events' frozen pair alone: 27M of their
module's 51M instructions). Its classes that are not frozen compare, show
and refuse to hash as `@dataclass` makes them, and keep their slots."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from durable import _frozen, events
from durable._core.cache import Ticket
from durable._core.cacheoption import Cache
from durable._core.context import Run, RunState
from durable._core.definition import Definition
from durable._core.plan import Call, Pause, Wait
from durable._core.retry import RetryPolicy
from durable._core.run import Options
from durable._core.spec import StepSpec
from durable._core.taskfactory import _Installed
from durable._fanout.progress import Progress
from durable._fingerprint.analysis import Analysis
from durable._fingerprint.fingerprint import Fingerprint
from durable._manage.cache import CacheInfo, EntryInfo
from durable._manage.cancel import Cancellation
from durable._manage.history import FailedAttempt, StepInfo, _Raw
from durable._manage.runs import RunInfo
from durable._storage import cachescan, cachestore, segments
from durable._storage.files import _Entry
from durable._storage.records import Attempt, RunRecord, StepRecord

EVENTS = [c for c in vars(events).values() if isinstance(c, type) and issubclass(c, events.Event)]
CLASSES = [*EVENTS, RetryPolicy, Options, Fingerprint, _Entry]
CLASSES += [RunInfo, StepInfo, FailedAttempt, EntryInfo, CacheInfo, Cancellation, Run, Progress]
PLAIN = [Definition, Call, Pause, Wait, Ticket, _Installed, Attempt, StepRecord, RunRecord]
PLAIN += [cachestore.Entry, cachescan.Unverified, segments.Snapshot, _Raw, RunState, Analysis]
SAMPLE = {"str": "s", "int": 3, "float": 2.5, "bool": True}


def sample(cls: type) -> Any:
    given = {
        f.name: SAMPLE.get(str(f.type).split(" |")[0], None)
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    return cls(**given)


def frozen_twin(cls: type, made: Any, frozen: bool = True) -> Any:
    """`made` as an instance of the class `@dataclass(frozen=True)` makes."""
    own = [(f.name, f.type, copy.copy(f)) for f in dataclasses.fields(cls)]
    twin = dataclasses.make_dataclass(cls.__qualname__, own, frozen=frozen)
    return twin(**{f.name: getattr(made, f.name) for f in dataclasses.fields(cls) if f.init})


def first(cls: type) -> str:
    return dataclasses.fields(cls)[0].name


def raised(action: Any, *args: Any) -> tuple[type[BaseException], str] | None:
    try:
        action(*args)
    except Exception as e:
        return type(e), str(e)
    return None


def test_no_class_has_the_methods_of_a_frozen_dataclass_compiled_for_it() -> None:
    assert len(EVENTS) == 16
    made = {"__setattr__", "__delattr__", "__eq__", "__hash__", "__repr__"}
    assert [c.__name__ for c in [*CLASSES, StepSpec, Cache, *PLAIN] if made & set(vars(c))] == []
    assert all(issubclass(c, _frozen.Frozen) for c in [*CLASSES, StepSpec, Cache])
    assert all(issubclass(c, _frozen.Compared) for c in PLAIN)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_each_refuses_compares_and_shows_as_a_frozen_dataclass_does(cls: type) -> None:
    made = sample(cls)
    twin = frozen_twin(cls, made)
    before = dataclasses.asdict(made)
    for name in [*(f.name for f in dataclasses.fields(cls)), "new_name", "__dict__"]:
        got = raised(setattr, made, name, "changed")
        assert got == raised(setattr, twin, name, "changed") is not None
        assert got[0] is dataclasses.FrozenInstanceError or name == "__dict__"
        assert raised(delattr, made, name) == raised(delattr, twin, name)
    assert dataclasses.asdict(made) == before  # nothing changed
    assert str(inspect.signature(cls)) == str(inspect.signature(type(twin)))
    assert repr(made) == repr(twin)
    assert raised(hash, made) == raised(hash, twin)
    if raised(hash, twin) is None:
        assert hash(made) == hash(twin)
    same, other = dataclasses.replace(made), dataclasses.replace(made, **{first(cls): "x"})
    assert made != twin and made == same and not made != same and made != other


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_each_is_replaced_copied_and_pickled_whole(cls: type) -> None:
    made, name = sample(cls), first(cls)
    assert dataclasses.is_dataclass(made)
    changed = dataclasses.replace(made, **{name: "other"})
    assert getattr(changed, name) == "other" and getattr(made, name) != "other"
    assert dataclasses.replace(changed, **{name: getattr(made, name)}) == made
    assert copy.copy(made) == made == copy.deepcopy(made)
    again = pickle.loads(pickle.dumps(made))
    assert again == made and repr(again) == repr(made)
    assert raised(setattr, again, name, "x") is not None


@pytest.mark.parametrize("cls", PLAIN, ids=lambda c: c.__name__)
def test_each_not_frozen_compares_and_shows_as_a_dataclass_does(cls: type) -> None:
    made = sample(cls)
    twin = frozen_twin(cls, made, frozen=False)
    assert repr(made) == repr(twin)
    assert raised(hash, made) == raised(hash, twin) is not None  # unhashable
    same, other = copy.copy(made), dataclasses.replace(made, **{first(cls): "x"})
    assert made != twin and made == same and not made != same and made != other
    setattr(same, first(cls), "x")  # not frozen
    assert same == other
    assert str(inspect.signature(cls)) == str(inspect.signature(type(twin)))
    assert hasattr(made, "__dict__") == (cls not in (StepRecord, Ticket))  # their slots kept


def test_an_assignment_from_another_classs_init_is_refused() -> None:
    """The fields are set by their class's own `__init__` only."""

    class Holder:
        def __init__(self, event: events.Event) -> None:
            event.run_id = "other"  # type: ignore[misc]

    event = sample(events.RunStarted)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'run_id'"):
        Holder(event)
    assert event.run_id == "s"


def test_a_cache_option_refuses_compares_and_shows_as_a_frozen_dataclass_does() -> None:
    """`durable.Cache` checks its fields as it is made (`replace` with a bad
    one is refused as a new one is), so it has a test of its own."""
    made = Cache(expire=60, ignore="verbose")
    twin = frozen_twin(Cache, made)
    for name in ["expire", "ignore", "key", "_limits", "new_name"]:
        assert raised(setattr, made, name, 1) == raised(setattr, twin, name, 1) is not None
        assert raised(delattr, made, name) == raised(delattr, twin, name)
    assert (made.seconds, made.ignored) == (60.0, frozenset({"verbose"}))  # set by __post_init__
    assert repr(made) == repr(twin) == "Cache(expire=60, ignore=('verbose',), key=None)"
    assert hash(made) == hash(twin) and str(inspect.signature(Cache)) == str(inspect.signature(type(twin)))
    assert made == dataclasses.replace(made) == copy.deepcopy(made) == pickle.loads(pickle.dumps(made))
    assert made != dataclasses.replace(made, expire=61) and made != twin
    assert pickle.loads(pickle.dumps(made)).seconds == 60.0
