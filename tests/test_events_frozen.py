"""The events are frozen dataclasses to whoever holds one: every assignment
or deletion raises `FrozenInstanceError` with the message a frozen
dataclass gives, `fields`, `replace`, `asdict`, `copy` and `pickle` work,
and each class's signature is a frozen dataclass's. The methods that do it
are written once (`_core/frozen.py`): `frozen=True` compiled a pair for
each of the 16 classes in every process that imported the engine (27M of
the module's 51M instructions)."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from durable import events

CLASSES = [
    c for c in vars(events).values() if isinstance(c, type) and issubclass(c, events.Event)
]
SAMPLE = {"str": "s", "int": 3, "float": 2.5, "bool": True}


def sample(cls: type[events.Event]) -> events.Event:
    given = {
        f.name: SAMPLE.get(str(f.type).split(" |")[0], None)
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    return cls(**given)


def frozen_twin(cls: type[events.Event]) -> Any:
    """The class as `@dataclass(frozen=True)` makes it."""
    own = [(f.name, f.type, f) for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(cls.__name__, own, frozen=True, eq=False, repr=False)


def raised(action: Any, *args: Any) -> tuple[type[BaseException], str] | None:
    try:
        action(*args)
    except Exception as e:
        return type(e), str(e)
    return None


def test_no_event_class_has_methods_of_its_own_compiled() -> None:
    assert len(CLASSES) == 16
    made = {"__setattr__", "__delattr__", "__eq__", "__hash__", "__repr__"}
    assert [c.__name__ for c in CLASSES if made & set(vars(c))] == []


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_event_refuses_what_a_frozen_dataclass_refuses(cls: type[events.Event]) -> None:
    event, twin = sample(cls), frozen_twin(cls)
    other = twin(**{f.name: getattr(event, f.name) for f in dataclasses.fields(cls)})
    before = dataclasses.asdict(event)
    for name in [*(f.name for f in dataclasses.fields(cls)), "new_name", "__dict__"]:
        got = raised(setattr, event, name, "changed")
        assert got == raised(setattr, other, name, "changed") is not None
        assert got[0] is dataclasses.FrozenInstanceError or name == "__dict__"
        assert raised(delattr, event, name) == raised(delattr, other, name)
    assert dataclasses.asdict(event) == before  # nothing changed
    assert str(inspect.signature(cls)) == str(inspect.signature(twin))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_event_is_replaced_copied_and_pickled_whole(cls: type[events.Event]) -> None:
    event = sample(cls)
    assert dataclasses.is_dataclass(event)
    changed = dataclasses.replace(event, run_id="other")
    assert changed.run_id == "other" and event.run_id == "s"
    assert dataclasses.replace(changed, run_id="s") == event
    assert copy.copy(event) == event == copy.deepcopy(event)
    again = pickle.loads(pickle.dumps(event))
    assert again == event and hash(again) == hash(event) and repr(again) == repr(event)
    assert raised(setattr, again, "run_id", "x") is not None
